#!/usr/bin/env bash
# The main job: sets up, builds, then runs mpbench with the given arguments
# (default: every suite, quick, on the GPU if there is one, else the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if (($# == 0)); then
  set -- run --suite all --quick --out mpbench-result.json
fi
exec build/cli/mpbench "$@"
