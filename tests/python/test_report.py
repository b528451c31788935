"""scripts/report.py on fixture documents built in conftest.py and validated against the schema."""
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import unicodedata
import xml.dom.minidom
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import matplotlib.colors
import matplotlib.image
import pytest

from conftest import (REPORT_PATH, bandwidth_cases, case, cast_cases, document, gemm_case, gemm_cases,
                      seconds, transformer_cases)

FAILED_TFLOPS = 12345.0  # a failed case's leftover rate: must never show up in a plot


def failed_cases():
    error = gemm_case("square_8192", "square", 8192, 8192, 8192, "bf16", FAILED_TFLOPS)
    error.update(status="error", message="CUBLAS_STATUS_EXECUTION_FAILED", metrics={})
    skipped = case("gemm", "square_8192", "fp8-e4m3", {"group": "square", "m": 8192, "n": 8192, "k": 8192},
                   {}, status="skipped", message="fp8 needs sm_89 or newer")
    return [error, skipped]


def full_document():
    cases = gemm_cases() + failed_cases() + bandwidth_cases() + cast_cases() + transformer_cases(10000.0)
    return document(cases)


def run_report(report, args):
    return report.main([str(a) for a in args])


def drawn_points(out: Path):
    return {p.stem: json.loads(p.read_text())["points"] for p in out.glob("*.json")}


