"""A real `mpbench run` on this machine writes a document that validates against the JSON Schema,
and the schema rejects what it should."""
import copy
import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from conftest import smallest_bandwidth_elements

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "results" / "schema" / "result-1.schema.json").read_text())
BINARY = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason=f"mpbench is not built at {BINARY}")


@pytest.fixture(scope="module")
def document(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "result.json"
    n = smallest_bandwidth_elements(BINARY)
    subprocess.run([str(BINARY), "run", "--suite", "all", "--device", "cpu", "--quick", "--filter",
                    rf"square_512/|align_1023/|bandwidth/(memcpy|triad|copy)/n={n}/|cast/copy/|f32_to_bf16/|e4m3",
                    "--config", "tiny", "--steps", "4", "--out", str(out)], check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def test_real_run_validates(document):
    jsonschema.validate(document, SCHEMA)
    suites = {c["suite"] for c in document["cases"]}
    assert suites == {"gemm", "bandwidth", "cast", "transformer"}


def test_real_run_has_skips_with_reasons_and_speedups(document):
    skipped = [c for c in document["cases"] if c["status"] == "skipped"]
    assert skipped and all(c["message"] for c in skipped)
    assert any(s["suite"] == "gemm" and s["precision"] == "bf16" for s in document["speedups"])
    assert any(s["suite"] == "bandwidth" and s["precision"] == "fp16" for s in document["speedups"])
    assert any(s["suite"] == "transformer" and s["precision"] == "amp-bf16" for s in document["speedups"])


def test_a_quick_run_says_so_and_whether_each_case_converged(document):
    """A --quick run is a smoke run: its document says quick, and every case it measured says
    whether it met the noise target and why it stopped (the sampler's reason, or the transformer's
    fixed step count)."""
    assert document["run"]["quick"] is True
    measured = [c for c in document["cases"] if c["status"] == "ok"]
    assert {c["suite"] for c in measured} == {"gemm", "bandwidth", "cast", "transformer"}
    for case in measured:
        measurement = case["details"]["measurement"]
        assert isinstance(measurement["converged"], bool), case["name"]
        assert isinstance(measurement["stop_reason"], str) and measurement["stop_reason"], case["name"]
        target = f"{100 * document['run']['sampler']['max_noise']:.2f}%"
        assert target in measurement["stop_reason"] or "no spread" in measurement["stop_reason"], measurement


def test_every_ok_case_has_several_samples(document):
    for case in document["cases"]:
        if case["status"] == "ok":
            stats = case["metrics"]["seconds"]
            assert stats["samples"] >= 3 and len(stats["values"]) == stats["samples"]
            assert stats["min"] <= stats["median"] <= stats["max"]


def test_schema_rejects_no_samples_and_unknown_status(document):
    ok = next(c for c in document["cases"] if c["status"] == "ok")
    single = copy.deepcopy(document)
    single["cases"] = [copy.deepcopy(ok)]
    single["cases"][0]["metrics"]["seconds"]["samples"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(single, SCHEMA)
    unknown = copy.deepcopy(document)
    unknown["cases"] = [copy.deepcopy(ok)]
    unknown["cases"][0]["status"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unknown, SCHEMA)
    unexplained = copy.deepcopy(document)
    skipped = next(c for c in document["cases"] if c["status"] == "skipped")
    unexplained["cases"] = [dict(skipped, message="")]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(unexplained, SCHEMA)


@pytest.mark.parametrize("steps, timed", [(2, 1), (3, 2)])
def test_a_tiny_run_validates_reports_and_says_when_one_step_was_timed(tmp_path, report, steps, timed):
    """The shortest transformer runs: --steps 2 keeps its warm-up step and times one step, which
    has no spread and is marked unconverged; more steps are converged when they spread within the
    run's noise target; report.py draws either."""
    out = tmp_path / "tiny.json"
    done = subprocess.run([str(BINARY), "run", "--suite", "transformer", "--device", "cpu", "--config", "tiny",
                           "--steps", str(steps), "--precision", "fp32,amp-bf16", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    jsonschema.validate(doc, SCHEMA)
    for case in doc["cases"]:
        stats = case["metrics"]["seconds"]
        assert stats["samples"] == timed == len(stats["values"]), stats
        measurement = case["details"]["measurement"]
        within_target = timed > 1 and stats["stddev"] / stats["mean"] <= doc["run"]["sampler"]["max_noise"]
        assert measurement["converged"] is within_target, measurement
        assert ("a fixed count" in measurement["stop_reason"]) == (timed > 1), measurement
        assert (f"{case['precision']}: note: one timed step" in done.stderr) == (timed == 1), done.stderr
    assert report.main([str(out), "-o", str(tmp_path / "report")]) == 0
    assert (tmp_path / "report" / "index.html").is_file()
