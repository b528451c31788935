"""ci/examples/gpu-regression.yml's history steps, run as GitHub Actions runs them (bash -e -o
pipefail) with the real mpbench: the first job passes without a history, a push appends its runs,
a slower run fails the check, and a PostgreSQL URL that does not answer fails rather than passes."""
import json
import os
import subprocess

import pytest
import yaml

from conftest import ROOT, document, gemm_cases, seconds

MPBENCH = ROOT / "build" / "cli" / "mpbench"
EXAMPLE = ROOT / "ci" / "examples" / "gpu-regression.yml"
pytestmark = pytest.mark.skipif(not MPBENCH.is_file(), reason=f"{MPBENCH} is not built")


def step(name):
    steps = yaml.safe_load(EXAMPLE.read_text())["jobs"]["regression"]["steps"]
    return next(s["run"] for s in steps if s.get("name") == name)


@pytest.fixture
def job(tmp_path):
    """A job's folder: build/cli/mpbench, the three runs in new/, the summary file."""
    (tmp_path / "build" / "cli").mkdir(parents=True)
    (tmp_path / "build" / "cli" / "mpbench").symlink_to(MPBENCH)
    (tmp_path / "new").mkdir()
    return tmp_path


def write_runs(job, bf16_slower, day):
    for i in range(1, 4):
        cases = gemm_cases()
        for c in cases:
            if c["precision"] == "bf16":
                c["metrics"]["seconds"] = seconds(c["metrics"]["seconds"]["median"] * bf16_slower)
        doc = document(cases, created=f"2026-12-{day:02d}T10:0{i}:00Z")
        (job / "new" / f"run{i}.json").write_text(json.dumps(doc))


def run_step(job, name, history):
    env = dict(os.environ, HISTORY=str(history), GITHUB_STEP_SUMMARY=str(job / "summary.md"))
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step(name)], cwd=job, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_file_history_starts_with_the_first_push_and_fails_a_slower_run(job):
    history = job / "var" / "history.sqlite"
    write_runs(job, 1.0, 1)
    first = run_step(job, "Check against the history", history)
    assert first.returncode == 0 and "no history at" in first.stdout, first.stdout + first.stderr
    for day in (1, 2, 3):  # three pushes of three runs each
        write_runs(job, 1.0, day)
        appended = run_step(job, "Append the runs to the history", history)
        assert appended.returncode == 0, appended.stderr
    assert "9 runs" in appended.stdout
    write_runs(job, 1.0, 4)
    assert run_step(job, "Check against the history", history).returncode == 0
    write_runs(job, 1.5, 5)  # bf16 a third slower: its speedup over fp32 falls
    slower = run_step(job, "Check against the history", history)
    assert slower.returncode == 1, slower.stdout + slower.stderr
    assert "regressed" in (job / "summary.md").read_text()


def test_an_unreachable_postgresql_history_fails_the_check_and_makes_no_folder(job):
    url = "postgresql://ci@127.0.0.1:1/mpbench?connect_timeout=5"  # nothing listens on port 1
    write_runs(job, 1.0, 1)
    for name in ("Check against the history", "Append the runs to the history"):
        done = run_step(job, name, url)
        assert done.returncode == 2, name + done.stdout + done.stderr
        assert "127.0.0.1" in done.stderr
    assert not (job / "postgresql:").exists()


def test_the_history_report_step_draws_from_the_history(job):
    history = job / "history.sqlite"
    write_runs(job, 1.0, 1)
    assert run_step(job, "Append the runs to the history", history).returncode == 0
    for tree in ("scripts", ".venv"):
        (job / tree).symlink_to(ROOT / tree)
    done = run_step(job, "Trend and hardware-selection plots of the history", history)
    assert done.returncode == 0, done.stderr
    page = (job / "history-report" / "index.html").read_text()
    assert "latest runs of each machine" in page and "run 3 of " in page
