"""explain --noise end to end: two real runs of the same transformer cases with different --seed
give fp8_loss_drift its noise (the two amp-bf16 final losses' difference); a PyTorch document
or a missing file is refused with exit 2, the option named.

The binary is MPBENCH_BIN (default build/cli/mpbench), as in test_check_against_pytorch.py."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))


def mpbench(*args):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})


@pytest.fixture(scope="module")
def two_seeds(tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN")
    tmp = tmp_path_factory.mktemp("explain_noise")
    documents = []
    for seed in (1, 2):
        out = tmp / f"seed{seed}.json"
        run = mpbench("run", "--suite", "transformer", "--config", "tiny", "--steps", "5", "--device", "cpu",
                      "--seed", str(seed), "--precision", "fp32,amp-bf16,fp8-current", "--out", str(out))
        assert run.returncode == 0, run.stdout + run.stderr
        documents.append(out)
    return documents


def final_loss(path, precision):
    return next(c["details"]["final_loss"] for c in json.loads(path.read_text())["cases"]
                if c["precision"] == precision)


def drift_finding(explanation):
    found = [f for c in explanation["cases"] for f in c["findings"] if f["rule"] == "fp8_loss_drift"]
    assert len(found) == 1, explanation
    return found[0]


def test_the_second_seed_gives_the_noise(two_seeds):
    first, second = two_seeds
    run = mpbench("explain", str(first), "--noise", str(second), "--json")
    assert run.returncode == 0, run.stderr
    finding = drift_finding(json.loads(run.stdout))
    evidence = finding["evidence"]
    assert evidence["noise_source"]["kind"] == "two bf16 runs"
    bf16 = final_loss(first, "amp-bf16")
    assert evidence["bf16_final_loss"] == pytest.approx(bf16)
    assert evidence["noise"] == pytest.approx(abs(final_loss(second, "amp-bf16") - bf16))
    drift = final_loss(first, "fp8-current") - bf16
    assert evidence["drift"] == pytest.approx(drift)
    assert finding["severity"] == ("warning" if abs(drift) > evidence["noise"] else "info")


def test_without_noise_and_with_the_same_seed_the_threshold_stands_in(two_seeds):
    first, _ = two_seeds
    for extra in ([], ["--noise", str(first)]):
        run = mpbench("explain", str(first), "--json", *extra)
        assert run.returncode == 0, run.stderr
        evidence = drift_finding(json.loads(run.stdout))["evidence"]
        assert evidence["noise_source"]["kind"] == "threshold"
        assert evidence["noise"] == pytest.approx(0.03 * final_loss(first, "amp-bf16"))


def test_a_bad_noise_document_is_named(two_seeds, tmp_path):
    first, _ = two_seeds
    run = mpbench("explain", str(first), "--noise", str(tmp_path / "missing.json"))
    assert run.returncode == 2
    assert "missing.json" in run.stderr
    torch = json.loads(first.read_text())
    for c in torch["cases"]:
        c["backend"] = "torch"
    (tmp_path / "torch.json").write_text(json.dumps(torch))
    run = mpbench("explain", str(first), "--noise", str(tmp_path / "torch.json"))
    assert run.returncode == 2
    assert "--noise" in run.stderr and "torch" in run.stderr