class References(HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        self.targets += [v for k, v in attrs if k in ("src", "href") and v is not None]


@pytest.fixture(scope="module")
def single_report(report, validator, tmp_path_factory):
    """One report for the tests that only read it: drawing is the slow part."""
    folder = tmp_path_factory.mktemp("single")
    doc = full_document()
    validator.validate(doc)
    (folder / "a100.json").write_text(json.dumps(doc))
    assert run_report(report, [folder / "a100.json", "-o", folder / "out"]) == 0
    return folder / "out"


SINGLE_PLOTS = ["gemm-size", "gemm-shapes", "gemm-alignment", "roofline", "bandwidth", "casts",
                "transformer-speedup", "transformer-breakdown", "transformer-loss", "transformer-loss-scale",
                "transformer-memory"]


def test_fixture_documents_follow_the_schema(validator):
    validator.validate(full_document())
    broken = full_document()
    broken["cases"][0]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(broken)


def test_every_plot_is_written_as_png_svg_and_data(single_report):
    label = "nvidia-a100-sxm4-80gb-cuda-12-4"
    for plot in SINGLE_PLOTS:
        for ext in ("png", "svg", "json"):
            assert (single_report / f"{plot}-{label}.{ext}").is_file(), f"{plot}.{ext}"
    assert (single_report / "index.html").is_file()


def test_images_are_not_blank(single_report):
    pngs = sorted(single_report.glob("*.png"))
    assert len(pngs) == len(SINGLE_PLOTS)
    for png in pngs:
        pixels = matplotlib.image.imread(png)[..., :3]
        assert pixels.var() > 1e-3, png.name
        assert (pixels < 0.5).mean() > 0.002, f"{png.name} has almost no dark pixels"


def test_html_refers_only_to_files_that_exist(single_report):
    parser = References()
    parser.feed((single_report / "index.html").read_text())
    assert len(parser.targets) >= 3 * len(SINGLE_PLOTS)
    for target in parser.targets:
        assert "://" not in target and not target.startswith("/"), target
        assert (single_report / target).is_file(), target


def test_cases_not_ok_are_not_drawn_but_listed(single_report):
    for name, points in drawn_points(single_report).items():
        for p in points:
            assert p["case"] not in ("gemm/square_8192/cuda/bf16", "gemm/square_8192/cuda/fp8-e4m3"), name
            assert p["y"] != FAILED_TFLOPS and p["x"] != FAILED_TFLOPS, name
    page = (single_report / "index.html").read_text()
    not_drawn = page.split("Cases not drawn")[1].split("<h2>")[0]
    assert "gemm/square_8192/cuda/bf16" in not_drawn and "CUBLAS_STATUS_EXECUTION_FAILED" in not_drawn
    assert "gemm/square_8192/cuda/fp8-e4m3" in not_drawn and "fp8 needs sm_89 or newer" in not_drawn


def test_gemm_plot_draws_datasheet_peak_and_best_measured(single_report):
    points = drawn_points(single_report)["gemm-size-nvidia-a100-sxm4-80gb-cuda-12-4"]
    lines = {p["series"]: p["y"] for p in points if p["x"] is None}
    assert lines["bf16 datasheet peak"] == pytest.approx(312.0)
    assert lines["bf16 best measured"] == pytest.approx(0.8 * 312.0)  # the aligned 4096 case
    assert sorted(p["x"] for p in points if p["series"] == "fp32") == pytest.approx([1024, 2048, 4096])


def test_roofline_intensity_and_memory_ceiling(single_report):
    points = drawn_points(single_report)["roofline-nvidia-a100-sxm4-80gb-cuda-12-4"]
    m = n = k = 2048  # written without flops/bytes: the report counts them from the dtype
    square_2048 = next(p for p in points if p["case"] == "gemm/square_2048/cuda/bf16")
    assert square_2048["x"] == pytest.approx(2 * m * n * k / ((m * k + n * k) * 2 + m * n * 2))
    fp32 = next(p for p in points if p["case"] == "gemm/square_2048/cuda/fp32")
    assert fp32["x"] == pytest.approx(2 * m * n * k / ((m * k + n * k) * 4 + m * n * 4))
    ceiling = next(p for p in points if p["series"] == "bf16 memory ceiling")
    assert ceiling["y"] == pytest.approx(1501.0)  # best copy beyond the 40 MiB cache, not the 3000 GB/s in L2


def test_casts_are_drawn_against_the_copy_ceiling(single_report):
    points = drawn_points(single_report)["casts-nvidia-a100-sxm4-80gb-cuda-12-4"]
    assert {(p["series"], p["x"]) for p in points} == {("cast", 1200.0), ("copy ceiling", 1500.0)}


def test_plots_are_labelled_with_machine_cuda_and_date(single_report):
    svg = (single_report / "gemm-size-nvidia-a100-sxm4-80gb-cuda-12-4.svg").read_text()
    for text in ("NVIDIA A100-SXM4-80GB", "CUDA 12.4", "2026-12-02"):
        assert text in svg, text


def test_transformer_plots_are_skipped_quietly_without_details(report, write_document, tmp_path):
    path = write_document("plain.json", document(transformer_cases(10000.0, with_details=False)))
    out = tmp_path / "out"
    assert run_report(report, [path, "-o", out]) == 0
    names = {p.stem for p in out.glob("*.png")}
    assert any(n.startswith("transformer-speedup") for n in names)
    assert not any(n.startswith(("transformer-breakdown", "transformer-loss")) for n in names)


def test_transformer_speedup_says_when_modes_ran_different_attention(report, write_document, tmp_path):
    cases = transformer_cases(10000.0)
    for c in cases:
        c["params"]["attention"] = "unfused" if c["precision"] == "fp32" else "fused"
    out = tmp_path / "out"
    assert run_report(report, [write_document("mixed.json", document(cases)), "-o", out]) == 0
    svg = next(out.glob("transformer-speedup-*.svg")).read_text()
    assert "fused attention" in svg
    page = (out / "index.html").read_text()
    assert "--attention unfused compares precisions alone" in page
    # The same modes on the same kernels: plain labels, no remark.
    same = tmp_path / "same"
    assert run_report(report, [write_document("plain.json", document(transformer_cases(10000.0))), "-o", same]) == 0
    assert "compares precisions alone" not in (same / "index.html").read_text()


def test_peak_memory_marks_modes_whose_half_activations_were_emulated(report, write_document, tmp_path):
    cases = transformer_cases(10000.0)
    for c in cases:
        c["params"]["activation_storage"] = "emulated"
    out = tmp_path / "out"
    assert run_report(report, [write_document("emulated.json", document(cases)), "-o", out]) == 0
    svg = next(out.glob("transformer-memory-*.svg")).read_text()
    assert "emulated" in svg
    assert "--activation-storage emulated" in (out / "index.html").read_text()
    for c in cases:
        c["params"]["activation_storage"] = "emulated" if c["precision"] == "fp32" else "half"
    half = tmp_path / "half"
    assert run_report(report, [write_document("half.json", document(cases)), "-o", half]) == 0
    assert "--activation-storage emulated" not in (half / "index.html").read_text()


def multi_machine_documents(write_document):
    a100 = document(gemm_cases(1.0) + transformer_cases(10000.0), gpu="NVIDIA A100-SXM4-80GB", cuda="12.1")
    h100 = document(gemm_cases(2.0) + transformer_cases(30000.0), gpu="NVIDIA H100 80GB HBM3", cuda="12.4",
                    created="2026-12-03T10:00:00Z")
    return write_document("a100.json", a100), write_document("h100.json", h100)


def test_several_machines_get_the_hardware_selection_plots(report, write_document, tmp_path):
    a100, h100 = multi_machine_documents(write_document)
    prices = tmp_path / "prices.csv"
    prices.write_text("machine,price_per_hour,watts\nA100,2.0,400\nH100,4.0,700\n")
    out = tmp_path / "out"
    assert run_report(report, [a100, h100, "-o", out, "--reference-machine", "A100", "--prices", prices]) == 0
    points = drawn_points(out)
    relative = {(p["series"], p["x"]): p["y"] for p in points["machines-relative-tokens-per-s"]}
    assert relative[("NVIDIA A100-SXM4-80GB · CUDA 12.1", "amp-bf16")] == pytest.approx(1.0)
    assert relative[("NVIDIA H100 80GB HBM3 · CUDA 12.4", "amp-bf16")] == pytest.approx(3.0)
    per_dollar = {(p["series"], p["x"]): p["y"] for p in points["machines-per-dollar"]}
    assert per_dollar[("NVIDIA H100 80GB HBM3 · CUDA 12.4", "fp32")] == pytest.approx(30000.0 * 3600 / 4.0)
    per_watt = {(p["series"], p["x"]): p["y"] for p in points["machines-per-watt"]}
    assert per_watt[("NVIDIA A100-SXM4-80GB · CUDA 12.1", "tf32")] == pytest.approx(25000.0 / 400)
    speedup = {(p["series"], p["x"]): p["y"] for p in points["machines-speedup-transformer"]}
    assert speedup[("NVIDIA H100 80GB HBM3 · CUDA 12.4", "amp-bf16")] == pytest.approx(4.0)
    assert "machines-speedup-gemm" in points


def test_prices_as_json_and_a_machine_without_a_price(report, write_document, tmp_path):
    a100, h100 = multi_machine_documents(write_document)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps([{"machine": "H100", "price_per_hour": 4.0}]))
    out = tmp_path / "out"
    assert run_report(report, [a100, h100, "-o", out, "--prices", prices]) == 0
    machines = {p["series"] for p in drawn_points(out)["machines-per-dollar"]}
    assert machines == {"NVIDIA H100 80GB HBM3 · CUDA 12.4"}
    assert not (out / "machines-per-watt.png").exists()
    assert "no price_per_hour for: NVIDIA A100-SXM4-80GB" in (out / "index.html").read_text()


def test_folder_input_ignores_other_json(report, write_document, tmp_path):
    path = write_document("a100.json", document(bandwidth_cases()))
    (tmp_path / "gbench.json").write_text(json.dumps({"context": {}, "benchmarks": []}))
    out = tmp_path / "out"
    assert run_report(report, [tmp_path, "-o", out]) == 0
    assert (out / "bandwidth-nvidia-a100-sxm4-80gb-cuda-12-4.png").is_file()
    assert "gbench.json" in (out / "index.html").read_text()
    assert path.is_file()


