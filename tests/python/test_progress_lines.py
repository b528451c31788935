"""`mpbench run`'s progress lines on stderr count against what really runs (skipped cases and modes
left out) and show the time since the start, with an estimate of the time left once part is done
and a second has passed (tests/core/test_progress.cpp checks the estimate); the start line says
how many cases are skipped."""
import json
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))


def test_progress_counts_what_runs_with_its_clock(tmp_path):
    # tf32 is skipped on a CPU, in the cast suite (no such cast) and in training alike.
    done = subprocess.run([str(BIN), "run", "--suite", "cast,transformer", "--device", "cpu", "--quick", "--config", "tiny",
                           "--steps", "4", "--precision", "fp32,bf16,tf32", "--timeout", "0.2",
                           "--out", str(tmp_path / "r.json")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    cases = json.loads((tmp_path / "r.json").read_text())["cases"]
    measured = [c for c in cases if c["suite"] == "cast" and c["status"] != "skipped"]
    trained = [c for c in cases if c["suite"] == "transformer" and c["status"] != "skipped"]
    assert measured and len(trained) == 2, cases
    lines = done.stderr.splitlines()
    start = next(l for l in lines if l.startswith("mpbench: ") and "training mode" in l)
    skipped = sum(c["suite"] == "cast" and c["status"] == "skipped" for c in cases)
    assert f"{len(measured)} measurement" in start and (f"({skipped} case" in start if skipped else True), start
    assert "and 2 training modes (1 skipped) on " in start, start  # tf32's

    steps = [re.match(r"\[(\d+)/(\d+) (\d+ s|\d+ min \d\d s)(, about (.+) left)?\] cast/", l) for l in lines]
    steps = [m for m in steps if m]
    assert [int(m.group(1)) for m in steps] == list(range(1, len(measured) + 1))
    assert {int(m.group(2)) for m in steps} == {len(measured)}
    assert steps[-1].group(4) is None  # nothing left after the last

    modes = [re.match(r"\[mode (\d+)/(\d+) [^\]]+\] transformer tiny_b4_t16 (\S+): step (\d+)/4", l) for l in lines]
    modes = [m for m in modes if m]
    assert {(int(m.group(1)), m.group(3)) for m in modes} == {(1, "fp32"), (2, "bf16")}
    assert {int(m.group(2)) for m in modes} == {2}
    assert not any("left]" in l for l in lines if "step 4/4" in l and l.startswith("[mode 2/2"))
