#!/usr/bin/env bash
# Builds the CPU code and its tests with AddressSanitizer and UndefinedBehaviorSanitizer into
# build-sanitize/ and runs every test there: out-of-bounds reads, use after free, leaks, signed
# overflow, misaligned or null accesses in any reader, op or loop fail the run. No CUDA: the
# sanitizers do not instrument GPU code, and the GPU tests would only skip. Run after
# scripts/setup.sh (it uses the same Debian packages); CI runs it after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-sanitize
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
launcher=()
# A second build of every file: ccache, where installed, makes the next one mostly cache hits.
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [[ ! -f $build/build.ninja ]]; then
  # -O1 and line tables only: the sanitizers check the same and report file and line, and the
  # build that CI compiles cold on 2 cores has less to optimise and to write.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DMPBENCH_WITH_CUDA=OFF -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    "${launcher[@]}"
fi
cmake --build "$build" -j "${MPBENCH_BUILD_JOBS:-$(nproc)}"
# OpenMP's runtime keeps its thread pools to the end: not leaks of mpbench's.
export LSAN_OPTIONS="suppressions=$PWD/scripts/sanitize.supp:print_suppressions=0"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# The tests that start Open MPI's runtime run apart: its plugins' leaks show under their names only
# with the plugins kept loaded and the slow unwinder (too slow for every test), so the
# suppressions can match them.
mpi_tests='^(CollectiveUnderMpirun|InterconnectUnderMpirun|MpiSum16|MpiEnvironment)\.'
(cd "$build" && ctest --output-on-failure -j "${MPBENCH_TEST_JOBS:-2}" -E "$mpi_tests")
(cd "$build" && OMPI_MCA_mca_base_component_disable_dlclose=1 LSAN_OPTIONS="$LSAN_OPTIONS:fast_unwind_on_malloc=0" \
  ctest --output-on-failure -j "${MPBENCH_TEST_JOBS:-2}" -R "$mpi_tests")
