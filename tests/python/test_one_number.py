"""One number, one answer: a cast's share of the copy, from one real run, reads the same in `mpbench
run`'s table, `mpbench compare`, `mpbench explain` and scripts/report.py (each prints the document's
rates.pct_of_copy, formatted as core/figure_text.hpp does)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))
REPORT = ROOT / "scripts" / "report.py"


def mpbench(*args, ok=(0,)):
    done = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=300)
    assert done.returncode in ok, done.stderr
    return done.stdout


def test_a_casts_share_of_the_copy_reads_the_same_everywhere(tmp_path):
    doc_path = tmp_path / "casts.json"
    table = mpbench("run", "--suite", "cast", "--quick", "--device", "cpu", "--precision", "fp32,bf16",
                    "--filter", "copy|f32_to_bf16/", "--out", doc_path)
    doc = json.loads(doc_path.read_text())
    cast = next(c for c in doc["cases"] if c["name"].startswith("f32_to_bf16/"))
    share = f"{cast['rates']['pct_of_copy']:.1f}%"
    row = next(line for line in table.splitlines() if line.startswith(cast["name"]))
    assert f"{share} copy" in row, row

    compared = mpbench("compare", doc_path, doc_path, ok=(0, 3))
    compared_row = next(line for line in compared.splitlines() if f"cast/{cast['name']}/" in line)
    assert re.search(rf"\s{re.escape(share)}\s+{re.escape(share)}\s", compared_row), compared_row

    explained = mpbench("explain", doc_path)
    assert f"{share} of a copy" in explained, explained

    out = tmp_path / "report"
    subprocess.run([sys.executable, str(REPORT), str(doc_path), "-o", str(out)], check=True, capture_output=True,
                   timeout=300)
    svg = next(out.glob("casts-*.svg")).read_text()
    assert f"({share} of copy)" in svg
