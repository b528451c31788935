"""report.py's fp8-crossover plot on fixture gemm documents built as conftest.py builds them, the
fp8-e4m3 cases with the quantize cost the gemm suite records (docs/result-format.md)."""
import json
import statistics
from pathlib import Path

import pytest

from conftest import case, document, gemm_case

BF16_TFLOPS = 200.0
SIZES = (256, 512, 1024, 2048, 4096)
END_TO_END = "fp8-e4m3 end to end (casts from bf16, then GEMM)"


def fp8_case(n, bf16_seconds, gemm_ratio, end_to_end_ratio, share, with_quantize=True):
    """An fp8-e4m3 square case whose GEMM takes gemm_ratio and whose casts plus GEMM take
    end_to_end_ratio times bf16's time, the casts `share` of the latter, as gemm_suite.cpp writes it."""
    flops = 2.0 * n ** 3
    gemm_s, end_to_end_s = bf16_seconds * gemm_ratio, bf16_seconds * end_to_end_ratio
    rates = {"tflops": flops / gemm_s / 1e12}
    details = {}
    if with_quantize:
        rates["tflops_end_to_end"] = flops / end_to_end_s / 1e12
        details["quantize"] = {"seconds": share * end_to_end_s, "gemm_seconds": gemm_s,
                               "end_to_end_seconds": end_to_end_s, "share": share, "from": "bf16",
                               "recipe": "current scaling, per tensor"}
    params = {"group": "square", "m": n, "n": n, "k": n, "batch": 1, "flops": flops}
    return case("gemm", f"square_{n}", "fp8-e4m3", params, rates, median=gemm_s, details=details)


def sweep(end_to_end_ratios, gemm_ratio=0.5, with_quantize=True, sizes=SIZES):
    """bf16 and fp8-e4m3 cases per size: fp8's GEMM alone gemm_ratio of bf16's time, end to end the
    ratio given for that size; the casts' share is what the end-to-end time holds beyond the GEMM."""
    cases = []
    for n, ratio in zip(sizes, end_to_end_ratios):
        bf16 = gemm_case(f"square_{n}", "square", n, n, n, "bf16", BF16_TFLOPS)
        share = (ratio - gemm_ratio) / ratio
        cases += [bf16, fp8_case(n, bf16["metrics"]["seconds"]["median"], gemm_ratio, ratio, share, with_quantize)]
    return cases


def cpu_document(cases, created="2026-12-02T10:00:00Z"):
    for c in cases:
        c["backend"] = "cpu"
    doc = document(cases, created=created)
    doc["run"]["device"] = "cpu"
    doc["env"]["gpus"] = []
    return doc


def draw(report, write_document, tmp_path, *docs):
    paths = [write_document(f"run{i}.json", doc) for i, doc in enumerate(docs)]
    out = tmp_path / "out"
    assert report.main([*map(str, paths), "-o", str(out)]) == 0
    return out


def crossover_plot(out: Path) -> dict:
    (data,) = out.glob("fp8-crossover-*.json")
    return json.loads(data.read_text())


def series(plot: dict, name: str) -> dict:
    return {p["x"]: p for p in plot["points"] if p["series"] == name}


def caption(out: Path) -> str:
    page = (out / "index.html").read_text()
    return page.split("<figure id='fp8-crossover-")[1].split("</figcaption>")[0]


def test_the_three_series_are_time_relative_to_bf16(report, write_document, tmp_path):
    ratios = (2.0, 1.4, 0.9, 0.7, 0.6)
    out = draw(report, write_document, tmp_path, document(sweep(ratios)))
    plot = crossover_plot(out)
    assert {p["series"] for p in plot["points"]} == {"bf16 GEMM", "fp8-e4m3 GEMM alone", END_TO_END, "crossover"}
    assert {n: p["y"] for n, p in series(plot, "bf16 GEMM").items()} == {n: 1.0 for n in SIZES}
    for n, p in series(plot, "fp8-e4m3 GEMM alone").items():
        assert p["y"] == pytest.approx(0.5) and p["case"] == f"gemm/square_{n}/cuda/fp8-e4m3"
    end_to_end = series(plot, END_TO_END)
    assert sorted(end_to_end) == list(SIZES)
    for n, ratio in zip(SIZES, ratios):
        assert end_to_end[n]["y"] == pytest.approx(ratio)
        assert end_to_end[n]["quantize_share"] == pytest.approx((ratio - 0.5) / ratio)
    svg = next(out.glob("fp8-crossover-*.svg")).read_text()
    assert "casts 75.0%" in svg and "casts 16.7%" in svg  # the shares at 256 ((2 - 0.5) / 2) and 4096


