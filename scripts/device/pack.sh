#!/usr/bin/env bash
# Packs a build made here (with CUDA) for the GPU machine, which has the CUDA driver and toolkit
# but none of the Debian libraries mpbench links: the binaries plus the shared libraries they need
# that are neither glibc, libstdc++ nor CUDA's, into .devpack/mpbench-devpack.tar.xz (or into
# $MPBENCH_DEVPACK_DIR: the device check packs a local build outside the source tree).
# Usage: scripts/device/pack.sh [BUILD_DIR]   (then carry .devpack in the device call)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
[[ -x $build/cli/mpbench ]] || { echo "pack: $build/cli/mpbench is missing: run scripts/setup.sh first" >&2; exit 1; }
grep -q "MPBENCH_HAVE_CUDA:INTERNAL=ON\|CMAKE_CUDA_COMPILER:" "$build/CMakeCache.txt" ||
  echo "pack: warning: $build may be a build without CUDA" >&2

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
binaries=("$build/cli/mpbench")
while IFS= read -r t; do binaries+=("$t"); done < <(find "$build/tests" -maxdepth 3 -type f -name 'test_*' -perm -u+x)
cp "${binaries[@]}" "$stage/bin/"

# Shared libraries to bring: everything ldd resolves except the C library family, the C++ runtime
# and CUDA's own libraries, which the GPU machine has in versions that match its driver.
skip='/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas[^/]*|libnvidia[^/]*)\.so'
for b in "${binaries[@]}"; do
  ldd "$b" | awk '/=> \//{print $3}'
done | sort -u | grep -Ev "$skip" | while IFS= read -r lib; do
  cp -L "$lib" "$stage/lib/"
done

dest=${MPBENCH_DEVPACK_DIR:-.devpack}
mkdir -p "$dest"
tar -C "$stage" -cJf "$dest/mpbench-devpack.tar.xz" bin lib
git rev-parse HEAD > "$dest/REVISION"
echo "pack: $dest/mpbench-devpack.tar.xz ($(du -h "$dest/mpbench-devpack.tar.xz" | cut -f1)): $(ls "$stage/bin" | wc -l) binaries, libraries: $(ls "$stage/lib" | tr '\n' ' ')"
