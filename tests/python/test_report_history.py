"""scripts/report.py --history: trend plots of a history the real `mpbench history add` built from
fixture documents (conftest.py), read back through `mpbench history export`."""
import json
import os
import subprocess
import sys

import pytest

from conftest import REPORT_PATH, ROOT, document, gemm_case, gemm_cases, seconds

MPBENCH = ROOT / "build" / "cli" / "mpbench"
pytestmark = pytest.mark.skipif(not MPBENCH.is_file(), reason=f"{MPBENCH} is not built")

A100 = "GPU NVIDIA A100-SXM4-80GB, CUDA 12.4"
H100 = "GPU NVIDIA H100 80GB HBM3, CUDA 12.4"
A100_SLUG = "history-gpu-nvidia-a100-sxm4-80gb-cuda-12-4"
H100_SLUG = "history-gpu-nvidia-h100-80gb-hbm3-cuda-12-4"
STEPPED = "gemm/square_1024/cuda/bf16"  # its speedup over fp32 drops with the bf16 time's 20% step
LONE = "gemm/square_512/cuda/fp32"  # in one run only


def square_cases(slower_bf16=1.0):
    """The square GEMMs (9 series, one figure), bf16 times scaled by `slower_bf16`."""
    cases = [c for c in gemm_cases() if c["params"]["group"] == "square"]
    for c in cases:
        if c["precision"] == "bf16":
            c["metrics"]["seconds"] = seconds(c["metrics"]["seconds"]["median"] * slower_bf16)
    return cases


def history_documents(write_document):
    """20 runs of the A100, bf16 20% slower from the 11th; 3 of the H100, the last with one more case."""
    paths = []
    for i in range(20):
        doc = document(square_cases(1.2 if i >= 10 else 1.0), created=f"2026-11-{i + 1:02d}T10:00:00Z")
        doc["env"]["mpbench"]["git_revision"] = f"a{i:02d}cdef0123"
        paths.append(write_document(f"a100-{i:02d}.json", doc))
    for i in range(3):
        cases = square_cases() + ([gemm_case("square_512", "square", 512, 512, 512, "fp32", 5.0)] if i == 2 else [])
        doc = document(cases, gpu="NVIDIA H100 80GB HBM3", created=f"2026-12-{i + 1:02d}T10:00:00Z")
        doc["env"]["mpbench"]["git_revision"] = f"h{i:02d}cdef0123"
        paths.append(write_document(f"h100-{i}.json", doc))
    return paths


