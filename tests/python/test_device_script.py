"""scripts/device/check.sh must work on its first try on the GPU machine, so every step that can
run without a GPU runs here: packing the build, unpacking it, the library path, the test binaries,
a filtered run (on the CPU) and the summary table."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import smallest_bandwidth_elements

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "cli" / "mpbench"
# Not the source tree: the build folders, the environment, the fetched dependencies, git's own.
OUTSIDE_THE_SOURCE = ("build", ".venv", ".deps", ".git")

needs_build = pytest.mark.skipif(not BUILD.exists(), reason=f"mpbench is not built at {BUILD}")


def source_tree():
    """Every path under the repository but the folders of OUTSIDE_THE_SOURCE (build* among them)."""
    paths = set()
    for folder, subfolders, files in os.walk(ROOT):
        here = Path(folder)
        if here == ROOT:
            subfolders[:] = [d for d in subfolders if not d.startswith(OUTSIDE_THE_SOURCE)]
        paths.update(here / name for name in subfolders + files)
    return paths


def test_tests_leave_no_bytecode_in_the_source_tree():
    """Python's bytecode cache would put __pycache__ folders beside the tests and the scripts they
    import. scripts/test.sh sets PYTHONDONTWRITEBYTECODE=1, so that neither this process nor the
    Pythons the tests start write one; and none is anywhere in the tree from the tests so far."""
    assert sys.dont_write_bytecode, "run pytest with PYTHONDONTWRITEBYTECODE=1, as scripts/test.sh does"
    left = sorted(str(p.relative_to(ROOT)) for p in source_tree() if p.name == "__pycache__" or p.suffix == ".pyc")
    assert not left, f"bytecode in the source tree (delete it, and run with PYTHONDONTWRITEBYTECODE=1): {left}"


@needs_build
def test_check_script_dry_run_on_the_cpu(tmp_path):
    n = smallest_bandwidth_elements(BUILD)
    env = dict(os.environ, MPBENCH_CHECK_DEVICE="cpu",
               MPBENCH_CHECK_FILTER=rf"square_512/|bandwidth/(memcpy|copy)/n={n}/fp32|cast/copy/|f32_to_bf16/",
               MPBENCH_CHECK_TESTS="test_core test_backends", MPBENCH_CHECK_TRAINING="--config tiny --steps 4",
               MPBENCH_CHECK_BUDGET_S="800")  # this machine is slow; the device's default is 330
    env.pop("MPBENCH_BIN", None)
    tree_before = source_tree()
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device" / "check.sh"), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    added = sorted(str(p.relative_to(ROOT)) for p in source_tree() - tree_before)
    assert not added, f"the check packs a local build outside the source tree, and writes nothing in it: {added}"
    produced = sorted(p.name for p in tmp_path.iterdir())
    assert {"check.log", "result-quick.json", "result-transformer.json", "result-emulated.json",
            "result-profile.json", "trace-tiny.amp-bf16.json"} <= set(produced)
    assert len(produced) <= 8  # what the device tool brings back
    result = json.loads((tmp_path / "result-quick.json").read_text())
    assert any(c["status"] == "ok" for c in result["cases"])
    summary = (tmp_path / "check.log").read_text().rsplit(" summary\n", 1)[-1]  # the last step's output
    assert "test_backends" in summary and "== targets" in summary
    assert re.search(r"^   skipped \d+: no usable GPU", summary, re.M), summary  # each skip's reason, counted
    assert "copy kernel vs cudaMemcpy" in summary
    assert "transformer tiny_b4_t16 fp32" in summary and "final loss vs fp32" in summary
    assert "profile tiny_b4_t16 amp-bf16: overhead" in summary
    assert "storage bf16      half vs emulated:" in summary
    profiled = json.loads((tmp_path / "result-profile.json").read_text())
    assert all(c["details"]["profile"]["status"] == "profiled" for c in profiled["cases"])
    training = json.loads((tmp_path / "result-transformer.json").read_text())
    assert [c["precision"] for c in training["cases"]] == ["fp32", "tf32", "amp-fp16", "amp-bf16", "bf16"]
    trace = json.loads((tmp_path / "trace-tiny.amp-bf16.json").read_text())
    assert any(e.get("cat") == "user_annotation" for e in trace["traceEvents"])
    emulated = json.loads((tmp_path / "result-emulated.json").read_text())
    assert [c["params"]["activation_storage"] for c in emulated["cases"]] == ["emulated"] * 3
    assert [c["name"] for c in emulated["cases"]] == ["tiny_b4_t16_act-emulated"] * 3
    tests = re.search(r"\n== \S+ tests\n(.*?)\n== ", (tmp_path / "check.log").read_text(), re.S).group(1)
    assert "-- test_backends" in tests and "exit 0" in tests and "FAILED" not in tests


@needs_build
def test_check_script_keeps_to_its_budget(tmp_path):
    """A budget spent before the tests start (packing ./build here takes longer) skips every later
    step at once, each named, and still prints the summary: the device call's timeout is never hit
    by a step that should have been cut."""
    env = dict(os.environ, MPBENCH_CHECK_DEVICE="cpu", MPBENCH_CHECK_TESTS="test_core test_backends",
               MPBENCH_CHECK_TRAINING="--config tiny --steps 4", MPBENCH_CHECK_BUDGET_S="26")
    env.pop("MPBENCH_BIN", None)
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device" / "check.sh"), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=600)
    log = (tmp_path / "check.log").read_text()
    assert done.returncode == 1, log[-3000:]
    skipped = re.findall(r"check: SKIPPED for lack of time \(MPBENCH_CHECK_BUDGET_S=26\): (\S+)", log)
    assert len(skipped) == 8, log[-3000:]  # two test binaries, five mpbench runs, torch_baseline.py
    assert "exit 124" in log and "== targets" in log.rsplit(" summary\n", 1)[-1]
    clock = {name: int(h) * 3600 + int(m) * 60 + int(sec)
             for h, m, sec, name in re.findall(r"\n== (\d\d):(\d\d):(\d\d) (tests|summary)\n", log)}
    assert (clock["summary"] - clock["tests"]) % 86400 <= 5, log[-3000:]


@needs_build
def test_check_script_refuses_a_budget_that_is_not_a_number(tmp_path):
    env = dict(os.environ, MPBENCH_CHECK_BUDGET_S="5m")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "device" / "check.sh"), str(tmp_path)],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "MPBENCH_CHECK_BUDGET_S must be a number of seconds, not '5m'" in done.stdout
