#!/usr/bin/env bash
# Sets up the two Python environments of `make bench`, idempotently, like
# setup_env.sh does for the main one (run that first: `make setup`):
#
#   .venv-bench       the main environment (.venv: torch, torchvision, numpy,
#                     tern) plus bench/requirements-peers.txt (ONNX Runtime,
#                     onnx/onnxscript for torch.onnx, matplotlib). A venv of
#                     its own whose .pth file adds .venv's site-packages after
#                     its own, so PyTorch is not installed a second time and
#                     .venv is never written to.
#   .venv-executorch  bench/requirements-executorch.txt alone: torch 2.13.0
#                     (the local CPU build) + executorch 1.5.1.
#   .venv-llama       with --llm only (make bench-llm): bench/requirements-llm.txt
#                     alone, llama-cpp-python (which compiles llama.cpp at
#                     install, several minutes on two cores).
#
# Each lives in the cache folder keyed by a hash of the pinned files it is made
# from, and is linked from the repository root; a fresh clone on the same
# machine reuses them. Package registries are the only network used.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

python=${TERN_PYTHON:-python3}
cache=${TERN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tern}
# new_venv DIR: an empty venv with the same pip as the main environment.
new_venv() {
  rm -rf "$1"
  mkdir -p "$cache"
  "$python" -m venv "$1"
  "$1/bin/python" -m pip install -q --upgrade pip==23.2.1 >/dev/null 2>&1 || true
}

# link NAME DIR: NAME at the repository root points to DIR.
link() {
  if [ "$(readlink "$1" 2>/dev/null)" != "$2" ]; then
    rm -rf "$1"
    ln -s "$2" "$1"
  fi
}

# own_venv NAME REQUIREMENTS WHAT: $cache/bench-NAME-<hash of REQUIREMENTS>, a
# venv of its own made once from REQUIREMENTS; prints its path.
own_venv() {
  local dir="$cache/bench-$1-$(sha256sum "$2" | cut -c1-16)"
  if [ ! -f "$dir/.complete" ]; then
    echo "setup_bench_env: creating $dir ($3)" >&2
    new_venv "$dir" >&2
    "$dir/bin/python" -m pip install --progress-bar off -r "$2" >&2
    touch "$dir/.complete"
  fi
  echo "$dir"
}

if [ "${1:-}" = "--llm" ]; then
  llama=$(own_venv llama bench/requirements-llm.txt "llama-cpp-python: compiles llama.cpp, first time only")
  link .venv-llama "$llama"
  echo "setup_bench_env: .venv-llama -> $llama"
  exit 0
fi

main_venv=$(readlink -f .venv) || { echo "setup_bench_env: no .venv; run make setup first" >&2; exit 1; }
[ -x "$main_venv/bin/python" ] || { echo "setup_bench_env: $main_venv is not a venv; run make setup" >&2; exit 1; }

hash=$(cat requirements.txt bench/requirements-peers.txt | sha256sum | cut -c1-16)
peers="$cache/bench-peers-$hash"
if [ ! -f "$peers/.complete" ]; then
  echo "setup_bench_env: creating $peers (ONNX Runtime, onnx, matplotlib over .venv)"
  new_venv "$peers"
  site=$("$peers/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  main_site=$("$main_venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  # addsitedir also runs the main environment's own .pth files.
  echo "import site; site.addsitedir('$main_site')" > "$site/_tern_main_env.pth"
  "$peers/bin/python" -m pip install --progress-bar off -r bench/requirements-peers.txt
  touch "$peers/.complete"
fi
link .venv-bench "$peers"

et=$(own_venv executorch bench/requirements-executorch.txt "torch 2.13.0 + executorch 1.5.1; first time only")
link .venv-executorch "$et"
echo "setup_bench_env: .venv-bench -> $peers, .venv-executorch -> $et"