def mpbench(*args):
    return subprocess.run([str(MPBENCH), *map(str, args)], capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """The history file and its export: one fixture, as drawing is the slow part."""
    folder = tmp_path_factory.mktemp("history")
    write = make_writer(folder)
    db = folder / "runs.db"
    mpbench("history", "add", db, *history_documents(write))
    return db, json.loads(mpbench("history", "export", db, "--format", "json").stdout)


def make_writer(folder):
    def write(name, doc):
        path = folder / name
        path.write_text(json.dumps(doc))
        return path
    return write


def run_report(*args, env=None):
    return subprocess.run([sys.executable, str(REPORT_PATH), *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


@pytest.fixture(scope="module")
def report_out(history, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "out"
    done = run_report("--history", history[0], "-o", out, "--mpbench", MPBENCH)
    assert done.returncode == 0, done.stderr
    return out


def plot_data(out, stem):
    return json.loads((out / f"{stem}.json").read_text())["points"]


def caption_of(out, stem):
    page = (out / "index.html").read_text()
    return page.split(f"<figure id='{stem}'>")[1].split("</figcaption>")[0]


def test_the_fixture_documents_follow_the_schema(write_document):
    history_documents(write_document)  # write_document validates each


def trend_stems(out):
    return sorted(p.stem for p in out.glob("history-*.json"))


def test_one_figure_per_machine(report_out):
    assert trend_stems(report_out) == [A100_SLUG, H100_SLUG]
    for stem in (A100_SLUG, H100_SLUG):
        assert (report_out / f"{stem}.png").is_file() and (report_out / f"{stem}.svg").is_file()
        assert stem in (report_out / "index.html").read_text()


def test_points_are_the_exported_tracked_figures(history, report_out):
    _, export = history
    drawn = [p for p in plot_data(report_out, A100_SLUG) if p["y"] is not None]
    exported = {(c["suite"], c["name"], c["backend"], c["precision"], c["run"]): c for c in export["cases"]
                if c["machine"] == A100}
    assert len(drawn) == len(exported) == 9 * 20
    for p in drawn:
        c = exported[(*p["case"].split("/"), p["x"])]
        metric = "speedup" if c["speedup"] else "seconds"  # gemm cases have no share of the copy
        assert p["metric"] == metric
        assert p["y"] == pytest.approx(c[metric]["value"])
        assert (p["created"], p["revision"]) == (c["created"], c["revision"])


def test_band_is_the_spread_within_the_run(history, report_out):
    _, export = history
    spreads = {(case_label(c), c["run"]): c["speedup"]["spread"] for c in export["cases"]
               if c["machine"] == A100 and c["speedup"]}
    for p in plot_data(report_out, A100_SLUG):
        if (p["case"], p["x"]) in spreads:
            spread = spreads[(p["case"], p["x"])]
            assert spread > 0 and p["spread"] == pytest.approx(spread)
            assert (p["low"], p["high"]) == pytest.approx((p["y"] * (1 - spread), p["y"] * (1 + spread)))
    assert "value × (1 ± spread)" in caption_of(report_out, A100_SLUG)


def case_label(c):
    return "/".join((c["suite"], c["name"], c["backend"], c["precision"]))


def test_change_point_is_drawn_between_the_runs_of_the_step(history, report_out):
    _, export = history
    marks = [p for p in plot_data(report_out, A100_SLUG) if p["series"] == f"{STEPPED} change point"]
    assert len(marks) == 1
    mark = marks[0]
    first_slow = min(c["run"] for c in export["cases"] if c["machine"] == A100 and c["created"] >= "2026-11-11")
    assert (mark["run_before"], mark["run_after"]) == (first_slow - 1, first_slow)
    assert mark["x"] == pytest.approx(first_slow - 0.5)
    assert mark["relative_change"] == pytest.approx(1 / 1.2 - 1, abs=0.01)  # the speedup falls with bf16 slower
    exported = next(p for p in export["change_points"] if p["case"] == STEPPED and p["machine"] == A100)
    assert {k: mark[k] for k in exported if k != "machine"} == {k: v for k, v in exported.items() if k != "machine"}
    # Series without a step have no change point.
    assert not any(p["series"] == "gemm/square_1024/cuda/fp32 change point" for p in plot_data(report_out, A100_SLUG))
    caption = caption_of(report_out, A100_SLUG)
    assert "E-Divisive means at alpha 0.01" in caption
    svg = (report_out / f"{A100_SLUG}.svg").read_text()
    assert f"runs {first_slow - 1}→{first_slow}, a09cdef→a10cdef" in svg and "-16.7%" in svg


def test_a_one_run_series_is_named_in_the_caption_not_drawn(report_out):
    assert f"One run, no trend: {LONE}." in caption_of(report_out, H100_SLUG)
    assert not any(p["case"] == LONE for p in plot_data(report_out, H100_SLUG))
    assert "One run, no trend" not in caption_of(report_out, A100_SLUG)


def test_many_series_are_split_into_figures_of_at_most_twelve(tmp_path, write_document):
    paths = [write_document(f"r{i}.json", document(gemm_cases(), created=f"2026-11-0{i + 1}T10:00:00Z"))
             for i in range(3)]
    db = tmp_path / "runs.db"
    mpbench("history", "add", db, *paths)
    out = tmp_path / "out"
    assert run_report("--history", db, "-o", out, "--mpbench", MPBENCH).returncode == 0
    stems = sorted(p.stem for p in out.glob("*.json"))
    assert stems == [f"{A100_SLUG}-1", f"{A100_SLUG}-2"]  # one machine: no hardware-selection plot
    assert "1 machine in the history: no hardware-selection plots" in (out / "index.html").read_text()
    counts = [len({p["case"] for p in plot_data(out, stem)}) for stem in stems]
    assert counts == [9, 8]  # 17 series, as even as two figures allow
    assert "Part 1 of 2 of this machine's 17 series (part 1: 9 (" in caption_of(out, stems[0]).replace("&#x27;", "'")


def speedups_by_machine(out):
    """(machine, mode) -> the drawn point of the gemm speedup-per-machine plot."""
    return {(p["series"].split(" ·")[0], p["x"]): p for p in plot_data(out, "machines-speedup-gemm")}


def test_hardware_selection_plots_read_the_latest_run_of_each_machine(report_out):
    # The A100's last run has bf16 20% slower than its first ten and than every H100 run, whose
    # square cases are the same: its bf16 speedup is the H100's over 1.2, from one run each.
    drawn = speedups_by_machine(report_out)
    a100, h100 = drawn[("NVIDIA A100-SXM4-80GB", "bf16")], drawn[("NVIDIA H100 80GB HBM3", "bf16")]
    assert a100["y"] == pytest.approx(h100["y"] / 1.2)
    assert a100["runs"] == h100["runs"] == 1
    assert drawn[("NVIDIA A100-SXM4-80GB", "tf32")]["y"] == pytest.approx(drawn[("NVIDIA H100 80GB HBM3", "tf32")]["y"])
    page = (report_out / "index.html").read_text()
    assert "Hardware selection: the latest run of each machine" in page
    assert "run 20 of " in page and "a100-19.json" in page and "run 23 of " in page and "h100-2.json" in page
    assert (report_out / "machines-relative-tflops.png").is_file()


def test_history_runs_takes_each_machines_last_n_runs(history, tmp_path):
    out = tmp_path / "out"
    done = run_report("--history", history[0], "-o", out, "--mpbench", MPBENCH, "--history-runs", "20",
                      "--reference-machine", "H100")
    assert done.returncode == 0, done.stderr
    drawn = speedups_by_machine(out)
    a100, h100 = drawn[("NVIDIA A100-SXM4-80GB", "bf16")], drawn[("NVIDIA H100 80GB HBM3", "bf16")]
    # Each case's median over the A100's 20 runs, ten at the H100's speedup and ten at it over 1.2.
    assert a100["y"] == pytest.approx(h100["y"] * (1 + 1 / 1.2) / 2)
    assert (a100["runs"], h100["runs"]) == (20, 3)  # the H100 has three runs only
    assert "relative to NVIDIA H100" in json.loads((out / "machines-relative-tflops.json").read_text())["title"]
    assert "latest runs of each machine" in (out / "index.html").read_text()


def test_history_runs_needs_history_and_a_count(history, tmp_path):
    for args in (["--history-runs", "2", tmp_path / "a.json"], ["--history", history[0], "--history-runs", "0"],
                 ["--history", history[0], "--history-runs", "x"]):
        done = run_report(*args, "-o", tmp_path / "out")
        assert done.returncode == 2 and "--history-runs" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def one_error_line(done):
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0].startswith("report.py: error: ")
    return lines[0]


def test_a_postgresql_url_goes_to_mpbench_whole_and_is_shown_without_its_password(history, tmp_path):
    # A stand-in for mpbench that records the DB it was given and exports the fixture's history: a
    # URL must reach `history export` as typed (not folded as a path), and no page or message may
    # show its password.
    url = "postgresql://ci:hunter2@db.example:5432/mpbench?sslmode=require"
    given = tmp_path / "given.txt"
    stand_in = tmp_path / "mpbench"
    stand_in.write_text(f"#!/bin/sh\nprintf '%s' \"$3\" > '{given}'\nshift 3\n"
                        f"exec '{MPBENCH}' history export '{history[0]}' \"$@\"\n")
    stand_in.chmod(0o755)
    out = tmp_path / "out"
    done = run_report("--history", url, "-o", out, "--mpbench", stand_in)
    assert done.returncode == 0, done.stderr
    assert given.read_text() == url
    page = (out / "index.html").read_text()
    assert "postgresql://ci:***@db.example:5432/mpbench?sslmode=require" in page
    assert all("hunter2" not in f.read_text(errors="replace") for f in out.iterdir() if f.is_file())
    failing = tmp_path / "failing"
    failing.write_text("#!/bin/sh\necho 'mpbench: error: cannot connect' >&2\nexit 2\n")
    failing.chmod(0o755)
    said = one_error_line(run_report("--history", url, "-o", tmp_path / "out2", "--mpbench", failing))
    assert "ci:***@db.example" in said and "hunter2" not in said


def test_a_missing_history_exits_2_with_one_line(tmp_path):
    done = run_report("--history", tmp_path / "none.db", "-o", tmp_path / "out", "--mpbench", MPBENCH)
    assert "none.db" in one_error_line(done) and "history export" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_missing_binary_exits_2_with_one_line(history, tmp_path):
    done = run_report("--history", history[0], "-o", tmp_path / "out", "--mpbench", tmp_path / "no-mpbench")
    assert "no-mpbench" in one_error_line(done)
    env = dict(os.environ, MPBENCH_BIN=str(tmp_path / "elsewhere"))
    assert "elsewhere" in one_error_line(run_report("--history", history[0], "-o", tmp_path / "out", env=env))


def test_results_and_history_together_are_refused(history, tmp_path):
    done = run_report("--history", history[0], tmp_path / "a.json", "-o", tmp_path / "out")
    assert done.returncode == 2 and "do not apply" in done.stderr
