#!/usr/bin/env bash
# The one device script: on a bare GPU machine (CUDA driver and toolkit, CMake, ninja, PyTorch; no
# network, no Debian development packages) it unpacks the build made beforehand with
# scripts/device/pack.sh (or packs ./build if that exists), runs every test binary (GPU tests
# included), gpt2-124m training in every mode and PyTorch's GPT-2 step for the training targets,
# a profiled run, the training again with --activation-storage emulated, a traced tiny step, the
# microbenchmark suites (--quick) and PyTorch's counterparts of their square bf16/fp16 GEMMs
# (scripts/torch_baseline.py), and writes into OUTDIR (at most
# 8 files):
#   check.log (everything printed, each test binary's verdict lines, the summary table last)
#   result-transformer.json  torch-gpt2.json  result-profile.json  result-emulated.json
#   trace-tiny.amp-bf16.json (a profiled tiny step: the GPU trace to keep as a test fixture)
#   result-quick.json  torch.json
# (the environment is in every result document and in check.log)
# ending with a short table. A failing step is reported and the next one still runs.
# Usage: scripts/device/check.sh OUTDIR
#   MPBENCH_CHECK_DEVICE=cpu   run the suites on the CPU (a dry run on a machine without a GPU)
#   MPBENCH_CHECK_FILTER=RE    only the cases matching RE (default: all of --quick)
#   MPBENCH_CHECK_TESTS="a b"  only these test binaries (default: all)
#   MPBENCH_CHECK_TRAINING="--config tiny --steps 4"  the transformer run's options
#                              (default: --config gpt2-124m --steps 12)
#   MPBENCH_CHECK_BUDGET_S=330 seconds for the whole script: each step is cut short (or skipped) so
#                              that the summary still prints inside it; give the device call a
#                              timeout a little above this (default 330: two tries fit in 15 minutes)
# The steps run in the order of what they are for: the tests, the training targets (mpbench and
# PyTorch), the profiler, then the microbenchmarks.
set -uo pipefail
out=${1:?usage: scripts/device/check.sh OUTDIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
repo=$(cd "$(dirname "$0")/../.." && pwd)
exec > >(tee -a "$out/check.log") 2>&1
device=${MPBENCH_CHECK_DEVICE:-cuda}
status=0
step() { echo; echo "== $(date -u +%H:%M:%S) $*"; }
fail() { echo "check: FAILED: $*"; status=1; }
budget=${MPBENCH_CHECK_BUDGET_S:-330}
[[ $budget =~ ^[0-9]+$ ]] || { echo "check: MPBENCH_CHECK_BUDGET_S must be a number of seconds, not '$budget'"; exit 2; }
deadline=$(($(date +%s) + budget))
summary_reserve=25
# Runs a command for at most CAP seconds, fewer if the budget's end (less the summary's reserve)
# comes first; skips it when under 5 seconds are left. At the limit it gets SIGINT, on which
# mpbench stops after the current sample or step and writes every case it finished, and SIGKILL
# 10 s later. Returns the command's exit code (124: cut short).
bounded() {
  local cap=$1 left
  shift
  left=$((deadline - summary_reserve - $(date +%s)))
  ((left < cap)) && cap=$left
  if ((cap < 5)); then
    echo "check: SKIPPED for lack of time (MPBENCH_CHECK_BUDGET_S=$budget): ${*##*/}"
    return 124
  fi
  timeout -s INT -k 10 "$cap" "$@"
}

step "binaries"
pack=$(mktemp -d)
devpack=$repo/.devpack
trap 'rm -rf "$pack" "$devpack_made"' EXIT
devpack_made=
if [[ -x $repo/build/cli/mpbench ]]; then  # a machine that builds: pack what it built, outside the tree
  devpack_made=$(mktemp -d)
  devpack=$devpack_made
  MPBENCH_DEVPACK_DIR=$devpack bash "$repo/scripts/device/pack.sh" "$repo/build" || fail "packing ./build"
fi
if [[ ! -f $devpack/mpbench-devpack.tar.xz ]]; then
  echo "check: no .devpack/mpbench-devpack.tar.xz and no ./build: run scripts/setup.sh and scripts/device/pack.sh"
  echo "check: on the machine with the Debian packages, then carry .devpack in the device call"
  exit 2
fi
tar -C "$pack" -xJf "$devpack/mpbench-devpack.tar.xz" || { echo "check: cannot unpack"; exit 2; }
pack_revision=$(cat "$devpack/REVISION" 2>/dev/null || echo unknown)
tree_revision=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)
echo "pack built at revision $pack_revision; tree at $tree_revision"
[[ $pack_revision == "$tree_revision" ]] || echo "check: WARNING: the pack was built from another revision than this tree"
ls "$pack/bin" "$pack/lib"

