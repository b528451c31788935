"""scripts/check_against_pytorch.py on tiny checkpoints mpbench writes: the loss and every gradient
match transformers' GPT-2 in fp32, a perturbed loss or gradient is reported as a mismatch, and a
missing package is named with the pip command that installs it."""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_against_pytorch.py"
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))
# The GoogleTest binary whose round-trip test writes a checkpoint (into TEST_TMPDIR).
TEST_WORKLOADS = BIN.parents[1] / "tests" / "workloads" / "test_workloads"
MISSING = [m for m in ("torch", "transformers", "safetensors") if importlib.util.find_spec(m) is None]
needs_torch = pytest.mark.skipif(
    bool(MISSING), reason=f"{', '.join(MISSING)} not installed: pip install torch transformers safetensors")


def check(folder, *flags):
    return subprocess.run([sys.executable, str(SCRIPT), str(folder), *flags], capture_output=True, text=True,
                          timeout=300)


def expect_match(folder):
    result = check(folder, "--grads")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all match" in result.stdout
    # Between the loss line with the table's head and the verdict, a row for every gradient tensor of
    # the tiny model: the two embeddings, 2 layers of 12, the final norm's 2.
    assert len(result.stdout.splitlines()[2:-1]) == 2 + 2 * 12 + 2, result.stdout


@pytest.fixture(scope="module")
def gtest_checkpoint(tmp_path_factory):
    if not TEST_WORKLOADS.exists():
        pytest.skip(f"{TEST_WORKLOADS} not found; build test_workloads or set MPBENCH_BIN")
    tmp = tmp_path_factory.mktemp("gtest")
    result = subprocess.run(
        [str(TEST_WORKLOADS), "--gtest_filter=CheckpointFile.RoundTripsTheTinyModelWithItsBatch"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "TEST_TMPDIR": str(tmp)})
    assert result.returncode == 0, result.stdout + result.stderr
    folder = tmp / "mpbench_tiny_checkpoint"
    assert (folder / "grads.safetensors").is_file(), result.stdout
    return folder


@needs_torch
def test_checkpoint_of_a_fresh_model_matches_pytorch(gtest_checkpoint):
    expect_match(gtest_checkpoint)


@needs_torch
def test_checkpoints_of_a_training_run_match_pytorch(tmp_path):
    if not BIN.exists():
        pytest.skip(f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN")
    if "--checkpoint-out" not in subprocess.run([str(BIN), "run", "--help"], capture_output=True, text=True).stdout:
        pytest.skip(f"{BIN} has no run --checkpoint-out")
    out = tmp_path / "checkpoints"
    run = subprocess.run([str(BIN), "run", "--suite", "transformer", "--config", "tiny", "--steps", "2", "--device", "cpu",
                          "--out", str(tmp_path / "result.json"), "--checkpoint-out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    # One folder per precision mode, each holding fp32 weights with an fp32 loss and gradient.
    folders = sorted(p.parent for p in out.glob("*/config.json"))
    assert folders, f"no checkpoint under {out}: {run.stdout}{run.stderr}"
    for folder in folders:
        expect_match(folder)


@needs_torch
def test_a_wrong_loss_is_a_mismatch(gtest_checkpoint, tmp_path):
    folder = tmp_path / "wrong_loss"
    shutil.copytree(gtest_checkpoint, folder)
    batch = json.loads((folder / "batch.json").read_text())
    batch["loss"] *= 1 + 1e-3
    (folder / "batch.json").write_text(json.dumps(batch))
    result = check(folder)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "loss:" in result.stdout and "MISMATCH" in result.stdout


@needs_torch
def test_a_wrong_gradient_is_a_mismatch(gtest_checkpoint, tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "wrong_grad"
    shutil.copytree(gtest_checkpoint, folder)
    grads = load_file(str(folder / "grads.safetensors"))
    # One element off by 1% of the tensor's largest gradient, well above fp32 rounding.
    grad = grads["h.1.mlp.c_fc.weight"]
    grad[3, 5] += 0.01 * grad.abs().max()
    save_file(grads, str(folder / "grads.safetensors"), metadata={"format": "pt"})
    result = check(folder, "--grads")
    assert result.returncode == 1, result.stdout + result.stderr
    mismatches = [line.split()[0] for line in result.stdout.splitlines() if line.endswith("MISMATCH")]
    assert mismatches == ["h.1.mlp.c_fc.weight", "MISMATCH"], result.stdout


def test_missing_packages_are_named_with_the_pip_command(tmp_path):
    # A stand-in torch module that fails to import, found before any installed one.
    (tmp_path / "torch.py").write_text("raise ImportError('simulated', name='torch')\n")
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "batch.json"):
        (folder / name).write_text("{}")
    result = subprocess.run([sys.executable, str(SCRIPT), str(folder)], capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2
    assert "'torch' is missing" in result.stderr
    assert "pip install torch transformers safetensors" in result.stderr


def test_a_missing_checkpoint_file_is_named(tmp_path):
    result = check(tmp_path)
    assert result.returncode == 2
    assert f"{tmp_path / 'config.json'} is missing" in result.stderr
