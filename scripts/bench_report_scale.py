#!/usr/bin/env python3
"""How report.py scales with the size of a result document.

    python3 scripts/bench_report_scale.py [--mb 80] [--work /tmp/report-scale] [--profile] [--report PATH]

Builds a document of about --mb megabytes from the sample result in results/cpu (each case's timing
samples repeated, as a long run with many samples writes them, the summary kept consistent), then
runs report.py on it under /usr/bin/time -v and prints the wall time and peak RSS; with --profile,
under cProfile too, printing the 25 most expensive functions. --report runs another copy of
report.py (an older one, to compare, in a tree with results/schema beside its scripts/) on the same
document.
"""
from __future__ import annotations

import argparse
import json
import pstats
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "results" / "cpu" / "amd-epyc-2core_2026-12-02_all.json"


def scaled_document(target_bytes: int) -> dict:
    doc = json.loads(SAMPLE.read_text(encoding="utf-8"))
    sampled = [s for c in doc["cases"] if (s := c.get("metrics", {}).get("seconds")) and s.get("values")]
    samples_bytes = sum(len(json.dumps(s["values"])) for s in sampled)
    factor = max(1, round((target_bytes - SAMPLE.stat().st_size + samples_bytes) / samples_bytes))
    for stats in sampled:
        stats["values"] = stats["values"] * factor  # the same samples: min, max, median stay right
        stats["samples"] = len(stats["values"])
    return doc


def measured_run(report: Path, document: Path, out: Path) -> None:
    timed = subprocess.run(["/usr/bin/time", "-v", sys.executable, str(report), str(document), "-o", str(out)],
                           capture_output=True, text=True)
    if timed.returncode != 0:
        sys.exit(f"report.py failed ({timed.returncode}): {timed.stderr[-2000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", timed.stderr).group(1)
    rss_kib = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timed.stderr).group(1))
    print(f"report.py: {wall} wall, {rss_kib / 1024:.0f} MiB peak RSS")


def profiled_run(report: Path, document: Path, out: Path, profile: Path) -> None:
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(profile), str(report), str(document), "-o",
                    str(out)], check=True, stdout=subprocess.DEVNULL)
    pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(25)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=80, help="size of the generated document (default 80)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/report-scale"), help="folder for the document")
    parser.add_argument("--profile", action="store_true", help="also run under cProfile")
    parser.add_argument("--report", type=Path, default=ROOT / "scripts" / "report.py", help="the report.py to run")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    document = args.work / "large.json"
    if not document.exists() or abs(document.stat().st_size - args.mb * 1e6) > 0.2 * args.mb * 1e6:
        document.write_text(json.dumps(scaled_document(int(args.mb * 1e6))), encoding="utf-8")
    print(f"document: {document} ({document.stat().st_size / 1e6:.0f} MB)")
    measured_run(args.report, document, args.work / "out")
    if args.profile:
        profiled_run(args.report, document, args.work / "out-profiled", args.work / "report.prof")
    return 0


if __name__ == "__main__":
    sys.exit(main())
