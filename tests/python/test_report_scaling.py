"""report.py's data-parallel scaling page: documents of world sizes 1, 2 and 4, two modes and two
--grad-reduce values on one machine, with known tokens/s and communication times."""
import json

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("jsonschema")

from conftest import case, document  # noqa: E402

CONFIG = "gpt2-124m_b8_t1024"
TOKENS_PER_STEP = 8 * 1024
# Step seconds per (mode, grad_reduce, world size); world size 1 reduces nothing (grad_reduce None).
STEP = {
    ("fp32", None, 1): 1.0, ("amp-bf16", None, 1): 0.5,
    ("fp32", "fp32", 2): 1.25, ("fp32", "bf16", 2): 1.125, ("amp-bf16", "fp32", 2): 0.8, ("amp-bf16", "bf16", 2): 0.625,
    ("fp32", "fp32", 4): 1.6, ("fp32", "bf16", 4): 1.25, ("amp-bf16", "fp32", 4): 1.0, ("amp-bf16", "bf16", 4): 0.8,
}
# Exposed communication seconds per step.
COMM = {
    ("fp32", "fp32", 2): 0.25, ("fp32", "bf16", 2): 0.125, ("amp-bf16", "fp32", 2): 0.3, ("amp-bf16", "bf16", 2): 0.125,
    ("fp32", "fp32", 4): 0.6, ("fp32", "bf16", 4): 0.25, ("amp-bf16", "fp32", 4): 0.5, ("amp-bf16", "bf16", 4): 0.3,
}
MACHINE = "nvidia-a100-sxm4-80gb-cuda-12-4"


def training_case(mode, reduce, world_size):
    step = STEP[(mode, reduce, world_size)]
    details = {}
    if world_size > 1:
        comm = COMM[(mode, reduce, world_size)]
        details["communication"] = {"library": "NCCL", "dtype": reduce, "seconds_per_step": comm,
                                    "exposed_seconds_per_step": comm}
    params = {"batch": 8, "seq_len": 1024, "tokens_per_step": TOKENS_PER_STEP, "world_size": world_size,
              "grad_reduce": reduce}
    return case("transformer", CONFIG, mode, params, {"tokens_per_s": TOKENS_PER_STEP / step}, median=step,
                details=details)


def job_document(world_size, reduce, created, modes=("fp32", "amp-bf16")):
    doc = document([training_case(mode, reduce, world_size) for mode in modes], created=created)
    doc["run"]["world_size"] = world_size
    return doc


def write_jobs(write_document, sizes=(1, 2, 4)):
    paths, day = [], 1
    for n in sizes:
        for reduce in ([None] if n == 1 else ["fp32", "bf16"]):
            paths.append(write_document(f"job-{n}-{reduce}.json", job_document(n, reduce, f"2026-12-0{day}T10:00:00Z")))
            day += 1
    return paths


def machine_of(report, paths):
    documents, _ = report.load_documents(paths)
    (machine,) = report.group_by_machine(documents)
    return machine


def per_rank(mode, reduce, n):
    return TOKENS_PER_STEP / STEP[(mode, reduce, n)]


def test_series_hold_the_rates_efficiency_and_shares(report, write_document):
    pages = report.scaling_series(machine_of(report, write_jobs(write_document)))
    assert list(pages) == [CONFIG]
    page = pages[CONFIG]
    assert page["world_sizes"] == [1, 2, 4] and page["missing"] == []
    assert list(page["series"]) == ["fp32 · grad bf16", "fp32 · grad fp32", "amp-bf16 · grad bf16",
                                    "amp-bf16 · grad fp32"]
    for s in page["series"].values():
        mode, reduce = s["mode"], s["grad_reduce"]
        assert [p["world_size"] for p in s["points"]] == [1, 2, 4]
        base = per_rank(mode, None, 1)
        for p in s["points"]:
            n = p["world_size"]
            key = (mode, None if n == 1 else reduce, n)
            assert p["per_rank"] == pytest.approx(TOKENS_PER_STEP / STEP[key])
            assert p["total"] == pytest.approx(n * TOKENS_PER_STEP / STEP[key])
            assert p["efficiency"] == pytest.approx(TOKENS_PER_STEP / STEP[key] / base)
            assert p["exposed_share"] == (None if n == 1 else pytest.approx(COMM[key] / STEP[key]))
    # By hand: fp32 on 4 ranks with fp32 gradients takes 1.6 s a step against 1.0 s on one rank.
    fp32 = {p["world_size"]: p for p in page["series"]["fp32 · grad fp32"]["points"]}
    assert fp32[4]["efficiency"] == pytest.approx(0.625)
    assert fp32[4]["total"] == pytest.approx(4 * 8192 / 1.6)
    assert fp32[4]["exposed_share"] == pytest.approx(0.375)
    bf16 = {p["world_size"]: p for p in page["series"]["amp-bf16 · grad bf16"]["points"]}
    assert bf16[2]["efficiency"] == pytest.approx(0.8)
    assert bf16[4]["exposed_share"] == pytest.approx(0.375)


