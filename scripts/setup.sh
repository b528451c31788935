#!/usr/bin/env bash
# Installs what mpbench needs and builds it into build/. Safe to run again: it installs only what
# is missing and rebuilds only what changed.
#   Debian packages: the C++ toolchain and libraries (apt-get as root, else prints the command).
#   PyPI: scripts/requirements.txt into .venv/ (report, numerics checks, schema validation).
#   oneDNN 3 for the CPU backend: Intel's GNU OpenMP build from PyPI (onednn-cpu-gomp and its
#   headers, onednn-devel-cpu-gomp) into .deps/onednn-<version>/; Debian's libdnnl-dev (oneDNN 2.6)
#   stays installed as the fallback the build takes, with a warning, when .deps has none.
#   CUDA: used when nvcc is found (PATH or /usr/local/cuda/bin); the build works without it. With
#   CUDA, the cuDNN frontend's headers (header-only; PyPI's nvidia-cudnn-frontend wheel carries
#   them) go into .deps/ for the fused attention.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(cmake ninja-build g++ git python3-venv googletest libgtest-dev libbenchmark-dev
                 nlohmann-json3-dev libcli11-dev libfmt-dev libdnnl-dev libopenmpi-dev openmpi-bin
                 libsqlite3-dev libpq-dev postgresql)

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
if ! .venv/bin/python -c "import numpy, ml_dtypes, matplotlib, jsonschema, pytest, yaml" 2>/dev/null; then
  echo "setup: installing Python packages from scripts/requirements.txt into .venv"
  .venv/bin/python -m pip install -q --disable-pip-version-check -r scripts/requirements.txt
fi

# oneDNN 3.2.0 is PyPI's 2023.2.0 "cpu-gomp" build: the newest oneDNN there on GNU OpenMP (libgomp,
# as the project's OpenMP::OpenMP_CXX); PyPI's later onednn (2024.0 on, oneDNN 3.3 to 3.13) is the
# SYCL build on TBB, needing Intel's SYCL, OpenCL and compiler runtimes. Keep the version in step
# with MPBENCH_ONEDNN_DIR in CMakeLists.txt.
ONEDNN_VERSION=3.2.0
ONEDNN_PYPI_VERSION=2023.2.0
onednn=.deps/onednn-$ONEDNN_VERSION
fetched_onednn=0
if [[ ! -f $onednn/lib/cmake/dnnl/dnnl-config.cmake || ! -f $onednn/lib/libdnnl.so.3 ]]; then
  echo "setup: fetching oneDNN $ONEDNN_VERSION (PyPI onednn-cpu-gomp and onednn-devel-cpu-gomp $ONEDNN_PYPI_VERSION) into $onednn"
  wheels=$(mktemp -d)
  if .venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
       --python-version 3.11 --platform manylinux1_x86_64 --dest "$wheels" \
       "onednn-cpu-gomp==$ONEDNN_PYPI_VERSION" "onednn-devel-cpu-gomp==$ONEDNN_PYPI_VERSION"; then
    rm -rf "$onednn.partial"
    .venv/bin/python - "$wheels" "$onednn.partial" <<'PY'
import glob, os, sys, zipfile
wheels, target = sys.argv[1], sys.argv[2]
for wheel in glob.glob(os.path.join(wheels, "*.whl")):
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            # <package>.data/data/{include,lib,share}/...: the library once (a wheel has no links: it
            # carries libdnnl.so, .so.3 and .so.3.N as three copies), the headers, the CMake config.
            parts = name.split("/", 2)
            if len(parts) < 3 or not parts[0].endswith(".data") or parts[1] != "data": continue
            path = parts[2]
            if path.startswith("lib/libdnnl.so") and path.count(".") != 3: continue
            if not path.startswith(("include/", "lib/", "share/doc/")): continue
            out = os.path.join(target, path)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst: dst.write(src.read())
lib = os.path.join(target, "lib")
full = [n for n in os.listdir(lib) if n.startswith("libdnnl.so.")]
if len(full) != 1: sys.exit(f"setup: expected one libdnnl.so.3.N in the oneDNN wheel, found {full}")
os.chmod(os.path.join(lib, full[0]), 0o755)
os.symlink(full[0], os.path.join(lib, "libdnnl.so.3"))
os.symlink("libdnnl.so.3", os.path.join(lib, "libdnnl.so"))
with open(os.path.join(target, "SOURCE"), "w") as f:
    f.write(" + ".join(sorted(os.path.basename(w).split("-py")[0].replace("_", "-").replace("-2", " 2", 1)
                              for w in glob.glob(os.path.join(wheels, "*.whl")))) + " (PyPI)\n")
PY
    rm -rf "$onednn" && mv "$onednn.partial" "$onednn"
    fetched_onednn=1
  else
    echo "setup: warning: could not fetch oneDNN $ONEDNN_VERSION from PyPI: building with Debian's libdnnl-dev (oneDNN 2.6) instead (run setup again to retry)"
  fi
  rm -rf "$wheels"
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
if [[ ! -f build/build.ninja || $fetched_frontend == 1 || $fetched_onednn == 1 ]]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build build -j "${MPBENCH_BUILD_JOBS:-$(nproc)}"