# CUDA's libraries: the toolkit's, or the ones PyTorch's wheels bring (cuBLASLt; cuDNN and CUPTI,
# which mpbench loads at run time for the fused attention and the profiler).
cuda_dirs=()
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/extras/CUPTI/lib64; do
  [[ -d $d ]] && cuda_dirs+=("$d")
done
while IFS= read -r d; do cuda_dirs+=("$d"); done < <(python3 - <<'PY' 2>/dev/null
import glob, os, site
for s in site.getsitepackages():
    for name in ("libcublasLt.so*", "libcudnn.so.9*", "libcupti.so*"):
        for p in sorted(set(glob.glob(os.path.join(s, "nvidia", "**", name), recursive=True))):
            print(os.path.dirname(p))
PY
)
original_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH="$pack/lib$(printf ':%s' "${cuda_dirs[@]}")${original_ld_path:+:$original_ld_path}"
export MPBENCH_BIN="$pack/bin/mpbench" MPBENCH_COMPARE_FIXTURES="$repo/tests/cli/fixtures"
if ldd "$MPBENCH_BIN" | grep "not found"; then fail "libraries missing for mpbench (above)"; fi

step "GPU"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv 2>&1 || echo "nvidia-smi: not available"

step "mpbench env"
"$MPBENCH_BIN" env || fail "mpbench env"

step "tests"
tests_file="$pack/tests.txt"  # its lines go into check.log: the 8 files are spoken for
: > "$tests_file"
# The binaries with GPU tests first, should the budget run out.
gpu_first=(test_workloads_cuda test_cuda_specific test_backends test_profiler test_amp test_microbench)
tests=${MPBENCH_CHECK_TESTS:-$(
  for t in "${gpu_first[@]}"; do [[ -x $pack/bin/$t ]] && echo "$t"; done
  ls "$pack/bin" | grep '^test_' | grep -vxF -f <(printf '%s\n' "${gpu_first[@]}")
)}
tests_end=$(($(date +%s) + budget * 2 / 5))  # the tests get two fifths of the budget at most
for t in $tests; do
  echo "-- $t" | tee -a "$tests_file"
  left=$((tests_end - $(date +%s)))
  ((left > 120)) && left=120
  (cd "$pack" && bounded "$left" "$pack/bin/$t" --gtest_color=no > "$pack/$t.log" 2>&1)
  code=$?
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$pack/$t.log" >> "$tests_file"
  # Why tests skipped: GoogleTest prints the reason on the line after "file:line: Skipped".
  awk '/: Skipped$/ { if ((getline reason) > 0) count[reason]++ }
       END { for (r in count) printf "skipped %d: %s\n", count[r], r }' "$pack/$t.log" >> "$tests_file"
  echo "exit $code" >> "$tests_file"
  ((code == 0)) || { fail "$t (exit $code$( ((code == 124)) && echo ': out of time'))"; tail -40 "$pack/$t.log"; }
done
cat "$tests_file"