def test_report_draws_the_scaling_page(report, write_document, tmp_path):
    paths = write_jobs(write_document)
    out = tmp_path / "out"
    assert report.main([*map(str, paths), "-o", str(out)]) == 0
    data = json.loads((out / f"transformer-scaling-{MACHINE}.json").read_text())
    points = {(p["series"], p["x"]): p["y"] for p in data["points"]}
    assert points[("fp32 · grad fp32 efficiency", 4)] == pytest.approx(0.625)
    assert points[("amp-bf16 · grad fp32 efficiency", 2)] == pytest.approx(0.625)  # 0.5 s over 0.8 s
    assert points[("amp-bf16 · grad bf16 total", 4)] == pytest.approx(4 * 8192 / 0.8)
    assert points[("fp32 · grad bf16 per rank", 1)] == pytest.approx(8192.0)
    assert points[("fp32 · grad fp32 exposed communication", 2)] == pytest.approx(0.2)
    assert points[("fp32 · grad fp32 rest of the step", 2)] == pytest.approx(0.8)
    assert ("fp32 · grad fp32 exposed communication", 1) not in points  # one rank reduces nothing
    assert not any("missing" in p for p in data["points"])
    assert "Data-parallel scaling" in (out / "index.html").read_text()


def test_without_world_size_1_there_is_no_efficiency_and_the_figure_says_why(report, write_document, tmp_path):
    paths = write_jobs(write_document, sizes=(2, 4))
    page = report.scaling_series(machine_of(report, paths))[CONFIG]
    for s in page["series"].values():
        assert [p["world_size"] for p in s["points"]] == [2, 4]
        assert all(p["efficiency"] is None for p in s["points"])
        assert s["missing"] == f"no world-size-1 run of {s['mode']} on this machine"
    out = tmp_path / "out"
    assert report.main([*map(str, paths), "-o", str(out)]) == 0
    data = json.loads((out / f"transformer-scaling-{MACHINE}.json").read_text())
    efficiency = [p for p in data["points"] if p["series"].endswith("efficiency")]
    assert len(efficiency) == 4 and all(p["y"] is None and "no world-size-1 run" in p["missing"] for p in efficiency)
    svg = (out / f"transformer-scaling-{MACHINE}.svg").read_text()
    assert "no efficiency line for fp32, amp-bf16:" in svg and "no world-size-1 run of it" in svg
    assert "No efficiency line: fp32 · grad bf16: no world-size-1 run of fp32" in (out / "index.html").read_text()
    # The shares are still drawn: they need no baseline.
    shares = {p["x"]: p["y"] for p in data["points"] if p["series"] == "amp-bf16 · grad fp32 exposed communication"}
    assert shares == {2: pytest.approx(0.375), 4: pytest.approx(0.5)}


def test_one_world_size_draws_no_scaling_page(report, write_document, tmp_path):
    paths = write_jobs(write_document, sizes=(2,))
    assert report.scaling_series(machine_of(report, paths)) == {}
    out = tmp_path / "out"
    assert report.main([*map(str, paths), "-o", str(out)]) == 0
    assert not list(out.glob("transformer-scaling-*"))


