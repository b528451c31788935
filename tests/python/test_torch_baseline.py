"""scripts/torch_baseline.py: PyTorch's counterparts of an mpbench document's cases, written as a
document of the same schema. Started from the same checkpoint on the same token file, PyTorch's
fp32 training follows mpbench's losses within fp32 rounding step by step; each microbenchmark case
keeps its name and parameters, and its rates are what its times say. Bad input and a missing torch
are exit 2 with one line. The runs need a Python with torch (and safetensors): this one, or the one
MPBENCH_TORCH_PYTHON names; without one they skip and say so."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import smallest_bandwidth_elements

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "torch_baseline.py"
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))


def torch_python():
    """An interpreter that has torch and safetensors, or None."""
    for python in filter(None, (os.environ.get("MPBENCH_TORCH_PYTHON"), sys.executable)):
        probe = subprocess.run([python, "-c", "import torch, safetensors"], capture_output=True, timeout=120)
        if probe.returncode == 0:
            return python
    return None


TORCH_PYTHON = torch_python()
needs_torch = pytest.mark.skipif(
    TORCH_PYTHON is None, reason="no Python with torch and safetensors: set MPBENCH_TORCH_PYTHON to one "
                                 "(a throwaway venv with pip install torch safetensors)")


def baseline(*args, python=None, env=None):
    return subprocess.run([python or TORCH_PYTHON or sys.executable, str(SCRIPT), *map(str, args)],
                          capture_output=True, text=True, timeout=900, env=env)


def mpbench(*args):
    done = subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def cases_of(path):
    return {(c["suite"], c["name"], c["precision"]): c for c in json.loads(Path(path).read_text())["cases"]}


@pytest.fixture(scope="module")
def tiny_training(tmp_path_factory):
    """mpbench's tiny model trained 6 steps in every CPU mode from a checkpoint on a token file, and
    two cast cases."""
    tmp = tmp_path_factory.mktemp("torch_baseline")
    tiny = ["run", "--suite", "transformer", "--device", "cpu", "--config", "tiny"]
    mpbench(*tiny, "--steps", "2", "--precision", "fp32", "--checkpoint-out", tmp / "start", "--out", tmp / "start.json")
    tokens = np.random.default_rng().integers(0, 60, 5000, dtype="<u2")  # tiny's vocabulary has 60 tokens
    (tmp / "tokens.bin").write_bytes(tokens.tobytes())
    mpbench(*tiny, "--steps", "6", "--precision", "fp32,amp-fp16,amp-bf16,bf16", "--checkpoint-in", tmp / "start" / "fp32",
            "--data", tmp / "tokens.bin", "--out", tmp / "mpbench.json")
    mpbench("run", "--suite", "cast", "--device", "cpu", "--quick", "--timeout", "0.2", "--filter", "/(copy|f32_to_bf16)/",
            "--out", tmp / "cast.json")
    return tmp


def test_without_torch_it_says_how_to_install_it(tmp_path, tiny_training):
    # A stand-in torch module that fails to import, found before any installed one.
    (tmp_path / "torch.py").write_text("raise ImportError('simulated', name='torch')\n")
    done = baseline("--cases-from", tiny_training / "mpbench.json", "--out", tmp_path / "t.json", python=sys.executable,
                    env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    assert "PyTorch is not installed" in done.stderr and "pip install torch" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("args, message", [
    (["--suite", "gemmm"], "unknown suite 'gemmm'"),
    (["--filter", "("], "is not a regular expression"),
    (["--filter", "nothing-matches"], "has no ok case"),
    (["--precision", "fp64"], "has no ok case"),
    (["--timeout", "nan"], "--timeout must be a positive number"),
    (["--data", "/nonexistent/tokens.bin"], "no such file"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, tiny_training, args, message):
    done = baseline("--cases-from", tiny_training / "mpbench.json", "--out", tmp_path / "t.json", *args)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("content", ['{"schema": "other", "cases": []}', "[1, 2]", '{"schema": "mpbench.result/1"', ""])
def test_a_document_that_is_not_mpbench_s_is_refused(tmp_path, content):
    (tmp_path / "doc.json").write_text(content)
    done = baseline("--cases-from", tmp_path / "doc.json", "--out", tmp_path / "t.json")
    assert done.returncode == 2 and str(tmp_path / "doc.json") in done.stderr, done.stderr


@needs_torch
def test_pytorch_training_follows_mpbench_s_losses(tmp_path, tiny_training, validator):
    done = baseline("--cases-from", tiny_training / "mpbench.json", "--checkpoint-in", tiny_training / "start" / "fp32",
                    "--data", tiny_training / "tokens.bin", "--out", tmp_path / "torch.json")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "torch.json").read_text())
    validator.validate(doc)
    ours, theirs = cases_of(tiny_training / "mpbench.json"), cases_of(tmp_path / "torch.json")
    assert set(theirs) == set(ours)
    assert {c["backend"] for c in theirs.values()} == {"torch"}
    for key, tolerance in ((("transformer", "tiny_b4_t16", "fp32"), 1e-5),
                           (("transformer", "tiny_b4_t16", "amp-fp16"), 2e-3),
                           (("transformer", "tiny_b4_t16", "amp-bf16"), 2e-3)):
        assert theirs[key]["status"] == "ok", theirs[key]["message"]
        expected, got = np.array(ours[key]["details"]["loss"]), np.array(theirs[key]["details"]["loss"])
        assert len(got) == 6
        assert np.all(np.abs(got - expected) <= tolerance * expected), (key, expected, got)
        assert np.allclose(theirs[key]["details"]["grad_norm"], ours[key]["details"]["grad_norm"], rtol=10 * tolerance)
        seconds = theirs[key]["metrics"]["seconds"]
        assert seconds["samples"] == 6 - ours[key]["params"]["timing_warmup_steps"]
        assert theirs[key]["rates"]["tokens_per_s"] == pytest.approx(64 / seconds["median"])
    # The losses move: equal losses are not equal by being constant.
    assert len(set(theirs[("transformer", "tiny_b4_t16", "fp32")]["details"]["loss"])) == 6
    bf16 = theirs[("transformer", "tiny_b4_t16", "bf16")]
    assert bf16["status"] == "skipped" and "amp-bf16" in bf16["message"]
    speedups = {(s["precision"], s["backend"]) for s in doc["speedups"]}
    assert speedups == {("amp-fp16", "torch"), ("amp-bf16", "torch")}


@needs_torch
def test_microbenchmark_cases_keep_their_names_and_rates_follow_times(tmp_path, validator):
    elements = smallest_bandwidth_elements(BIN)
    mpbench("run", "--suite", "gemm,bandwidth,cast", "--device", "cpu", "--quick", "--timeout", "0.5",
            "--filter", rf"^(gemm/square_512/(fp32|bf16)|bandwidth/(copy|triad)/n={elements}/|cast/)",
            "--out", tmp_path / "mpbench.json")
    done = baseline("--cases-from", tmp_path / "mpbench.json", "--timeout", "0.5", "--min-time", "0.01",
                    "--out", tmp_path / "torch.json")
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "torch.json").read_text())
    validator.validate(doc)
    ours, theirs = cases_of(tmp_path / "mpbench.json"), cases_of(tmp_path / "torch.json")
    assert set(theirs) == {k for k, c in ours.items() if c["status"] == "ok"}
    assert {suite for suite, _, _ in theirs} == {"gemm", "bandwidth", "cast"}, sorted(theirs)
    for key, c in theirs.items():
        assert c["params"] == ours[key]["params"], key
        if key[0] == "cast" and "stochastic" in key[1]:
            assert c["status"] == "skipped" and "stochastic" in c["message"]
            continue
        assert c["status"] == "ok", (key, c["message"])
        median = c["metrics"]["seconds"]["median"]
        if key[0] == "gemm":
            assert c["rates"]["tflops"] == pytest.approx(c["params"]["flops"] / median / 1e12)
        else:
            assert c["rates"]["gbps"] == pytest.approx(c["params"]["bytes"] / median / 1e9)
    bf16 = [s for s in doc["speedups"] if s["suite"] == "gemm"]
    assert [s["precision"] for s in bf16] == ["bf16"]
    # Every cast and bandwidth rate is a share of the same suite's copy of the same size.
    copy = theirs[("cast", f"copy/n={ours_cast_elements(ours)}", "fp32")]
    for key, c in theirs.items():
        if key[0] == "cast" and c["status"] == "ok":
            assert c["rates"]["pct_of_copy"] == pytest.approx(100 * c["rates"]["gbps"] / copy["rates"]["gbps"])


def ours_cast_elements(cases):
    return next(c["params"]["elements"] for (suite, _, _), c in cases.items() if suite == "cast")


@needs_torch
@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_run_writes_the_cases_it_finished(tmp_path, tiny_training, signal_number):
    # Each case samples for its whole timeout (a noise target no run reaches); the signal comes
    # once the second case has started.
    process = subprocess.Popen([TORCH_PYTHON, str(SCRIPT), "--cases-from", str(tiny_training / "cast.json"),
                                "--max-noise", "1e-12", "--timeout", "2", "--out", str(tmp_path / "t.json")],
                               stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if line.startswith("[2/"):
            break
    process.send_signal(signal_number)
    rest = process.stderr.read()
    assert process.wait(timeout=120) == 128 + signal_number, rest
    doc = json.loads((tmp_path / "t.json").read_text())
    assert doc["run"]["interrupted"] is True
    assert len(doc["cases"]) == 1 and doc["cases"][0]["status"] == "ok"