training=${MPBENCH_CHECK_TRAINING:---config gpt2-124m --steps 12}
step "mpbench run --suite transformer $training --device $device"
# shellcheck disable=SC2086  # the options are meant to split
bounded 150 "$MPBENCH_BIN" run --suite transformer $training --device "$device" --out "$out/result-transformer.json" ||
  fail "mpbench run --suite transformer (exit $?)"
if [[ $device == cuda ]]; then
  step "PyTorch eager GPT-2 with bf16 autocast (same machine, same call)"
  LD_LIBRARY_PATH=$original_ld_path bounded 90 python3 "$repo/scripts/torch_baseline.py" --suite transformer \
    --precision amp-bf16 --cases-from "$out/result-transformer.json" --out "$out/torch-gpt2.json" ||
    echo "check: PyTorch GPT-2 baseline not measured"
fi
# Profiling apart, so that a CUPTI failure cannot cost the training results above.
step "mpbench run --suite transformer $training --precision fp32,amp-bf16,bf16 --profile --device $device"
# shellcheck disable=SC2086
bounded 90 "$MPBENCH_BIN" run --suite transformer $training --precision fp32,amp-bf16,bf16 --profile --device "$device" \
  --out "$out/result-profile.json" || fail "mpbench run --suite transformer --profile (exit $?)"
# The emulated activation storage in a process of its own: the counterfactual for half storage,
# and the training results should the half-storage kernels fail.
step "mpbench run --suite transformer $training --precision fp32,amp-bf16,bf16 --activation-storage emulated"
# shellcheck disable=SC2086
bounded 90 "$MPBENCH_BIN" run --suite transformer $training --precision fp32,amp-bf16,bf16 \
  --activation-storage emulated --device "$device" --out "$out/result-emulated.json" ||
  fail "mpbench run --suite transformer --activation-storage emulated (exit $?)"

# A small real trace for the profiler's test fixtures; on a GPU also counted (--counters).
step "mpbench run --suite transformer --config tiny --precision amp-bf16 --trace (fixture)"
counters=(); [[ $device == cuda ]] && counters=(--counters)
bounded 60 "$MPBENCH_BIN" run --suite transformer --config tiny --steps 3 --warmup-steps 1 --precision amp-bf16 \
  "${counters[@]}" --trace "$out/trace-tiny.json" --device "$device" --out "$pack/result-tiny.json" ||
  fail "mpbench run --trace (exit $?)"
python3 - "$pack/result-tiny.json" <<'PY' || true
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    p = c["details"].get("profile", {})
    print("tiny trace:", p.get("status"), "nvtx ranges/step", p.get("nvtx_ranges_per_step"), "counters", p.get("counters"))
PY

step "mpbench run --suite gemm,bandwidth,cast --quick --device $device"
bounded 150 "$MPBENCH_BIN" run --suite gemm,bandwidth,cast --quick --device "$device" \
  ${MPBENCH_CHECK_FILTER:+--filter "$MPBENCH_CHECK_FILTER"} --out "$out/result-quick.json" || fail "mpbench run (exit $?)"
# Cut short (SIGINT), the script still writes the cases it finished.
step "PyTorch's GEMMs: the quick run's square bf16 and fp16 cases (same machine, same call)"
LD_LIBRARY_PATH=$original_ld_path bounded 60 python3 "$repo/scripts/torch_baseline.py" --suite gemm --precision bf16,fp16 \
  --filter '^gemm/square_' --timeout 1 --cases-from "$out/result-quick.json" --out "$out/torch.json" ||
  echo "check: PyTorch baseline not measured"

step "summary"
python3 "$repo/scripts/device/summarize.py" --result "$out/result-quick.json" --torch "$out/torch.json" \
  --transformer "$out/result-transformer.json" --torch-gpt2 "$out/torch-gpt2.json" --profile "$out/result-profile.json" \
  --emulated "$out/result-emulated.json" --tests "$tests_file"
exit $status
