#!/usr/bin/env python3
"""How far `mpbench compare` can be trusted on this machine: false alarms and detected slowdowns.

    python3 scripts/bench_compare.py [--mpbench build/cli/mpbench] [--runs 3] [--out DIR]

Runs the quick gemm, bandwidth and cast suites on the CPU (filtered to small sizes, with four small
GEMM shapes added, so that the whole script takes a few minutes; one thread unless --threads says
otherwise) RUNS times on each of four sides, interleaved so that the machine's load drifts over all
of them alike:

  base       the default run;
  identical  the same command again;
  isa        --cpu-isa sse41, which caps oneDNN below AVX2: the fp32 GEMMs, tracked by their time,
             run several times slower; the bandwidth and cast suites do not use oneDNN. The
             low-precision GEMMs are tracked by their speedup over the slowed fp32, which moves
             either way: they are counted apart;
  converted  --cpu-gemm converted: the GEMM precisions this CPU runs natively (bf16 on
             AVX512-BF16 or AMX) run converted to fp32 instead, so their speedup over fp32 drops;
             fp32 and the precisions already converted are unaffected, and so are the bandwidth
             and cast suites. On a CPU without native low precision there is nothing to slow.

Then `mpbench compare base SIDE` (JSON) for each, and the figures: the share of cases judged
regressed or improved between identical runs (target: at most 1%), and for each slowdown the share
judged regressed among the slowed cases (target: at least 90%, each measured at least 25% worse)
and among the unaffected ones (target: at most 1%). Each slowed case's measured change is printed,
so a machine too loaded to show a slowdown can be told from a verdict that missed it.

Writes the documents, the comparisons and figures.json to DIR. Exit status: 0 when every target is
met, 1 when one is missed, 2 when a run or a comparison could not be made.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

SUITES = "gemm,bandwidth,cast"
# Compute-bound GEMMs (an ISA cap slows them) short enough to finish inside one time slice of a
# shared core even when slowed, the smallest bandwidth size, every cast.
SHAPES = ["256x256x256", "320x320x320", "384x384x384", "448x448x448"]
FILTER = r"^(gemm/(square_512|custom_)|bandwidth/[a-z]+/n=1048576/|cast/)"
SLOWDOWNS = {"isa": ["--cpu-isa", "sse41"], "converted": ["--cpu-gemm", "converted"]}
SIDES = ("base", "identical", *SLOWDOWNS)


class BenchError(Exception):
    """A run or a comparison failed: printed on one line, exit status 2."""


def run_side(args, side: str, index: int) -> Path:
    out = args.out / side / f"run{index}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [str(args.mpbench), "run", "--suite", SUITES, "--device", "cpu", "--quick", "--filter", FILTER,
               "--timeout", str(args.timeout), "--out", str(out)]
    command += [arg for shape in SHAPES for arg in ("--shape", shape)] + SLOWDOWNS.get(side, [])
    print(f"bench_compare: {side} run {index + 1} of {args.runs}", flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads)) if args.threads else None
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return out


def compare(args, new_side: str) -> dict:
    out = args.out / f"compare-base-{new_side}.json"
    command = [str(args.mpbench), "compare", str(args.out / "base"), str(args.out / new_side), "--format", "json",
               "--out", str(out)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return json.loads(out.read_text())


def case_id(c: dict) -> str:
    return f"{c['suite']}/{c['name']}/{c['precision']}"


def native_low_precisions(base_document: Path) -> set[str]:
    """The GEMM precisions the CPU runs natively besides fp32: what --cpu-gemm converted slows."""
    table = json.loads(base_document.read_text())["env"]["cpu"].get("capabilities", {}).get("gemm", {})
    return {p for p, row in table.items() if row.get("path") == "native" and p != "fp32"}


def known_sets(slowdown: str, native: set[str]):
    """(slowed, unaffected) predicates on a comparison, decided before measuring."""
    untouched_suites = ("bandwidth", "cast")
    if slowdown == "isa":
        return (lambda c: c["suite"] == "gemm" and c["precision"] == "fp32",
                lambda c: c["suite"] in untouched_suites)
    return (lambda c: c["suite"] == "gemm" and c["precision"] in native,
            lambda c: c["suite"] in untouched_suites or (c["suite"] == "gemm" and c["precision"] not in native))


def share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def verdict_counts(comparisons: list[dict]) -> dict:
    return {v: sum(c["verdict"] == v for c in comparisons) for v in ("regressed", "improved", "noisy", "same")}


def identical_figures(report: dict) -> dict:
    comparisons = report["comparisons"]
    flagged = [case_id(c) for c in comparisons if c["verdict"] in ("regressed", "improved")]
    return {"compared": len(comparisons), "flagged": len(flagged), "flagged_cases": flagged,
            "flagged_share": share(len(flagged), len(comparisons)), "verdicts": verdict_counts(comparisons)}


def worse_by(c: dict) -> float:
    """How much worse the figure got: +1.5 is a time 2.5 times longer, or a speedup 2.5 times lower."""
    return 1 / (1 + c["change"]) - 1 if c["metric"] != "seconds" else c["change"]


def slowdown_figures(report: dict, slowed_set, unaffected_set) -> dict:
    comparisons = report["comparisons"]
    slowed = [c for c in comparisons if slowed_set(c)]
    unaffected = [c for c in comparisons if unaffected_set(c)]
    other = [c for c in comparisons if not slowed_set(c) and not unaffected_set(c)]
    regressed = sum(c["verdict"] == "regressed" for c in slowed)
    unaffected_regressed = sum(c["verdict"] == "regressed" for c in unaffected)
    return {
        "slowed": len(slowed),
        "slowed_regressed": regressed,
        "slowed_regressed_share": share(regressed, len(slowed)),
        "slowed_worse_by": {case_id(c): round(worse_by(c), 3) for c in slowed},
        "slowed_at_least_25pct": sum(worse_by(c) >= 0.25 for c in slowed),
        "slowed_verdicts": verdict_counts(slowed),
        "unaffected": len(unaffected),
        "unaffected_regressed": unaffected_regressed,
        "unaffected_regressed_share": share(unaffected_regressed, len(unaffected)),
        "unaffected_verdicts": verdict_counts(unaffected),
        "unaffected_flagged_cases": [case_id(c) for c in unaffected if c["verdict"] in ("regressed", "improved")],
        "other": verdict_counts(other),
    }


def targets(identical: dict, slowdowns: dict) -> list[tuple[str, bool]]:
    checks = [("identical runs: at most 1% of cases regressed or improved", identical["flagged_share"] <= 0.01)]
    for name, f in slowdowns.items():
        if not f["slowed"]:
            continue
        checks += [
            (f"{name}: every slowed case measured at least 25% worse", f["slowed_at_least_25pct"] == f["slowed"]),
            (f"{name}: at least 90% of the slowed cases judged regressed", f["slowed_regressed_share"] >= 0.9),
            (f"{name}: at most 1% of the unaffected cases judged regressed", f["unaffected_regressed_share"] <= 0.01),
        ]
    return checks


def print_summary(identical: dict, slowdowns: dict, checks: list[tuple[str, bool]]):
    v = identical["verdicts"]
    print(f"identical runs: {identical['compared']} cases compared, {identical['flagged']} flagged "
          f"({100 * identical['flagged_share']:.1f}%); {v['noisy']} noisy, {v['same']} same")
    for case in identical["flagged_cases"]:
        print(f"  flagged: {case}")
    for name, f in slowdowns.items():
        if not f["slowed"]:
            print(f"{name} ({' '.join(SLOWDOWNS[name])}): nothing this CPU runs would be slowed")
            continue
        print(f"{name} ({' '.join(SLOWDOWNS[name])}): {f['slowed_regressed']} of {f['slowed']} slowed cases judged "
              f"regressed ({100 * f['slowed_regressed_share']:.0f}%; {f['slowed_verdicts']}); "
              f"{f['unaffected_regressed']} of {f['unaffected']} unaffected "
              f"({100 * f['unaffected_regressed_share']:.1f}%; {f['unaffected_verdicts']}); others {f['other']}")
        for case, worse in f["slowed_worse_by"].items():
            print(f"  {case}: {100 * worse:+.0f}% worse")
        for case in f["unaffected_flagged_cases"]:
            print(f"  unaffected but flagged: {case}")
    for name, met in checks:
        print(f"{'met' if met else 'MISSED'}: {name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--mpbench", type=Path, default=root / "build" / "cli" / "mpbench")
    parser.add_argument("--runs", type=int, default=3, help="runs per side (default 3)")
    parser.add_argument("--timeout", type=float, default=0.5,
                        help="seconds per case (default 0.5: nine quick runs at 3 s a case take half an hour on a "
                             "loaded 2-core machine)")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS of every run (default 1; 0 leaves it as it is): on a small machine "
                             "shared with other jobs, a parallel region waits a whole time slice whenever one of its "
                             "threads is descheduled, and whole runs measure that wait instead of the kernel")
    parser.add_argument("--out", type=Path, default=Path("bench-compare"), help="folder for the documents and figures")
    args = parser.parse_args(argv)
    for side in SIDES:  # documents of an earlier call would join this one's runs
        shutil.rmtree(args.out / side, ignore_errors=True)
    try:
        for index in range(args.runs):
            for side in SIDES:
                run_side(args, side, index)
        identical = identical_figures(compare(args, "identical"))
        native = native_low_precisions(args.out / "base" / "run0.json")
        slowdowns = {name: slowdown_figures(compare(args, name), *known_sets(name, native)) for name in SLOWDOWNS}
    except BenchError as e:
        print(f"bench_compare: error: {e}", file=sys.stderr)
        return 2
    checks = targets(identical, slowdowns)
    (args.out / "figures.json").write_text(json.dumps({"identical": identical, "slowdowns": slowdowns,
                                                       "targets": dict(checks)}, indent=1))
    print_summary(identical, slowdowns, checks)
    return 0 if all(met for _, met in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
