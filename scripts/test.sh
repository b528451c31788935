#!/usr/bin/env bash
# Sets up, builds, and runs every test: GoogleTest through CTest, then pytest. GPU tests skip
# with their reason when no GPU is usable.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests write nothing into the source tree: no __pycache__ beside the tests and scripts they import
# (tests/python/test_device_script.py checks the whole tree).
export PYTHONDONTWRITEBYTECODE=1
bash scripts/setup.sh
(cd build && ctest --output-on-failure -j "${MPBENCH_TEST_JOBS:-2}")
MPBENCH_BIN="$PWD/build/cli/mpbench" .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