@pytest.mark.parametrize("content, expected", [
    ('{"schema": "mpbench.result/2", "cases": []}', "schema 'mpbench.result/2'"),
    ('{"schema": "mpbench.result/1", "cases": [', "not valid JSON"),
    ('{"benchmarks": []}', "no \"schema\" field"),
    ('{"schema": "mpbench.result/1", "created": "x", "env": {}, "run": {}, "cases": [{}], "speedups": []}',
     "is malformed at $.run"),
    ('{"schema": "mpbench.result/1", "created": "x", "env": {}, "run": {"x": NaN}}', "NaN is not a JSON number"),
    ('{"schema": "mpbench.result/1", "created": "x", "env": {}, "run": {"x": -Infinity}}', "-Infinity is not a JSON"),
    ('{"schema": "mpbench.result/1", "created": "x", "env": {}, "run": {"x": 1e999}}', "1e999 overflows a double"),
    ('{"schema": "mpbench.result/1", "cases": [[1.5, 2, -1e400]]}', "the number -1e400 overflows a double"),
    ('1' + '0' * 400 + '.0', "the number 1000000000000000000000000000000000000000 overflows"),
    ('[' * 100000 + ']' * 100000, "nests deeper than 64 levels"),
    ('{"a":' * 65 + '1' + '}' * 65, "nests deeper than 64 levels"),
    ('{"schema": "mpbench.result/1"}\0{"cases": 3}', "holds a NUL byte at character 30"),
    ('\0{"schema": "mpbench.result/1"}', "holds a NUL byte at character 0"),
])
def test_unusable_document_exits_2_with_one_line(report, tmp_path, capsys, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(content)
    assert run_report(report, [path, "-o", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("report.py: error: ") and expected in err and err.count("\n") == 1, err


def test_a_document_off_the_schema_names_the_field(report, tmp_path, capsys):
    doc = full_document()
    doc["cases"][3]["metrics"]["seconds"]["median"] = "fast"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert run_report(report, [path, "-o", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert "malformed at $.cases[3].metrics.seconds.median" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("field, edit", [
    ("max", lambda s: s.update(max=s["min"] / 2)),
    ("median", lambda s: s.update(median=s["max"] * 1.5)),
    ("median", lambda s: s.update(median=s["min"] / 3)),
    ("mean", lambda s: s.update(mean=s["max"] * 2)),
    ("samples", lambda s: s.update(samples=s["samples"] + 1)),
    ("values", lambda s: s["values"].__setitem__(2, s["max"] * 10)),
])
def test_times_that_contradict_themselves_name_the_field(report, tmp_path, capsys, field, edit):
    doc = full_document()
    edit(doc["cases"][4]["metrics"]["seconds"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert run_report(report, [path, "-o", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert f"inconsistent at $.cases[4].metrics.seconds.{field}:" in err and err.count("\n") == 1, err


def test_a_fifo_given_as_a_document_exits_2_without_blocking(report, tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    assert run_report(report, [fifo, "-o", tmp_path / "out"]) == 2
    assert "not a regular file" in capsys.readouterr().err


def test_a_missing_result_schema_exits_2_naming_it(report, write_document, tmp_path, monkeypatch, capsys):
    doc = write_document("a.json", full_document())
    missing = tmp_path / "elsewhere" / "result-1.schema.json"
    monkeypatch.setattr(report, "SCHEMA_FILE", missing)
    monkeypatch.setattr(report, "_validator", None)
    assert run_report(report, [doc, "-o", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert f"cannot read the result schema '{missing}'" in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_a_failure_while_drawing_leaves_the_folder_as_it_was(report, write_document, tmp_path, monkeypatch):
    out = tmp_path / "out"
    out.mkdir()
    (out / "earlier.txt").write_text("kept")
    doc = write_document("a.json", full_document())

    def fail(*_):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(report, "write_html", fail)
    with pytest.raises(RuntimeError):
        run_report(report, [doc, "-o", out])
    assert sorted(p.name for p in out.iterdir()) == ["earlier.txt"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []
    monkeypatch.undo()
    assert run_report(report, [doc, "-o", out]) == 0
    assert (out / "index.html").is_file() and (out / "earlier.txt").read_text() == "kept"


def test_missing_file_exits_2_from_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, str(REPORT_PATH), str(tmp_path / "nope.json"), "-o", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.startswith("report.py: error: cannot read"), result.stderr


def test_unknown_reference_machine_or_bad_prices_exit_2(report, write_document, tmp_path, capsys):
    a100, h100 = multi_machine_documents(write_document)
    assert run_report(report, [a100, h100, "-o", tmp_path / "o1", "--reference-machine", "V100"]) == 2
    assert "matches 0 machines" in capsys.readouterr().err
    prices = tmp_path / "prices.csv"
    prices.write_text("machine,price_per_hour,watts\nA100,cheap,400\n")
    assert run_report(report, [a100, h100, "-o", tmp_path / "o2", "--prices", prices]) == 2
    assert "'cheap'" in capsys.readouterr().err


@pytest.mark.parametrize("suffix, row", [
    (".csv", "A100,nan,400"), (".csv", "A100,2.0,inf"), (".csv", "A100,-2.0,400"), (".csv", "A100,2.0,-inf"),
    (".csv", "A100,0,400"), (".csv", "A100,1e999,400"), (".json", {"A100": {"price_per_hour": "NaN"}}),
    (".json", {"A100": {"watts": "Infinity"}}), (".json", [{"machine": "A100", "price_per_hour": -0.5}]),
])
def test_prices_that_are_not_positive_finite_numbers_exit_2(report, write_document, tmp_path, capsys, suffix, row):
    a100, h100 = multi_machine_documents(write_document)
    prices = tmp_path / f"prices{suffix}"
    prices.write_text(json.dumps(row) if suffix == ".json" else f"machine,price_per_hour,watts\n{row}\n")
    assert run_report(report, [a100, h100, "-o", tmp_path / "out", "--prices", prices]) == 2
    err = capsys.readouterr().err
    assert "must be a positive, finite number" in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def staging_folders(parent: Path, out_name: str):
    return sorted(p.name for p in parent.iterdir() if p.name.startswith(f".{out_name}."))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_while_drawing_removes_the_staging_folder(write_document, tmp_path, signum):
    out = tmp_path / "out"
    out.mkdir()
    (out / "earlier.txt").write_text("kept")
    doc = write_document("a.json", full_document())
    child = subprocess.Popen([sys.executable, str(REPORT_PATH), str(doc), "-o", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not staging_folders(tmp_path, "out") and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert child.poll() is None, "report.py finished before it could be interrupted"
    child.send_signal(signum)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 128 + signum, err
    assert f"interrupted ({signal.Signals(signum).name}): the report was not written" in err, err
    assert staging_folders(tmp_path, "out") == []
    assert sorted(p.name for p in out.iterdir()) == ["earlier.txt"]


def test_staging_folders_of_killed_runs_are_removed(report, write_document, tmp_path):
    doc = write_document("cast.json", document(cast_cases()))
    (tmp_path / ".out.99999999.abc").mkdir()  # beyond the largest pid: its run is gone
    (tmp_path / f".out.{os.getppid()}.def").mkdir()  # a running process's: kept
    (tmp_path / ".outer.99999999.abc").mkdir()  # another report's name
    assert run_report(report, [doc, "-o", tmp_path / "out"]) == 0
    assert staging_folders(tmp_path, "out") == [f".out.{os.getppid()}.def"]
    assert (tmp_path / ".outer.99999999.abc").is_dir()


def test_reports_from_the_same_results_are_byte_identical(report, write_document, tmp_path):
    path = write_document("cast.json", document(cast_cases() + bandwidth_cases()))
    first, second = tmp_path / "first", tmp_path / "second"
    assert run_report(report, [path, "-o", first]) == 0
    assert run_report(report, [path, "-o", second]) == 0
    files = sorted(p.name for p in first.iterdir())
    assert files == sorted(p.name for p in second.iterdir()) and len(files) > 3
    for name in files:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_breakdown_reads_the_profiler_categories_object(report, tmp_path):
    """mpbench's profiler writes details.breakdown.categories; the flat form stays readable."""
    cases = transformer_cases(10000.0)
    for c in cases:
        flat = c["details"]["breakdown"]
        c["details"]["breakdown"] = {"categories": flat, "ops": {"layer0/qkv": 0.1}, "kernel_count": 7,
                                     "top_kernels": [], "gaps_s": 0.01, "region_s": 1.0, "unattributed_s": 0.0}
    (tmp_path / "t.json").write_text(json.dumps(document(cases)))
    assert run_report(report, [tmp_path / "t.json", "-o", tmp_path / "out"]) == 0
    points = next(v for k, v in drawn_points(tmp_path / "out").items() if k.startswith("transformer-breakdown"))
    assert {p["series"] for p in points} == {"gemm", "elementwise", "optimizer"}
    gemm_fp32 = next(p for p in points if p["series"] == "gemm" and p["x"] == "fp32")
    assert gemm_fp32["y"] == pytest.approx(0.5)


def cpu_document(cases, model="AMD EPYC 9454", flags=("avx2", "avx512f", "avx512_bf16"), cpu_isa="",
                 created="2026-12-02T10:00:00Z"):
    for c in cases:
        c["backend"] = "cpu"
    doc = document(cases, created=created)
    doc["run"].update(device="cpu", cpu_isa=cpu_isa)
    doc["env"]["cpu"] = {"model": model, "logical_cores": 2,
                         "flags": {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16")}}
    doc["env"]["gpus"] = []
    doc["speedups"] = [dict(s, backend="cpu") for s in doc["speedups"]]
    return doc


def machine_labels(out: Path) -> set[str]:
    page = (out / "index.html").read_text()
    return {h.split("</h3>")[0] for h in page.split("<h3>")[1:]}


def test_cpus_of_one_model_with_other_isa_flags_or_limits_are_other_machines(report, write_document, tmp_path):
    paths = [write_document("bf16.json", cpu_document(cast_cases())),
             write_document("no_bf16.json", cpu_document(cast_cases(), flags=("avx2", "avx512f"))),
             write_document("capped.json", cpu_document(cast_cases(), cpu_isa="avx2"))]
    out = tmp_path / "out"
    assert run_report(report, [*paths, "-o", out]) == 0
    assert machine_labels(out) == {"AMD EPYC 9454 · AVX512-BF16", "AMD EPYC 9454 · AVX-512",
                                   "AMD EPYC 9454 · AVX512-BF16 · ISA limit avx2"}
    assert len(list(out.glob("casts-*.svg"))) == 3
    for svg in out.glob("casts-*.svg"):  # each plot headed with its own machine
        title = next(label for label in machine_labels(out) if svg.stem == f"casts-{report.slug(label)}")
        assert f"Casts against the copy ceiling — {title}" in svg.read_text(), svg.name


def test_repeated_documents_of_one_machine_are_drawn_as_spread_not_dropped(report, write_document, tmp_path):
    runs = []
    for i, gbps in enumerate((1000.0, 1200.0, 1400.0)):
        cases = cast_cases()
        cases[1]["rates"]["gbps"] = gbps
        runs.append(write_document(f"run{i}.json", cpu_document(cases, created=f"2026-12-0{i + 1}T10:00:00Z")))
    failing = cast_cases()
    failing[1].update(status="error", message="conversion kernel crashed", metrics={})
    runs.append(write_document("run3.json", cpu_document(failing, created="2026-12-04T10:00:00Z")))
    out = tmp_path / "out"
    assert run_report(report, [*runs, "-o", out]) == 0
    assert len(machine_labels(out)) == 1
    cast = next(p for p in drawn_points(out)[next(n for n in drawn_points(out) if n.startswith("casts-"))]
                if p["series"] == "cast")
    assert (cast["x"], cast["low"], cast["high"], cast["runs"]) == (1200.0, 1000.0, 1400.0, 3)
    page = (out / "index.html").read_text()
    assert "conversion kernel crashed" in page and "run3.json" in page  # the failed repetition is listed


def test_baseline_first_value_labels_and_modes_not_run_with_their_reason(report, write_document, tmp_path):
    cases = transformer_cases(10000.0)
    cases.append(case("transformer", "gpt2-124m", "amp-fp16", {"layers": 12}, {}, status="skipped",
                      message="fp16 GEMMs need a GPU"))
    out = tmp_path / "out"
    assert run_report(report, [write_document("t.json", document(cases)), "-o", out]) == 0
    svg = next(out.glob("transformer-speedup-*.svg")).read_text()
    assert svg.index(">fp32<") < svg.index(">tf32<") < svg.index(">amp-bf16<")
    for label in ("1.00x", "2.50x", "4.00x"):
        assert label in svg, label
    assert "not run: amp-fp16" in svg
    assert "Not run here: amp-fp16 (skipped: fp16 GEMMs need a GPU)" in (out / "index.html").read_text()


def torch_document(mpbench_doc, slowdown):
    """PyTorch's counterpart of an mpbench document as scripts/torch_baseline.py writes it: the same
    cases on backend torch, each time multiplied by slowdown[precision] (default 1)."""
    doc = json.loads(json.dumps(mpbench_doc))
    for c in doc["cases"]:
        c["backend"] = "torch"
        c["details"] = {"pairs_with": {"backend": "cpu"}}
        if "seconds" in c["metrics"]:
            factor = slowdown.get(c["precision"], 1.0)
            s = c["metrics"]["seconds"]
            c["metrics"]["seconds"] = {k: [x * factor for x in v] if isinstance(v, list) else
                                       v if k == "samples" else v * factor for k, v in s.items()}
    doc["env"]["torch"] = {"version": "2.5.1"}
    doc["run"] = {"suites": doc["run"]["suites"], "device": "cpu"}
    fp32 = {c["name"]: c["metrics"]["seconds"]["median"] for c in doc["cases"]
            if c["precision"] == "fp32" and c["status"] == "ok"}
    doc["speedups"] = [{"suite": c["suite"], "name": c["name"], "backend": "torch", "baseline": "fp32",
                        "precision": c["precision"], "speedup": fp32[c["name"]] / c["metrics"]["seconds"]["median"]}
                       for c in doc["cases"] if c["precision"] != "fp32" and c["name"] in fp32]
    return doc


def test_torch_documents_are_drawn_beside_mpbench_not_in_its_series(report, write_document, tmp_path):
    mpbench = cpu_document(gemm_cases())
    bf16_slowdown = 5 + 20 * random.random()  # PyTorch's bf16 that many times mpbench's time
    paths = [write_document("mpbench.json", mpbench),
             write_document("torch.json", torch_document(mpbench, {"bf16": bf16_slowdown}))]
    alone, beside = tmp_path / "alone", tmp_path / "beside"
    assert run_report(report, [paths[0], "-o", alone]) == 0
    assert run_report(report, [*paths, "-o", beside]) == 0
    points = drawn_points(beside)
    peer = [name for name in points if name.startswith("peer-")]
    assert len(peer) == 1, sorted(points)
    # mpbench's own plots are the same with PyTorch's document as without it.
    assert {k: v for k, v in points.items() if k not in peer} == drawn_points(alone)
    ratios = {p["case"]: p["x"] for p in points[peer[0]]}
    assert ratios["gemm/square_1024/bf16"] == pytest.approx(bf16_slowdown)
    assert ratios["gemm/square_1024/fp32"] == pytest.approx(1.0)
    page = (beside / "index.html").read_text()
    assert "mpbench against PyTorch 2.5.1" in page
    assert f"<td>gemm/square_1024/bf16</td>" in page
    mine = next(s["speedup"] for s in mpbench["speedups"] if s["name"] == "square_1024" and s["precision"] == "bf16")
    row = page.split("<td>gemm/square_1024/bf16</td>")[-1].split("</tr>")[0]
    assert f"{bf16_slowdown:.2f}x" in row and f"{mine:.2f}x" in row and f"{mine / bf16_slowdown:.2f}x" in row, row
    cases_table = page.split("<h2>Cases")[1].split("<h2>mpbench against")[0]
    assert "torch" not in cases_table  # mpbench's own table holds its cases only


def test_a_torch_document_of_another_machine_is_noted_not_drawn(report, write_document, tmp_path):
    mpbench = cpu_document(gemm_cases())
    other = torch_document(mpbench, {})
    other["env"]["cpu"]["model"] = "Intel Xeon"
    paths = [write_document("mpbench.json", mpbench), write_document("torch.json", other)]
    out = tmp_path / "out"
    assert run_report(report, [*paths, "-o", out]) == 0
    assert not [name for name in drawn_points(out) if name.startswith("peer-")]
    assert "not drawn: no mpbench document of its machine" in (out / "index.html").read_text()


def test_without_matplotlib_one_line_says_how_to_get_it(tmp_path):
    shim = tmp_path / "shim" / "matplotlib"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text('raise ImportError("No module named matplotlib")\n')
    env = dict(os.environ, PYTHONPATH=str(shim.parent))
    result = subprocess.run([sys.executable, str(REPORT_PATH), str(tmp_path / "a.json"), "-o", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 2, result.stderr
    err = result.stderr
    assert err.startswith("report.py: error: matplotlib is not installed (") and err.count("\n") == 1, err
    assert "bash scripts/setup.sh" in err and "pip install -r scripts/requirements.txt" in err, err


@pytest.mark.parametrize("name, content, expected", [
    ("p.json", '{"A100": {"watts": 4', "is not valid JSON: Expecting ',' delimiter: line 1 column 21"),
    ("p.json", '"A100"', "at $: a prices file is a list of rows or an object of rows by machine, not a string"),
    ("p.json", '{"A100": 3}', 'at $["A100"]: a row is an object of machine, price_per_hour, watts, not a number'),
    ("p.json", '{"A100": null}', 'at $["A100"]: a row is an object'),
    ("p.json", '[{"machine": "A100", "watts": true}]', "at $[0].watts: true or false is not a number"),
    ("p.json", '[{"machine": "A100", "watts": [400]}]', "at $[0].watts: a list is not a number"),
    ("p.json", '[{"machine": 100, "watts": 400}]', "at $[0].machine: every row needs a machine"),
    ("p.json", '{"A100": {"price": 2.0}}', """at $["A100"]: unknown field 'price'"""),
    ("p.json", '{"V100": {"watts": 300}}', """at $["V100"].machine: 'V100' is part of no machine's label"""),
    ("p.json", '[{"machine": "A100", "watts": 3}, {"machine": "a100"}]', "at $[1].machine: 'a100' and 'A100' both"),
    ("p.csv", 'machine,price_per_hour,watts\nA100,2,"400\n', "at line 2: not CSV: unexpected end of data"),
    ("p.csv", 'machine,price_per_hour,watts\nA100,2,"4\n00"x\n', "at line 3: not CSV: ',' expected after '\"'"),
    ("p.json", '[{"machine": "A100"}, {"machine": "SXM4"}]', "at $[1].machine: 'SXM4' and 'A100' both name"),
    ("p.json", '{"A100": {"watts": NaN}}', "NaN is not a JSON number"),
    ("p.csv", "", "is empty: it needs the header machine,price_per_hour,watts"),
    ("p.csv", "machine,price,watts\nA100,2,400\n", "at line 1: the header is machine,price,watts"),
    ("p.csv", "machine,price_per_hour,watts\nA100,2,400,9\n", "at line 2: more cells than the header"),
    ("p.csv", "machine,price_per_hour,watts\nA100,2,400\nH100,-4,700\n", "at line 3, column price_per_hour: -4"),
    ("p.csv", "machine,price_per_hour,watts\nV100,2,400\n", "at line 2, column machine: 'V100' is part of no"),
    ("p.csv", "machine,price_per_hour,watts\nA1\x0000,2,400\n", "holds a NUL byte at character 31"),
    ("p.csv", b"machine,price_per_hour,watts\nA100\xe9,2,400\n", "is not valid CSV: 'utf-8' codec"),
    ("folder.csv", None, "not a regular file"),
    ("folder.json", None, "not a regular file"),
    ("missing.csv", "missing", "No such file or directory"),
])
def test_a_bad_prices_file_names_the_file_and_the_row(report, write_document, tmp_path, capsys, name, content,
                                                       expected):
    a100, h100 = multi_machine_documents(write_document)
    prices = tmp_path / name
    if content is None:
        prices.mkdir()
    elif content != "missing":
        prices.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert run_report(report, [a100, h100, "-o", tmp_path / "out", "--prices", prices]) == 2
    err = capsys.readouterr().err
    assert err.startswith("report.py: error: ") and err.count("\n") == 1, err
    assert str(prices) in err and expected in err, err
    assert not (tmp_path / "out").exists()


def test_a_prices_file_with_a_byte_order_mark_is_read(report, write_document, tmp_path):
    a100, h100 = multi_machine_documents(write_document)
    prices = tmp_path / "prices.csv"
    prices.write_text("\ufeffmachine,price_per_hour,watts\nA100,2.0,400\nH100,4.0,700\n", encoding="utf-8")
    assert run_report(report, [a100, h100, "-o", tmp_path / "out", "--prices", prices]) == 0
    assert (tmp_path / "out" / "machines-per-dollar.png").is_file()


SAFE_FILE_NAME = re.compile(r"[a-z0-9.-]{1,200}")
ODD_NAMES = ["a/b/../../c", "x\x01\x1b[31my\x7f\ttab\nline", "L" * 400, "模型-größe-😀",
             "cost $x^2$ and $\\frac{", "lone \ud800 surrogate"]


def assert_a_safe_report(out: Path):
    names = [p.name for p in out.iterdir()]
    assert all(SAFE_FILE_NAME.fullmatch(n) for n in names), names
    for svg in out.glob("*.svg"):
        xml.dom.minidom.parse(str(svg))  # a control character would make it unreadable
    parser = References()
    parser.feed((out / "index.html").read_text(encoding="utf-8"))
    assert all((out / target).is_file() for target in parser.targets)


@pytest.mark.filterwarnings("ignore:Glyph")  # a font without CJK or emoji draws boxes, and says so
@pytest.mark.parametrize("odd", ODD_NAMES, ids=["slashes", "control-characters", "400-characters", "non-ascii",
                                                "dollar-signs", "lone-surrogate"])
def test_odd_case_and_machine_names_give_a_report_with_safe_file_names(report, write_document, tmp_path, odd):
    cases = transformer_cases(10000.0) + gemm_cases() + cast_cases()
    for c in cases:
        if c["suite"] == "transformer" or (c["suite"] == "cast" and c["params"]["kernel"] != "copy"):
            c["name"] = odd
        elif c["params"].get("group") == "gpt2":
            c["name"] = odd + c["name"]
    path = write_document("odd.json", document(cases, gpu=f"GPU {odd}"))
    out = tmp_path / "out"
    assert run_report(report, [path, "-o", out]) == 0
    assert_a_safe_report(out)
    assert len(list(out.glob("*.png"))) == len(SINGLE_PLOTS) - 1  # all but the bandwidth plot
    assert all(unicodedata.category(ch) not in ("Cc", "Cs") for ch in (out / "index.html").read_text()
               .replace("\n", "")), "a control character or surrogate reached the page"


def test_names_alike_once_made_file_names_get_files_of_their_own(report, write_document, tmp_path):
    configs = transformer_cases(10000.0) + [dict(c, name="gpt2 124m") for c in transformer_cases(5000.0)]
    machines = [write_document("configs.json", document(configs)),
                write_document("x.json", document(cast_cases(), gpu="A100 x")),
                write_document("y.json", document(cast_cases(), gpu="a100-X"))]
    out = tmp_path / "out"
    assert run_report(report, [*machines, "-o", out]) == 0
    assert_a_safe_report(out)
    assert len(list(out.glob("transformer-speedup-*.svg"))) == 2
    assert len(list(out.glob("casts-*.svg"))) == 2
    titles = {json.loads(p.read_text())["title"] for p in out.glob("casts-*.json")}
    assert titles == {"Casts against the copy ceiling — A100 x · CUDA 12.4",
                      "Casts against the copy ceiling — a100-X · CUDA 12.4"}


@pytest.mark.parametrize("sample", [True, "fast", None])
def test_a_timing_sample_that_is_not_a_number_names_its_index(report, tmp_path, capsys, sample):
    """Samples are checked in bulk (a long run writes millions): the message stays jsonschema's."""
    doc = full_document()
    doc["cases"][4]["metrics"]["seconds"]["values"][3] = sample
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    assert run_report(report, [path, "-o", tmp_path / "out"]) == 2
    err = capsys.readouterr().err
    assert "malformed at $.cases[4].metrics.seconds.values[3]: " in err and err.count("\n") == 1, err


def test_timing_samples_cost_no_schema_step_each(report, monkeypatch):
    """A long run writes millions of samples: jsonschema's step per element (a validator built for
    each) made report.py take minutes on a 200 MB document. The steps must not grow with them."""
    validator_class = type(report.document_validator())
    steps = []
    descend = validator_class.descend

    def counted(self, *args, **kwargs):
        steps.append(1)
        return descend(self, *args, **kwargs)

    monkeypatch.setattr(validator_class, "descend", counted)

    def steps_to_check(repeat: int) -> int:
        doc = full_document()
        stats = doc["cases"][4]["metrics"]["seconds"]
        stats["values"] *= repeat
        stats["samples"] = len(stats["values"])
        steps.clear()
        report.check_document(doc, Path("long.json"))
        return len(steps)

    assert steps_to_check(20000) == steps_to_check(1)


def one_report(report, write_document, tmp_path, docs, *args):
    """The report of `docs` ({file name: document}): its plots' points and its page."""
    out = tmp_path / "out"
    assert run_report(report, [*(write_document(name, doc) for name, doc in docs.items()), "-o", out, *args]) == 0
    return out, drawn_points(out), (out / "index.html").read_text()


def casts_plot(points):
    return next(v for k, v in points.items() if k.startswith("casts-"))


def test_the_copy_line_is_the_one_fastest_copy_of_the_casts_size(report, write_document, tmp_path):
    cases = cast_cases()
    n = cases[0]["params"]["elements"]
    cases.append(case("cast", f"copy_wide/n={n}", "fp32", {"kernel": "copy", "elements": n, "bytes": 8.0 * n},
                      {"gbps": 1600.0}, median=8.0 * n / 1600e9))
    cases.append(case("cast", "copy/n=65536", "fp32", {"kernel": "copy", "elements": 65536, "bytes": 8.0 * 65536},
                      {"gbps": 4000.0}, median=8.0 * 65536 / 4000e9))  # in cache: no ceiling for 2^24 elements
    cases[1]["details"]["copy_reference"] = {"name": f"copy_wide/n={n}", "precision": "fp32"}
    _, points, page = one_report(report, write_document, tmp_path, {"c.json": document(cases)})
    lines = [p for p in casts_plot(points) if p["y"] is None]
    assert [(p["series"], p["x"], p["case"]) for p in lines] == [("copy ceiling", 1600.0,
                                                                   f"cast/copy_wide/n={n}/cuda/fp32")]
    assert "fastest fp32 copy of the same elements measured in the same run (16,777,216 elements, 1600 GB/s)" in page
    assert "the most a memory-bound cast can reach" in page


def test_casts_faster_than_the_copy_say_the_line_is_not_a_ceiling(report, write_document, tmp_path):
    cases = cast_cases()
    cases[1]["rates"].update(gbps=1800.0, pct_of_copy=120.0)
    out, points, page = one_report(report, write_document, tmp_path, {"c.json": document(cases)})
    assert {p["series"] for p in casts_plot(points)} == {"cast", "fp32 copy (not a ceiling)"}
    assert "1 of the casts exceed it, so it is not a ceiling on this machine" in page
    assert "memory-bound cast can reach" not in page
    svg = next(out.glob("casts-*.svg")).read_text()
    assert "Casts against the fp32 copy of the same run" in svg and "1 casts exceed it, not a ceiling here" in svg


def test_cast_error_bars_are_the_spread_of_the_runs_samples(report, write_document, tmp_path):
    doc = document(cast_cases())
    _, points, page = one_report(report, write_document, tmp_path, {"c.json": doc})
    cast = next(p for p in casts_plot(points) if p["series"] == "cast")
    seconds = doc["cases"][1]["metrics"]["seconds"]
    spread = seconds["stddev"] / seconds["median"]
    assert spread > 0.005
    assert (cast["low"], cast["high"], cast["runs"]) == pytest.approx((1200.0 / (1 + spread), 1200.0 * (1 + spread), 1))
    assert "Error bars: one standard deviation of a cast's timing samples within its run" in page.replace("&#x27;", "'")


def test_the_printed_share_is_the_documents_pct_of_copy(report, write_document, tmp_path):
    cases = cast_cases()
    cases[1]["rates"]["pct_of_copy"] = 77.7  # 1200 over 1500 GB/s would be 80: the recorded figure wins
    out, points, page = one_report(report, write_document, tmp_path, {"c.json": document(cases)})
    assert next(p for p in casts_plot(points) if p["series"] == "cast")["pct_of_copy"] == 77.7
    svg = next(out.glob("casts-*.svg")).read_text()
    assert "1200 GB/s (77.7% of copy)" in svg and "80.0% of copy" not in svg
    assert "the document's own rates.pct_of_copy" in page.replace("&#x27;", "'")


def test_merged_runs_print_the_median_of_their_recorded_shares(report, write_document, tmp_path):
    docs = {}
    for i, share in enumerate((70.0, 90.0, 75.0)):
        cases = cast_cases()
        cases[1]["rates"]["pct_of_copy"] = share
        docs[f"run{i}.json"] = cpu_document(cases, created=f"2026-12-0{i + 1}T10:00:00Z")
    out, points, page = one_report(report, write_document, tmp_path, docs)
    assert next(p for p in casts_plot(points) if p["series"] == "cast")["pct_of_copy"] == 75.0
    assert "(75.0% of copy, median of 3 runs)" in next(out.glob("casts-*.svg")).read_text()
    assert "the median of the runs' recorded shares" in page.replace("&#x27;", "'")


def compared_machines():
    """An A100 measured twice (30 steps, 2 threads) and an H100 once (100 steps, 8 threads) whose
    tf32 is slower than its fp32 and whose amp-bf16 failed."""
    a100 = []
    for i, speed in enumerate((1.0, 1.1)):
        cases = transformer_cases(10000.0 * speed)
        for c in cases:
            c["params"]["steps"] = 30
            tf32_faster = speed if c["precision"] == "tf32" else 1
            c["metrics"]["seconds"] = seconds(c["metrics"]["seconds"]["median"] / tf32_faster)
        doc = document(cases, gpu="NVIDIA A100-SXM4-80GB", cuda="12.1", created=f"2026-12-0{i + 1}T10:00:00Z")
        doc["env"]["cpu"]["threads"] = 2
        a100.append(doc)
    cases = transformer_cases(30000.0)
    for c in cases:
        c["params"]["steps"] = 100
    cases[1]["metrics"]["seconds"] = seconds(2.0)  # tf32 at half the speed of fp32
    cases[1]["rates"]["tokens_per_s"] = 15000.0
    cases[2].update(status="error", message="CUDA out of memory", metrics={}, rates={})
    h100 = document(cases, gpu="NVIDIA H100 80GB HBM3", cuda="12.4", created="2026-12-03T10:00:00Z")
    h100["env"]["cpu"]["threads"] = 8
    return {"a1.json": a100[0], "a2.json": a100[1], "h100.json": h100}


A100, H100 = "NVIDIA A100-SXM4-80GB · CUDA 12.1", "NVIDIA H100 80GB HBM3 · CUDA 12.4"


def test_machine_speedups_show_spread_runs_and_why_a_bar_is_missing(report, write_document, tmp_path):
    docs = compared_machines()
    out, points, page = one_report(report, write_document, tmp_path, docs)
    bars = {(p["series"], p["x"]): p for p in points["machines-speedup-transformer"]}
    a100_tf32 = [s["speedup"] for name in ("a1.json", "a2.json") for s in docs[name]["speedups"]
                 if s["precision"] == "tf32"]
    tf32 = bars[(A100, "tf32")]
    assert (tf32["low"], tf32["high"], tf32["runs"]) == pytest.approx((min(a100_tf32), max(a100_tf32), 2))
    single = bars[(H100, "tf32")]
    assert single["y"] == pytest.approx(0.5) and single["runs"] == 1
    assert single["low"] < single["y"] < single["high"]  # the two times' spreads within the run
    assert bars[(H100, "amp-bf16")]["y"] is None
    assert bars[(H100, "amp-bf16")]["missing"] == "failed: CUDA out of memory"
    svg = (out / "machines-speedup-transformer.svg").read_text()
    for text in ("failed: CUDA out of memory", "2 runs", "1 run", "2 threads", "8 threads", "64 logical cores",
                 "30 steps", "100 steps", "below 1x: slower than it"):
        assert text in svg, text
    assert f"different step counts (params.steps): {A100}: 30 steps; {H100}: 100 steps" in page


def test_machine_bars_are_coloured_by_their_side_of_1x(report, write_document, tmp_path):
    machines = report.group_by_machine([(Path(name), doc) for name, doc in compared_machines().items()])
    plot = report.plot_speedup_by_machine(machines, "transformer")
    heights = {round(p.get_height(), 9): matplotlib.colors.to_hex(p.get_facecolor())
               for p in plot.figure.axes[0].patches}
    drawn = [p for p in plot.points if p["y"] is not None]
    assert len(heights) == len(drawn) == 3  # tf32 twice, amp-bf16 on the A100
    for p in drawn:
        assert heights[round(p["y"], 9)] == ("#2ca02c" if p["y"] >= 1 else "#d62728"), p
    report.plt.close(plot.figure)


def test_relative_and_per_cost_plots_show_spread_and_name_what_is_missing(report, write_document, tmp_path):
    prices = tmp_path / "prices.csv"
    prices.write_text("machine,price_per_hour,watts\nA100,2.0,\nH100,4.0,700\n")
    _, points, page = one_report(report, write_document, tmp_path, compared_machines(),
                                 "--reference-machine", "A100", "--prices", prices)
    relative = {(p["series"], p["x"]): p for p in points["machines-relative-tokens-per-s"]}
    assert relative[(H100, "fp32")]["low"] < relative[(H100, "fp32")]["y"] < relative[(H100, "fp32")]["high"]
    assert relative[(A100, "amp-bf16")]["runs"] == 2
    assert relative[(H100, "amp-bf16")]["missing"] == "failed: CUDA out of memory"
    per_dollar = {(p["series"], p["x"]): p for p in points["machines-per-dollar"]}
    assert per_dollar[(H100, "fp32")]["y"] == pytest.approx(30000.0 * 3600 / 4.0)
    assert per_dollar[(H100, "fp32")]["low"] < per_dollar[(H100, "fp32")]["y"] < per_dollar[(H100, "fp32")]["high"]
    assert per_dollar[(H100, "amp-bf16")]["missing"] == "failed: CUDA out of memory"
    assert f"Not drawn, no watts in the prices file: {A100}." in page