def test_crossover_is_the_smallest_size_fp8_wins_from_on(report, write_document, tmp_path):
    out = draw(report, write_document, tmp_path, document(sweep((2.0, 1.4, 0.9, 0.7, 0.6))))
    assert series(crossover_plot(out), "crossover") == {1024: {"series": "crossover", "x": 1024, "y": None,
                                                               "case": None}}
    assert "Crossover (dotted): N = 1024," in caption(out)
    assert "crossover N = 1024" in next(out.glob("fp8-crossover-*.svg")).read_text()


def test_a_win_below_a_loss_does_not_count(report, write_document, tmp_path):
    out = draw(report, write_document, tmp_path, document(sweep((0.8, 1.3, 0.9, 1.1, 0.7))))
    assert list(series(crossover_plot(out), "crossover")) == [4096]


def test_no_crossover_where_fp8_never_wins_or_loses_at_the_largest_size(report, write_document, tmp_path):
    for ratios in ((2.0, 1.6, 1.3, 1.1, 1.05), (0.6, 0.7, 0.8, 0.9, 1.2)):
        out = draw(report, write_document, tmp_path, document(sweep(ratios)))
        (point,) = series(crossover_plot(out), "crossover").values()
        assert point["x"] is None and point["missing"] == "none measured"
        assert "Crossover: none measured" in caption(out)
        assert "crossover: none measured" in next(out.glob("fp8-crossover-*.svg")).read_text()


def test_repeated_runs_are_drawn_as_their_median_with_the_range(report, write_document, tmp_path):
    docs = [document(sweep(ratios), created=f"2026-12-0{i + 1}T10:00:00Z")
            for i, ratios in enumerate(((2.0,) * 5, (1.0,) * 5, (0.5,) * 5))]
    point = series(crossover_plot(draw(report, write_document, tmp_path, *docs)), END_TO_END)[1024]
    rates = [BF16_TFLOPS / r for r in (2.0, 1.0, 0.5)]  # fp8's end-to-end TFLOP/s in each run
    assert point["runs"] == 3
    assert point["y"] == pytest.approx(BF16_TFLOPS / statistics.median(rates))
    assert (point["low"], point["high"]) == pytest.approx((BF16_TFLOPS / max(rates), BF16_TFLOPS / min(rates)))
    assert point["quantize_share"] == pytest.approx(statistics.median([(r - 0.5) / r for r in (2.0, 1.0, 0.5)]))


def test_cases_not_ok_are_not_drawn(report, write_document, tmp_path):
    cases = sweep((2.0, 1.4, 0.9, 0.7, 0.6))
    failed = next(c for c in cases if c["name"] == "square_4096" and c["precision"] == "fp8-e4m3")
    failed.update(status="error", message="CUBLAS_STATUS_NOT_SUPPORTED")
    lost = next(c for c in cases if c["name"] == "square_256" and c["precision"] == "bf16")
    lost.update(status="skipped", message="timed out")
    plot = crossover_plot(draw(report, write_document, tmp_path, document(cases)))
    for name in ("bf16 GEMM", "fp8-e4m3 GEMM alone", END_TO_END):
        assert sorted(series(plot, name)) == [512, 1024, 2048], name
    assert list(series(plot, "crossover")) == [1024]


def test_a_cpu_gets_its_own_plot(report, write_document, tmp_path):
    out = draw(report, write_document, tmp_path, cpu_document(sweep((1.2, 1.1, 1.05, 0.95, 0.9))))
    (svg,) = out.glob("fp8-crossover-*.svg")
    assert svg.stem == f"fp8-crossover-{report.slug('AMD EPYC 7763 · AVX2')}"
    assert series(crossover_plot(out), END_TO_END)[2048]["case"] == "gemm/square_2048/cpu/fp8-e4m3"
    assert list(series(crossover_plot(out), "crossover")) == [2048]


def test_documents_without_the_quantize_cost_draw_no_plot_and_say_why(report, write_document, tmp_path):
    out = draw(report, write_document, tmp_path, document(sweep((2.0,) * 5, with_quantize=False)))
    assert not list(out.glob("fp8-crossover-*"))
    assert list(out.glob("gemm-size-*.json"))  # the rest of the report is drawn
    assert "no fp8 crossover plot: its fp8-e4m3 GEMM cases carry no details.quantize" in \
        (out / "index.html").read_text()


def test_no_plot_without_bf16_of_the_same_shapes(report, write_document, tmp_path):
    cases = [c for c in sweep((0.7,) * 5) if c["precision"] == "fp8-e4m3"]
    out = draw(report, write_document, tmp_path, document(cases))
    assert not list(out.glob("fp8-crossover-*"))
    assert "no fp8 crossover plot: no ok bf16 case of the same shapes" in (out / "index.html").read_text()


def test_other_gemm_documents_say_nothing(report, write_document, tmp_path):
    cases = [c for c in sweep((0.7,) * 5) if c["precision"] == "bf16"]
    out = draw(report, write_document, tmp_path, document(cases))
    assert not list(out.glob("fp8-crossover-*"))
    assert "fp8 crossover" not in (out / "index.html").read_text()
