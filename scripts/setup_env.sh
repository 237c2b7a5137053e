#!/usr/bin/env bash
# Sets up everything Tern needs on a fresh Debian 12 machine, idempotently:
# system packages (apt-get, only when missing), and a Python virtual environment
# with the pinned requirements.txt. The environment lives in a cache folder
# keyed by the hash of requirements.txt so that a fresh clone on the same
# machine reuses it; .venv at the repository root links to it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# g++-aarch64-linux-gnu and qemu-user (aarch64-linux-gnu-g++, qemu-aarch64):
# `make test-aarch64` cross-compiles the architecture-dependent tests and runs them under qemu.
# libpng-dev, libjpeg62-turbo-dev: the scene app decodes PNG and JPEG (examples/scene).
# espeak-ng, sox: the vad app's test audio, speech mixed with noise (examples/vad/make_audio.py).
apt_pkgs=(g++ make libgtest-dev ccache g++-aarch64-linux-gnu qemu-user clang-14 libclang-rt-14-dev
          libpng-dev libjpeg62-turbo-dev espeak-ng sox)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing system packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to apt-get install ${missing[*]}" >&2; exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${TERN_PYTHON:-python3}
hash=$(sha256sum requirements.txt | cut -c1-16)
cache=${TERN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tern}
venv="$cache/venv-$hash"
if [ ! -f "$venv/.complete" ]; then
  echo "setup: creating Python environment $venv (first time only; PyTorch is large)"
  rm -rf "$venv"
  mkdir -p "$cache"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip==23.2.1 >/dev/null 2>&1 || true
  "$venv/bin/python" -m pip install --progress-bar off -r requirements.txt
  touch "$venv/.complete"
fi
if [ "$(readlink .venv 2>/dev/null)" != "$venv" ]; then
  rm -rf .venv
  ln -s "$venv" .venv
fi
echo "setup: environment ready at .venv -> $venv"
