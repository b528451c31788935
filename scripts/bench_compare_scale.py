#!/usr/bin/env python3
"""How `mpbench compare` scales with the number of cases: time and peak memory on generated pairs.

    python3 scripts/bench_compare_scale.py [--mpbench build/cli/mpbench] [--cases 10000 100000 1000000]
                                           [--folder /tmp/mpbench-compare-scale]

For each count, writes a base and a new document of that many gemm cases (fp32 and bf16 of
count/2 shapes, nine samples each, about 520 bytes a case, built from tests/cli/fixtures/
gemm_base.json; the new side 3% slower on every bf16 case), runs `mpbench compare BASE NEW
--format json --out REPORT` and prints the wall time and the peak resident memory of the
compare process (getrusage of the child). A benchmark, not a test: the numbers depend on the
machine; name it when quoting them. Exit status 1 when a compare fails.
"""
from __future__ import annotations

import argparse
import copy
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def document(template: dict, shapes: int, slower: float) -> dict:
    doc = copy.deepcopy(template)
    fp32, bf16 = (next(c for c in template["cases"] if c["precision"] == p) for p in ("fp32", "bf16"))
    cases = []
    for i in range(shapes):
        for base_case, factor in ((fp32, 1.0), (bf16, slower)):
            c = copy.deepcopy(base_case)
            c["name"] = f"shape_{i}"
            s = c["metrics"]["seconds"]
            for key in ("median", "min", "max", "mean", "stddev"):
                s[key] *= factor
            s["values"] = [v * factor for v in s["values"]]
            cases.append(c)
    doc["cases"] = cases
    doc["speedups"] = []
    return doc


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpbench", default=str(ROOT / "build" / "cli" / "mpbench"))
    parser.add_argument("--cases", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--folder", default="/tmp/mpbench-compare-scale")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    template = json.loads((ROOT / "tests" / "cli" / "fixtures" / "gemm_base.json").read_text())
    for count in args.cases:
        base, new = folder / f"base-{count}.json", folder / f"new-{count}.json"
        for path, slower in ((base, 1.0), (new, 1.03)):
            if not path.exists():
                path.write_text(json.dumps(document(template, count // 2, slower)))
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.monotonic()
        done = subprocess.run([args.mpbench, "compare", str(base), str(new), "--format", "json", "--out",
                               str(folder / f"report-{count}.json")], capture_output=True, text=True)
        wall = time.monotonic() - start
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if done.returncode not in (0, 1, 3):
            print(f"compare of {count} cases failed (exit {done.returncode}): {done.stderr.strip()}", file=sys.stderr)
            return 1
        size_mb = base.stat().st_size / 1e6
        peak = f"{peak_kib / 1024:.0f} MiB" if peak_kib > before else f"at most {before / 1024:.0f} MiB (earlier peak)"
        print(f"{count:>9} cases ({size_mb:.0f} MB a side): {wall:7.2f} s, peak memory {peak}, exit {done.returncode}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
