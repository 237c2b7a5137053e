#!/usr/bin/env bash
# `make fuzz SECONDS=N`: builds the fuzz harnesses (tests/fuzz) with clang,
# libFuzzer, ASan and UBSan in build-fuzz/, runs each for N seconds, JOBS at a
# time, and prints executions, coverage and crashes per harness.
#
#   scripts/fuzz.sh SECONDS [HARNESS...]      (default: every harness)
#   JOBS=2 scripts/fuzz.sh 600                a longer campaign
#   scripts/fuzz.sh 60 fuzz_execute@scalar    one instance on the scalar ISA
#
# The harnesses that reach the cpu backend (fuzz_method, fuzz_execute,
# fuzz_cpu_payload, fuzz_module) also run as a second instance,
# <harness>@scalar, with TERN_CPU_ISA=scalar in its environment: the backend
# then runs its portable C++ float and int8 kernels instead of the machine's
# best ISA (backends/cpu/isa.cpp), code the other instance never reaches.
# An instance is a harness name, or a harness name, @ and an ISA
# (TERN_CPU_ISA's values); it has its own corpus, artifacts and log.
#
# Each instance keeps its corpus in build-fuzz/corpus/<instance>/ (seeded from
# tests/data/v1*/*.tern and tests/fuzz/seeds/, and an @isa instance from its
# harness's corpus too; fuzz_npy's from tests/fuzz/seeds_npy/*.npy), so a later run goes on from
# there; `make clean` or deleting the folder starts over. Crash, leak, timeout
# and out-of-memory reproducers go to build-fuzz/artifacts/<harness>/ (the
# previous run's to <harness>.prev/); the exit status is 1 if any harness left one (turn each into a file in
# tests/data/malformed/ with its MANIFEST.txt entry: tests/data/malformed/README.md).
# Per-harness logs: build-fuzz/logs/<harness>.log; the table also goes to
# build-fuzz/fuzz-summary.txt.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

seconds=${1:?usage: scripts/fuzz.sh SECONDS [HARNESS...]}
shift
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(fuzz_program fuzz_method fuzz_execute fuzz_cpu_payload fuzz_module fuzz_npy
                                         fuzz_method@scalar fuzz_execute@scalar fuzz_cpu_payload@scalar
                                         fuzz_module@scalar)
# the executables to build: each instance's harness, once
targets=()
for h in "${harnesses[@]}"; do
  [[ " ${targets[*]} " == *" ${h%@*} "* ]] || targets+=("${h%@*}")
done
jobs=${JOBS:-$(nproc)}
build=build-fuzz
venv=$root/.venv/bin

if ! command -v clang++-14 > /dev/null; then
  echo "fuzz: clang++-14 not found: run \`make setup\` (it installs clang-14 and libclang-rt-14-dev)" >&2
  exit 1
fi
mkdir -p $build
if [ ! -f $build/build.ninja ]; then
  "$venv/cmake" -S . -B $build -G Ninja -DCMAKE_MAKE_PROGRAM="$venv/ninja" \
    -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 -DPython3_EXECUTABLE="$venv/python" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTERN_FUZZ=ON -DTERN_BUILD_TESTS=OFF -DTERN_BUILD_TOOLS=OFF \
    -DTERN_BUILD_PYTHON=OFF -DTERN_INSTALL=OFF -DTERN_BUILD_BENCH=OFF > $build/configure.log \
    || { cat $build/configure.log; exit 1; }
fi
"$venv/cmake" --build $build -j "$jobs" --target "${targets[@]}"

seeds=(tests/data/v1*/*.tern tests/fuzz/seeds)
max_len=0
for f in tests/data/v1*/*.tern tests/fuzz/seeds/*.tern; do
  n=$(stat -c %s "$f")
  [ "$n" -gt "$max_len" ] && max_len=$n
done
max_len=$((max_len + 4096))  # room for the tail: the input tensors (fuzz_util.h)
npy_max_len=4096  # fuzz_npy takes an .npy file: seeds of about 150 bytes, room for long headers and data

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# One instance: harness h, or h@isa with TERN_CPU_ISA=isa.
run_one() {
  local h=$1 exe=${1%@*} isa=
  [[ $h == *@* ]] && isa=${h#*@}
  # The last run's reproducers move to artifacts/<instance>.prev/.
  rm -rf $build/artifacts/$h.prev
  [ -d $build/artifacts/$h ] && mv $build/artifacts/$h $build/artifacts/$h.prev
  mkdir -p $build/corpus/$h $build/artifacts/$h $build/logs
  # Seeds are copied into the corpus once (an @isa instance's with what its
  # harness found so far); libFuzzer then reads one folder.
  local len=$max_len
  if [ "$exe" = fuzz_npy ]; then
    len=$npy_max_len
    [ -n "$(ls -A $build/corpus/$h)" ] || cp tests/fuzz/seeds_npy/*.npy $build/corpus/$h/
  elif [ -z "$(ls -A $build/corpus/$h)" ]; then
    cp tests/data/v1*/*.tern tests/fuzz/seeds/*.tern $build/corpus/$h/
    if [ -n "$isa" ] && [ -d $build/corpus/$exe ]; then
      find $build/corpus/$exe -maxdepth 1 -type f -exec cp -t $build/corpus/$h/ {} +
    fi
  fi
  local env=()  # a plain instance keeps the caller's TERN_CPU_ISA, if any
  [ -n "$isa" ] && env=(TERN_CPU_ISA="$isa")
  env "${env[@]}" "$build/tests/fuzz/$exe" $build/corpus/$h -max_total_time="$seconds" -timeout=20 \
    -rss_limit_mb=4096 -max_len=$len -print_final_stats=1 -artifact_prefix=$build/artifacts/$h/ \
    > $build/logs/$h.log 2>&1 || true
}

echo "fuzz: ${#harnesses[@]} harness instances, ${seconds} s each, $jobs at a time (logs: $build/logs/)"
running=0
for h in "${harnesses[@]}"; do
  run_one "$h" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait

status=0
{
  printf '%-24s %12s %9s %8s %8s %8s %8s\n' harness executions exec/s cov ft corpus crashes
  for h in "${harnesses[@]}"; do
    log=$build/logs/$h.log
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' | tail -1 || true)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{print $2}' | tail -1 || true)
    # the last status line: "#12345 ... cov: 678 ft: 901 corp: 23/45Kb ..."
    last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<< "$last")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<< "$last")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<< "$last")
    crashes=$(find $build/artifacts/$h -type f | wc -l)
    [ "$crashes" -eq 0 ] && [ -n "$execs" ] || status=1
    printf '%-24s %12s %9s %8s %8s %8s %8s\n' "$h" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes"
  done
} > $build/fuzz-summary.txt  # not a pipe: status must be set in this shell, not a subshell
cat $build/fuzz-summary.txt
if [ $status -ne 0 ]; then
  echo "fuzz: a harness crashed, leaked, hung or did not run; reproducers:" >&2
  find $build/artifacts -type f >&2
  for h in "${harnesses[@]}"; do
    grep -m1 -A12 -E '^==[0-9]+==ERROR|runtime error|ERROR: libFuzzer' $build/logs/$h.log >&2 || true
  done
fi
exit $status
