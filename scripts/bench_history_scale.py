#!/usr/bin/env python3
"""How `mpbench history` scales with the runs it holds: the time to add a document and to check one.

    python3 scripts/bench_history_scale.py [--mpbench build/cli/mpbench] [--runs 1000] [--cases 100]
                                           [--folder /tmp/mpbench-history-scale] [--db postgresql://...]

Writes --runs documents of --cases gemm cases (fp32 and bf16 of cases/2 shapes, nine samples each,
built from tests/cli/fixtures/gemm_base.json, each run's bf16 times drawn with 1% noise), adds them
one `mpbench history add` per document to a new history (a CI job appends one run at a time), and
prints the wall time of the first and last tenth of the adds and of one `mpbench history check`
of a new document against the full history. A benchmark, not a test: the numbers depend on the
machine; name it when quoting them. --db gives a postgresql:// URL of an empty database in place of
the new SQLite file (the script never empties a server's database). Exit status 1 when a command
fails.
"""
from __future__ import annotations

import argparse
import copy
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def document(template: dict, shapes: int, run: int, rng: random.Random) -> dict:
    doc = copy.deepcopy(template)
    fp32, bf16 = (next(c for c in template["cases"] if c["precision"] == p) for p in ("fp32", "bf16"))
    doc["created"] = f"2026-{1 + run // 28 // 24 % 12:02}-{1 + run // 24 % 28:02}T{run % 24:02}:00:00Z"
    cases = []
    for i in range(shapes):
        for base_case, noisy in ((fp32, False), (bf16, True)):
            c = copy.deepcopy(base_case)
            c["name"] = f"shape_{i}"
            factor = rng.lognormvariate(0, 0.01) if noisy else 1.0
            s = c["metrics"]["seconds"]
            for key in ("median", "min", "max", "mean", "stddev"):
                s[key] *= factor
            s["values"] = [v * factor for v in s["values"]]
            cases.append(c)
    doc["cases"] = cases
    doc["speedups"] = []
    return doc


def timed(command: list[str]) -> float:
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1, 3):
        raise RuntimeError(f"{' '.join(command[:3])} failed (exit {done.returncode}): {done.stderr.strip()}")
    return time.monotonic() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpbench", default=str(ROOT / "build" / "cli" / "mpbench"))
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--folder", default="/tmp/mpbench-history-scale")
    parser.add_argument("--db", help="a postgresql:// URL of an empty database, instead of a new SQLite file")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    db = args.db or folder / f"history-{args.runs}x{args.cases}.sqlite"
    if args.db is None:
        for stale in folder.glob(db.name + "*"):
            stale.unlink()
    template = json.loads((ROOT / "tests" / "cli" / "fixtures" / "gemm_base.json").read_text())
    rng = random.Random(1)
    path = folder / "run.json"
    adds = []
    try:
        for run in range(args.runs):
            path.write_text(json.dumps(document(template, args.cases // 2, run, rng)))
            adds.append(timed([args.mpbench, "history", "add", str(db), str(path)]))
            if (run + 1) % max(1, args.runs // 10) == 0:
                print(f"{run + 1} runs added, last add {adds[-1]:.3f} s", flush=True)
        path.write_text(json.dumps(document(template, args.cases // 2, args.runs, rng)))
        check = timed([args.mpbench, "history", "check", str(db), str(path)])
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    tenth = max(1, len(adds) // 10)
    size = "on the server" if args.db else f"{db.stat().st_size / 1e6:.0f} MB"
    print(f"{args.runs} runs x {args.cases} cases ({size}): add {statistics.mean(adds[:tenth]):.3f} s "
          f"a document at first, {statistics.mean(adds[-tenth:]):.3f} s at the end; check {check:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
