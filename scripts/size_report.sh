#!/usr/bin/env bash
# `make size`: how big Tern's binaries are, stripped, in KB (1024 bytes).
#
# Builds, each in its own folder, tern-run and tools/size_probe.cpp:
#   build-size-full     -Os (MinSizeRel): tern-run with every portable kernel;
#                       tern-size-probe, the core runtime alone (no kernels, no
#                       extension/), and the same program with an empty main
#   build-size-select   -Os: tern-run with only the kernels mobilenet_v2 uses
#                       (exported to a temporary file, listed with
#                       `tern ops --for ... --format def`, -DTERN_SELECT_OPS)
#   build-size-release  -O3 (Release, as `make build`): tern-run, for comparison
# then checks that the selective tern-run runs mobilenet_v2, strips copies of
# the binaries and prints a table. Needs only `make setup`: the Python package
# is used from python/ (with its flatc-generated schema classes) in a
# temporary folder, not installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bin=$root/.venv/bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# build DIR BUILD_TYPE "TARGETS" [CMAKE_ARGS...]: configure and build quietly;
# on failure show the log.
build() {
  local dir=$1 type=$2 targets=$3
  shift 3
  echo "size: building $targets ($type) in $dir" >&2
  mkdir -p "$dir"
  "$bin/cmake" -S . -B "$dir" -G Ninja -DCMAKE_MAKE_PROGRAM="$bin/ninja" -DPython3_EXECUTABLE="$bin/python" \
    -DCMAKE_BUILD_TYPE="$type" -DTERN_BUILD_TESTS=OFF -DTERN_BUILD_TOOLS=ON -DTERN_BUILD_PYTHON=OFF "$@" \
    > "$dir/configure.log" 2>&1 || { cat "$dir/configure.log" >&2; return 1; }
  # shellcheck disable=SC2086 # TARGETS is a list
  "$bin/cmake" --build "$dir" -j "$(nproc)" --target $targets > "$dir/build.log" 2>&1 \
    || { tail -40 "$dir/build.log" >&2; return 1; }
}

# python_site: python/tern plus the schema classes (tern.fb) flatc generates,
# as the installed package would have them, in $tmp/site.
python_site() {
  mkdir -p "$tmp/site" "$tmp/gen"
  cp -r python/tern "$tmp/site/"
  "$bin/flatc" --python -o "$tmp/gen" schema/tern.fbs
  cp -r "$tmp/gen/tern/fb" "$tmp/site/tern/"
}

# export_mobilenet FILE: torchvision's mobilenet_v2 (random weights) as a .tern file.
export_mobilenet() {
  echo "size: exporting mobilenet_v2" >&2
  PYTHONPATH="$tmp/site" "$bin/python" - "$1" kernels/portable/ops.def <<'EOF'
import sys
from pathlib import Path

import torch
import torchvision

import tern
from tern.ops import parse_ops_def

torch.manual_seed(0)
model = torchvision.models.mobilenet_v2(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
tern.export(model, (x,), supported_ops=parse_ops_def(Path(sys.argv[2])), partitioners=()).save(sys.argv[1])
EOF
}

# kb FILE: the size of a stripped copy of FILE in KB, one decimal.
kb() {
  strip -o "$tmp/stripped" "$1"
  awk -v b="$(stat -c %s "$tmp/stripped")" 'BEGIN { printf "%.1f", b / 1024 }'
}

row() { printf '%-58s %10s\n' "$1" "$2"; }

main() {
  local model=$tmp/mobilenet_v2.tern ops=build-size-select/mobilenet_v2.ops
  python_site
  export_mobilenet "$model"
  mkdir -p build-size-select
  PYTHONPATH="$tmp/site" "$bin/python" -m tern.cli ops --for "$model" --format def \
    --ops-def kernels/portable/ops.def > "$ops"
  local n_sel n_all
  n_sel=$(grep -cv '^\s*\(#\|$\)' "$ops")
  n_all=$(grep -c '^TERN_OP(' kernels/portable/ops.def)

  build build-size-full MinSizeRel "tern-run tern-size-probe tern-size-probe-empty" -DTERN_SELECT_OPS=
  build build-size-select MinSizeRel tern-run -DTERN_SELECT_OPS="$root/$ops"
  build build-size-release Release tern-run -DTERN_SELECT_OPS=
  # What a mobile toolchain's default link gives (Android's NDK and Xcode drop
  # unreferenced functions): each function in its own section, unused ones
  # discarded at link time.
  build build-size-gc MinSizeRel "tern-size-probe tern-size-probe-empty" -DTERN_SELECT_OPS= \
    -DCMAKE_CXX_FLAGS="-ffunction-sections -fdata-sections" -DCMAKE_EXE_LINKER_FLAGS="-Wl,--gc-sections"
  build-size-select/tern-run "$model" --iterations 1 --warmup 0 > "$tmp/run.log" 2>&1 \
    || { cat "$tmp/run.log" >&2; echo "size: the selective tern-run failed on mobilenet_v2" >&2; return 1; }

  local probe empty gc_probe gc_empty
  probe=$(kb build-size-full/tern-size-probe)
  empty=$(kb build-size-full/tern-size-probe-empty)
  gc_probe=$(kb build-size-gc/tern-size-probe)
  gc_empty=$(kb build-size-gc/tern-size-probe-empty)
  echo
  echo "Stripped sizes, $(uname -m), $(${CXX:-c++} --version | head -1); KB = 1024 bytes"
  row "binary (build)" "KB"
  row "tern-run, all $n_all ops (-Os)" "$(kb build-size-full/tern-run)"
  row "tern-run, the $n_sel ops of mobilenet_v2 (-Os, TERN_SELECT_OPS)" "$(kb build-size-select/tern-run)"
  row "tern-size-probe: core runtime alone (-Os)" "$probe"
  row "  same program, empty main (-Os)" "$empty"
  row "  the core's own contribution (difference)" "$(awk -v a="$probe" -v b="$empty" 'BEGIN { printf "%.1f", a - b }')"
  row "  the core's own contribution (-Os, --gc-sections)" \
    "$(awk -v a="$gc_probe" -v b="$gc_empty" 'BEGIN { printf "%.1f", a - b }')"
  row "tern-run, all $n_all ops (-O3, Release as make build)" "$(kb build-size-release/tern-run)"
  echo "(selection: $ops; the selective tern-run ran mobilenet_v2)"
}

main