def test_machines_get_pages_of_their_own(report, write_document, tmp_path):
    paths = write_jobs(write_document)
    for n, reduce in ((1, None), (2, "fp32")):  # twice the A100's tokens/s
        other = job_document(n, reduce, "2026-12-09T10:00:00Z")
        other["env"]["gpus"][0]["name"] = "NVIDIA H100 80GB HBM3"
        for c in other["cases"]:
            c["rates"]["tokens_per_s"] *= 2
        paths.append(write_document(f"h100-{n}.json", other))
    out = tmp_path / "out"
    assert report.main([*map(str, paths), "-o", str(out)]) == 0
    h100 = "nvidia-h100-80gb-hbm3-cuda-12-4"
    assert sorted(p.name for p in out.glob("transformer-scaling-*.json")) == [
        f"transformer-scaling-{MACHINE}.json", f"transformer-scaling-{h100}.json"]
    for machine, factor, sizes in ((MACHINE, 1, {1, 2, 4}), (h100, 2, {1, 2})):
        points = json.loads((out / f"transformer-scaling-{machine}.json").read_text())["points"]
        fp32 = {p["x"]: p for p in points if p["series"] == "fp32 · grad fp32 per rank"}
        assert set(fp32) == sizes
        assert fp32[2]["y"] == pytest.approx(factor * 8192 / 1.25) and fp32[2]["runs"] == 1


def broken(change):
    doc = job_document(2, "fp32", "2026-12-02T10:00:00Z")
    change(doc, doc["cases"][1])
    return doc


def set_comm(key, value):
    return lambda doc, c: c["details"]["communication"].__setitem__(key, value)


BAD = {
    "world size a string": (lambda doc, c: c["params"].__setitem__("world_size", "2"),
                            "$.cases[1].params.world_size", '"2" is not a count of ranks'),
    "world size 0": (lambda doc, c: c["params"].__setitem__("world_size", 0),
                     "$.cases[1].params.world_size", "0 is not a count of ranks"),
    "world size true": (lambda doc, c: c["params"].__setitem__("world_size", True),
                        "$.cases[1].params.world_size", "true is not a count of ranks"),
    "run world size 2.5": (lambda doc, c: doc["run"].__setitem__("world_size", 2.5),
                           "$.run.world_size", "2.5 is not a count of ranks"),
    "sizes disagree": (lambda doc, c: doc["run"].__setitem__("world_size", 4),
                       "$.cases[0].params.world_size", "2, but run.world_size is 4"),
    "grad reduce a number": (lambda doc, c: c["params"].__setitem__("grad_reduce", 16),
                             "$.cases[1].params.grad_reduce", "16 is neither null nor the name of a dtype"),
    "grad reduce null on 2 ranks": (lambda doc, c: c["params"].__setitem__("grad_reduce", None),
                                    "$.cases[1].params.grad_reduce", "null on 2 ranks"),
    "communication a list": (lambda doc, c: c["details"].__setitem__("communication", [0.1]),
                             "$.cases[1].details.communication", "a list, not an object"),
    "seconds a string": (set_comm("seconds_per_step", "0.1"),
                         "$.cases[1].details.communication.seconds_per_step", '"0.1" is not a number of seconds'),
    "negative exposed": (set_comm("exposed_seconds_per_step", -0.1),
                         "$.cases[1].details.communication.exposed_seconds_per_step", "-0.1 is not a number"),
    "exposed above the total": (set_comm("exposed_seconds_per_step", 0.5),
                                "$.cases[1].details.communication.exposed_seconds_per_step",
                                "0.5 is more than seconds_per_step 0.3"),
    "exposed above the step": (lambda doc, c: c["details"]["communication"].update(
                                   seconds_per_step=0.9, exposed_seconds_per_step=0.9),
                               "$.cases[1].details.communication.exposed_seconds_per_step",
                               "0.9 is more than the step's median time 0.8"),
    "library a number": (set_comm("library", 7), "$.cases[1].details.communication.library", "a number, not a string"),
}


@pytest.mark.parametrize("name", BAD)
def test_malformed_world_size_or_communication_is_refused(report, write_document, tmp_path, capsys, name):
    change, where, why = BAD[name]
    path = write_document("bad.json", broken(change))
    good = write_jobs(write_document, sizes=(1,))
    out = tmp_path / "out"
    assert report.main([str(good[0]), str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"report.py: error: '{path}' is malformed at {where}: "), err[0]
    assert why in err[0], err[0]
    assert not out.exists()
