#!/usr/bin/env bash
# Installs what mpbench needs and builds it into build/. Safe to run again: it installs only what
# is missing and rebuilds only what changed.
#   Debian packages: the C++ toolchain and libraries (apt-get as root, else prints the command).
#   PyPI: scripts/requirements.txt into .venv/ (report, numerics checks, schema validation).
#   CUDA: used when nvcc is found (PATH or /usr/local/cuda/bin); the build works without it. With
#   CUDA, the cuDNN frontend's headers (header-only; PyPI's nvidia-cudnn-frontend wheel carries
#   them) go into .deps/ for the fused attention.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(cmake ninja-build g++ git python3-venv googletest libgtest-dev libbenchmark-dev
                 nlohmann-json3-dev libcli11-dev libfmt-dev libdnnl-dev libopenmpi-dev openmpi-bin
                 libsqlite3-dev)

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: not root; run this, then run setup again:"
    echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
    exit 1
  fi
fi

if [[ ! -x .venv/bin/python ]]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import numpy, ml_dtypes, matplotlib, jsonschema, pytest" 2>/dev/null; then
  echo "setup: installing Python packages from scripts/requirements.txt into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi

if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
CUDNN_FRONTEND_VERSION=1.32.0
frontend=.deps/cudnn-frontend-$CUDNN_FRONTEND_VERSION
fetched_frontend=0
if command -v nvcc >/dev/null && [[ ! -f $frontend/include/cudnn_frontend.h ]]; then
  echo "setup: fetching the cuDNN frontend $CUDNN_FRONTEND_VERSION headers (PyPI nvidia-cudnn-frontend) into $frontend"
  wheels=$(mktemp -d)
  # Any platform's wheel holds the same headers: ask for one fixed wheel.
  if .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
       --python-version 3.11 --platform manylinux_2_28_x86_64 --dest "$wheels" \
       "nvidia-cudnn-frontend==$CUDNN_FRONTEND_VERSION"; then
    .venv/bin/python - "$wheels" "$frontend" <<'PY'
import glob, os, sys, zipfile
wheel, target = glob.glob(os.path.join(sys.argv[1], "*.whl"))[0], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    z.extractall(target, [n for n in z.namelist() if n.startswith("include/")])
PY
    fetched_frontend=1
  else
    echo "setup: warning: could not fetch the cuDNN frontend headers: building without fused attention (run setup again to retry)"
  fi
  rm -rf "$wheels"
fi
if [[ ! -f build/build.ninja || $fetched_frontend == 1 ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "${MPBENCH_BUILD_JOBS:-$(nproc)}"
