#!/usr/bin/env python3
"""How far `mpbench compare` can be trusted on this machine: false alarms and detected slowdowns.

    python3 scripts/bench_compare.py [--mpbench build/cli/mpbench] [--runs 3] [--out DIR]

Runs the quick gemm, bandwidth and cast suites on the CPU (filtered to small sizes, with seven small
GEMM shapes added, so that the whole script takes a few minutes; one thread unless --threads says
otherwise) RUNS times on each of three sides, interleaved so that the machine's load drifts over all
of them alike:

  base       the default run;
  identical  the same command again;
  isa        --cpu-isa sse41, which caps oneDNN below AVX2 on every CPU that runs it (every x86-64
             CPU a CI runs on has AVX2): every GEMM, fp32 and each low precision (native or converted
             to fp32, both then run oneDNN's SSE4.1 matmul), takes several times longer; the
             bandwidth and cast suites do not use oneDNN. The low-precision GEMMs' speedups over the
             slowed fp32 move either way: they are counted apart.

Each comparison is `mpbench compare base SIDE --absolute` (JSON): every case's time is judged beside
its tracked figure, so the slowed set is every GEMM's time. The figures: the share of comparisons
judged regressed or improved between identical runs (target: at most 1%), and the share judged
regressed among the slowed GEMM times (target: at least 90%, each measured at least 25% worse) and
among the unaffected bandwidth and cast figures (target: at most 1%). Each slowed case's measured
change is printed, so a machine too loaded to show a slowdown can be told from a verdict that missed
it. figures.json also records the machine: CPU model and ISA flags, ISA limit, oneDNN version and
ISA, threads, mpbench revision, load averages.

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
import re
import sys
import time
from pathlib import Path

SUITES = "gemm,bandwidth,cast"
# Compute-bound GEMMs (an ISA cap slows them) short enough to finish inside one time slice of a
# shared core even when slowed, each a multiple of 16 so that fp8 runs too; with square_512, the
# smallest bandwidth size of a quick run on this CPU, every cast.
SHAPES = [f"{n}x{n}x{n}" for n in range(256, 449, 32)]
# Slowdowns that hold on any CPU: a cap below AVX2 slows every oneDNN matmul. (--cpu-gemm converted
# is none: on an AVX512-BF16 Xeon, native bf16 ran at 0.62 of fp32's speed and converted at 0.8.)
SLOWDOWNS = {"isa": ["--cpu-isa", "sse41"]}
SIDES = ("base", "identical", *SLOWDOWNS)


class BenchError(Exception):
    """A run or a comparison failed: printed on one line, exit status 2."""


def smallest_quick_size(list_output: str, suite: str) -> int:
    """The smallest n= of `mpbench list --suite SUITE --quick`'s cases (sizes follow the CPU's caches)."""
    sizes = [int(m) for m in re.findall(rf"^\s+{suite}/[^/\s]+/n=(\d+)/", list_output, re.MULTILINE)]
    if not sizes:
        raise BenchError(f"`mpbench list --suite {suite} --quick --device cpu` lists no {suite} case with a size n=")
    return min(sizes)


def case_filter(mpbench: Path) -> str:
    command = [str(mpbench), "list", "--suite", "bandwidth", "--quick", "--device", "cpu"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    n = smallest_quick_size(done.stdout, "bandwidth")
    return rf"^(gemm/(square_512|custom_)|bandwidth/[a-z]+/n={n}/|cast/)"


def require_ok_cases(document: Path):
    """Every suite measured something: a filter that matches nothing must not pass for a clean run."""
    cases = json.loads(document.read_text())["cases"]
    for suite in SUITES.split(","):
        if not any(c["suite"] == suite and c["status"] == "ok" for c in cases):
            raise BenchError(f"{document}: no ok case of the {suite} suite: nothing of it would be compared")


def run_side(args, side: str, index: int) -> Path:
    out = args.out / side / f"run{index}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [str(args.mpbench), "run", "--suite", SUITES, "--device", "cpu", "--quick", "--filter", args.filter,
               "--timeout", str(args.timeout), "--out", str(out)]
    command += [arg for shape in SHAPES for arg in ("--shape", shape)] + SLOWDOWNS.get(side, [])
    print(f"bench_compare: {side} run {index + 1} of {args.runs}", flush=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads)) if args.threads else None
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    if done.returncode != 0:
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    require_ok_cases(out)
    return out


def compare(args, new_side: str) -> dict:
    out = args.out / f"compare-base-{new_side}.json"
    command = [str(args.mpbench), "compare", str(args.out / "base"), str(args.out / new_side), "--absolute",
               "--format", "json", "--out", str(out)]
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        raise BenchError(f"{' '.join(command)} exited {done.returncode}: {done.stderr.strip()}")
    return json.loads(out.read_text())


def case_id(c: dict) -> str:
    return f"{c['suite']}/{c['name']}/{c['precision']}"


def gemm_time(c: dict) -> bool:
    return c["suite"] == "gemm" and c["metric"] == "seconds"


def not_onednn(c: dict) -> bool:
    return c["suite"] in ("bandwidth", "cast")


# Per slowdown, (slowed, unaffected) predicates on a comparison, decided before measuring.
KNOWN_SETS = {"isa": (gemm_time, not_onednn)}


def case_label(c: dict) -> str:
    return f"{case_id(c)} {c['metric']}"


def case_loads(document: dict) -> list[float]:
    """The 1-minute load averages recorded before and after each case."""
    loads = []
    for c in document["cases"]:
        measurement = c.get("details", {}).get("measurement", {})
        for when in ("clocks_before", "clocks_after"):
            load = measurement.get(when, {}).get("load_average_1m")
            if isinstance(load, (int, float)):
                loads.append(load)
    return loads


def machine_record(documents: list[Path], load_at_start: float, wall_s: float) -> dict:
    """What the figures were measured on, from the first base run and the loads of every run."""
    first = json.loads(documents[0].read_text())
    env, cpu = first["env"], first["env"]["cpu"]
    loads = [load for d in documents for load in case_loads(json.loads(d.read_text()))]
    return {
        "cpu_model": cpu.get("model"),
        "logical_cores": cpu.get("logical_cores"),
        "isa_flags": sorted(flag for flag, has in cpu.get("flags", {}).items() if has is True),
        "isa_limit": first["run"].get("cpu_isa") or env.get("onednn", {}).get("max_isa_env") or "none",
        "onednn": {k: env.get("onednn", {}).get(k) for k in ("version", "effective_isa", "default_isa_limit")},
        "threads": cpu.get("threads"),
        "omp_num_threads": cpu.get("omp_num_threads"),
        "mpbench_revision": env.get("mpbench", {}).get("git_revision"),
        "host": env.get("host"),
        "os": env.get("os", {}).get("name"),
        "load_average_1m": {"start": load_at_start, "end": os.getloadavg()[0],
                            "during_cases": [min(loads), max(loads)] if loads else None},
        "wall_s": round(wall_s),
    }


def share(part: int, whole: int) -> float:
    return part / whole if whole else math.nan


def verdict_counts(comparisons: list[dict]) -> dict:
    return {v: sum(c["verdict"] == v for c in comparisons) for v in ("regressed", "improved", "noisy", "same")}


def identical_figures(report: dict) -> dict:
    comparisons = report["comparisons"]
    flagged = [case_label(c) for c in comparisons if c["verdict"] in ("regressed", "improved")]
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
        "slowed_worse_by": {case_label(c): round(worse_by(c), 3) for c in slowed},
        "slowed_at_least_25pct": sum(worse_by(c) >= 0.25 for c in slowed),
        "slowed_verdicts": verdict_counts(slowed),
        "unaffected": len(unaffected),
        "unaffected_regressed": unaffected_regressed,
        "unaffected_regressed_share": share(unaffected_regressed, len(unaffected)),
        "unaffected_verdicts": verdict_counts(unaffected),
        "unaffected_flagged_cases": [case_label(c) for c in unaffected
                                     if c["verdict"] in ("regressed", "improved")],
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


def print_summary(machine: dict, identical: dict, slowdowns: dict, checks: list[tuple[str, bool]]):
    loads = machine["load_average_1m"]
    print(f"machine: {machine['cpu_model']}, {machine['logical_cores']} logical cores, ISA limit "
          f"{machine['isa_limit']}, oneDNN {machine['onednn']['version']} on {machine['onednn']['effective_isa']}, "
          f"{machine['threads']} thread(s), mpbench {machine['mpbench_revision']}, load average "
          f"{loads['start']:.1f} at the start, {loads['end']:.1f} at the end, {machine['wall_s']} s")
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
    parser.add_argument("--timeout", type=float, default=1.0,
                        help="seconds per case (default 1: nine quick runs at 3 s a case take half an hour on a "
                             "loaded 2-core machine; a GEMM sample also flushes the cache, so a shorter time leaves "
                             "a GEMM three or four samples)")
    parser.add_argument("--threads", type=int, default=1,
                        help="OMP_NUM_THREADS of every run (default 1; 0 leaves it as it is): on a small machine "
                             "shared with other jobs, a parallel region waits a whole time slice whenever one of its "
                             "threads is descheduled, and whole runs measure that wait instead of the kernel")
    parser.add_argument("--out", type=Path, default=Path("bench-compare"), help="folder for the documents and figures")
    args = parser.parse_args(argv)
    for side in SIDES:  # documents of an earlier call would join this one's runs
        shutil.rmtree(args.out / side, ignore_errors=True)
    start, load_at_start = time.monotonic(), os.getloadavg()[0]
    try:
        args.filter = case_filter(args.mpbench)
        for index in range(args.runs):
            for side in SIDES:
                run_side(args, side, index)
        identical = identical_figures(compare(args, "identical"))
        slowdowns = {name: slowdown_figures(compare(args, name), *KNOWN_SETS[name]) for name in SLOWDOWNS}
    except BenchError as e:
        print(f"bench_compare: error: {e}", file=sys.stderr)
        return 2
    documents = sorted((args.out / "base").glob("run*.json")) + [
        d for side in SIDES[1:] for d in sorted((args.out / side).glob("run*.json"))]
    machine = machine_record(documents, load_at_start, time.monotonic() - start)
    checks = targets(identical, slowdowns)
    (args.out / "figures.json").write_text(json.dumps({"machine": machine, "filter": args.filter,
                                                       "identical": identical, "slowdowns": slowdowns,
                                                       "targets": dict(checks)}, indent=1))
    print_summary(machine, identical, slowdowns, checks)
    return 0 if all(met for _, met in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
