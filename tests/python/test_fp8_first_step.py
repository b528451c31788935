"""Issue 31's whole-model check of the fp8 modes: mpbench trains tiny in each fp8 mode, then evaluates
the checkpoint's batch in that mode with a fresh quantizer (batch.json's loss_in_mode,
grads_in_mode.safetensors: the recipe's first step); gpt2_numpy.py computes the same recipe from
docs/amp.md, independently of mpbench's C++ (its own fp8 quantizer, scales and MX blocks). The
loss must agree closely, and each gradient must be far closer to the numpy recipe than to numpy's
plain bf16 computation (no fp8) and than to numpy's wrong recipes (e4m3 gradients for the per-tensor
recipes, e5m2 for mxfp8, another recipe's scales), so a mode that skipped quantization or used the
wrong format or scale fails.

On tiny for every mode: there a GEMM's fp32 sum order (oneDNN's against numpy's) flips no fp8 code.
On larger models current and MX scaling amplify such fp32-level differences (a bf16 flip of a
tensor's or a block's amax moves every code scaled by it), so two correct implementations drift
apart by a few percent in the gradients after a few layers (docs/amp.md has the figures).
fp8-delayed's first step has every scale 1, so it is checked on small as well.

The binary is MPBENCH_BIN (default build/cli/mpbench), as in test_check_against_pytorch.py."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpt2_numpy  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))

MODES = {"fp8-current": "current", "fp8-delayed": "delayed", "mxfp8": "mxfp8"}
# Wrong recipes each mode's gradients must not match.
WRONG = {
    "fp8-current": [("e4m3 gradients", dict(kind="current", grad_format="e4m3")), ("delayed scales", dict(kind="delayed")),
                    ("mx blocks", dict(kind="mxfp8"))],
    "fp8-delayed": [("e4m3 gradients", dict(kind="delayed", grad_format="e4m3")), ("current scales", dict(kind="current")),
                    ("mx blocks", dict(kind="mxfp8"))],
    "mxfp8": [("e5m2 gradients", dict(kind="mxfp8", grad_format="e5m2")), ("current scales", dict(kind="current")),
              ("delayed scales", dict(kind="delayed"))],
}

# Tolerances, from the figures measured on the 2-core Zen 4 VM (docs/amp.md) with wide margins:
# loss rel <= 4e-9 against the same recipe (5e-5 to 2e-4 against plain bf16); gradients, relative
# norm error over all tensors <= 6e-6 (per tensor <= 3e-4) against the same recipe, 3e-2 to 0.17
# against plain bf16 or a wrong recipe.
LOSS_TOL = 1e-6
TOTAL_TOL = 1e-3
PER_TENSOR_TOL = 2e-2
SEPARATION = 10  # the same recipe's error must be this many times below every other's


def errors(mine, theirs):
    """(total relative norm error over all tensors, {tensor: relative norm error})."""
    per = {k: float(np.linalg.norm(mine[k] - theirs[k]) / max(np.linalg.norm(theirs[k]), 1e-30)) for k in mine}
    total = float(np.sqrt(sum(np.sum((mine[k].astype(np.float64) - theirs[k]) ** 2) for k in mine) /
                          sum(np.sum(theirs[k].astype(np.float64) ** 2) for k in mine)))
    return total, per


@pytest.fixture(scope="module", params=[(4, 16, 1), (3, 16, 7)], ids=["b4_t16_seed1", "b3_t16_seed7"])
def checkpoints(request, tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN")
    batch, seq, seed = request.param
    tmp = tmp_path_factory.mktemp("fp8_first_step")
    out = tmp / "checkpoints"
    run = subprocess.run([str(BIN), "run", "--suite", "transformer", "--config", "tiny", "--steps", "2",
                          "--batch", str(batch), "--seq", str(seq), "--seed", str(seed), "--device", "cpu",
                          "--precision", "bf16," + ",".join(MODES), "--out", str(tmp / "result.json"),
                          "--checkpoint-out", str(out)],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def test_bf16_checkpoint_has_no_in_mode_evaluation(checkpoints):
    folder = checkpoints / "bf16"
    assert (folder / "grads.safetensors").exists()
    assert not (folder / "grads_in_mode.safetensors").exists()
    assert "loss_in_mode" not in json.loads((folder / "batch.json").read_text())


@pytest.mark.parametrize("mode", list(MODES))
def test_first_step_matches_the_numpy_recipe(checkpoints, mode):
    folder = checkpoints / mode
    batch = json.loads((folder / "batch.json").read_text())
    assert batch["in_mode"] == mode
    mp_loss = batch["loss_in_mode"]
    mp_grads = gpt2_numpy.read_safetensors(folder / "grads_in_mode.safetensors")
    assert set(mp_grads) == set(gpt2_numpy.read_safetensors(folder / "grads.safetensors"))

    loss, grads = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe(MODES[mode]))
    assert set(grads) == set(mp_grads)
    loss_err = abs(mp_loss - loss) / abs(loss)
    total, per = errors(mp_grads, grads)
    worst = max(per, key=per.get)

    plain_loss, plain = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe("none"))
    plain_loss_err = abs(mp_loss - plain_loss) / abs(plain_loss)
    plain_total, plain_per = errors(mp_grads, plain)
    print(f"\n{mode}: loss {mp_loss:.9f} numpy {loss:.9f} rel {loss_err:.2e} (vs no fp8 {plain_loss_err:.2e}); "
          f"gradients vs same recipe: total {total:.2e}, worst tensor {per[worst]:.2e} ({worst}), "
          f"median {np.median(list(per.values())):.2e}; vs no fp8: total {plain_total:.2e}, "
          f"median tensor {np.median(list(plain_per.values())):.2e}")

    # numpy against itself with fp32 GEMM sums instead of double: how far two correct
    # implementations of the recipe drift apart here (printed, not asserted).
    try:
        gpt2_numpy.ACCUMULATE = np.float32
        _, floor = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe(MODES[mode]))
    finally:
        gpt2_numpy.ACCUMULATE = np.float64
    print(f"  numpy fp32 GEMM sums vs double: total {errors(floor, grads)[0]:.2e}")

    assert loss_err <= LOSS_TOL
    assert total <= TOTAL_TOL
    assert per[worst] <= PER_TENSOR_TOL, worst
    assert total * SEPARATION < plain_total
    assert loss_err * SEPARATION < plain_loss_err
    for name, recipe in WRONG[mode]:
        wrong_loss, wrong = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe(**recipe))
        wrong_total, _ = errors(mp_grads, wrong)
        print(f"  vs wrong recipe ({name}): total {wrong_total:.2e}, loss rel {abs(mp_loss - wrong_loss) / abs(wrong_loss):.2e}")
        assert total * SEPARATION < wrong_total, name


# fp8-delayed's first step scales every tensor by 1, so no amax moves a code and the recipe stays
# checkable beyond tiny: on small (batch 2, T 64, two threads) mpbench agreed with numpy to 1.7e-8
# in the gradients (worst tensor 2.9e-6) on the Zen 4 VM, 1.6e-6 (worst 1.8e-4) under
# DNNL_MAX_CPU_ISA=AVX2, whose matmuls round differently, against 0.23 to 0.78 for plain bf16 and
# the wrong recipes. The tolerances are tiny's.


def test_fp8_delayed_first_step_on_small_matches_the_numpy_recipe(tmp_path):
    if not BIN.exists():
        pytest.skip(f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN")
    run = subprocess.run([str(BIN), "run", "--suite", "transformer", "--config", "small", "--steps", "2", "--batch", "2",
                          "--seq", "64", "--seed", "5", "--device", "cpu", "--precision", "fp8-delayed", "--out",
                          str(tmp_path / "result.json"), "--checkpoint-out", str(tmp_path / "checkpoints")],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "2"})
    assert run.returncode == 0, run.stdout + run.stderr
    folder = tmp_path / "checkpoints" / "fp8-delayed"
    mp_loss = json.loads((folder / "batch.json").read_text())["loss_in_mode"]
    mp_grads = gpt2_numpy.read_safetensors(folder / "grads_in_mode.safetensors")
    loss, grads = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe("delayed"))
    total, per = errors(mp_grads, grads)
    worst = max(per, key=per.get)
    print(f"\nsmall fp8-delayed: loss rel {abs(mp_loss - loss) / abs(loss):.2e}, gradients total {total:.2e}, "
          f"worst tensor {per[worst]:.2e} ({worst})")
    assert abs(mp_loss - loss) <= LOSS_TOL * abs(loss)
    assert total <= TOTAL_TOL
    assert per[worst] <= PER_TENSOR_TOL, worst
    for name, recipe in [("no fp8", dict(kind="none"))] + WRONG["fp8-delayed"]:
        _, other = gpt2_numpy.evaluate(folder, gpt2_numpy.Recipe(**recipe))
        other_total, _ = errors(mp_grads, other)
        print(f"  vs {name}: total {other_total:.2e}")
        assert total * SEPARATION < other_total, name


@pytest.fixture(scope="module")
def mx_up_checkpoint(tmp_path_factory):
    if not BIN.exists():
        pytest.skip(f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN")
    tmp = tmp_path_factory.mktemp("mx_up")
    run = subprocess.run([str(BIN), "run", "--suite", "transformer", "--config", "tiny", "--steps", "2", "--batch", "4",
                          "--seq", "16", "--seed", "3", "--device", "cpu", "--precision", "mxfp8",
                          "--mx-scale-rounding", "up", "--out", str(tmp / "result.json"), "--checkpoint-out",
                          str(tmp / "checkpoints")],
                         capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stdout + run.stderr
    return tmp / "checkpoints" / "mxfp8"


def test_mx_scale_rounding_up_matches_the_numpy_recipe(mx_up_checkpoint):
    """--mx-scale-rounding up against numpy's round-up rule, and far from numpy's round-down."""
    batch = json.loads((mx_up_checkpoint / "batch.json").read_text())
    mp_grads = gpt2_numpy.read_safetensors(mx_up_checkpoint / "grads_in_mode.safetensors")
    loss, grads = gpt2_numpy.evaluate(mx_up_checkpoint, gpt2_numpy.Recipe("mxfp8", mx_rounding="up"))
    down_loss, down = gpt2_numpy.evaluate(mx_up_checkpoint, gpt2_numpy.Recipe("mxfp8"))
    total, per = errors(mp_grads, grads)
    down_total, _ = errors(mp_grads, down)
    loss_err = abs(batch["loss_in_mode"] - loss) / abs(loss)
    print(f"\nmxfp8 rounding up: loss rel {loss_err:.2e} (vs rounding down "
          f"{abs(batch['loss_in_mode'] - down_loss) / abs(down_loss):.2e}); gradients total {total:.2e} "
          f"(vs rounding down {down_total:.2e})")
    assert loss_err <= LOSS_TOL
    assert total <= TOTAL_TOL
    assert max(per.values()) <= PER_TENSOR_TOL
    assert total * SEPARATION < down_total


def test_the_numpy_mx_rounding_on_hand_cases():
    # amax 1.9 (significand above 1.75): down 2^-8 saturates 1.9 / 2^-8 = 486.4 to 448 (1.75);
    # up 2^-7: 243.2 rounds to 240, 1.875. amax 1.5: both 2^-8, 384 exactly.
    x = np.array([[1.9, 0.5], [1.5, 0.25]], dtype=np.float32)
    down = gpt2_numpy.mx_quantize(x, "e4m3", 1)
    up = gpt2_numpy.mx_quantize(x, "e4m3", 1, rounding="up")
    assert down.tolist() == [[1.75, 0.5], [1.5, 0.25]]
    assert up.tolist() == [[1.875, 0.5], [1.5, 0.25]]


def test_the_numpy_quantizer_on_hand_cases():
    q = gpt2_numpy.fp8_round
    # e4m3: 448 max, 464 is the tie between 448 and (unrepresentable) 480: even code 448; saturation.
    assert list(q(np.array([448.0, 464.0, 500.0, -1e9]), "e4m3")) == [448.0, 448.0, 448.0, -448.0]
    # Smallest subnormal 2^-9; half of it is a tie to 0 (even), above it rounds up.
    assert list(q(np.array([2.0 ** -10, 1.01 * 2.0 ** -10, 3 * 2.0 ** -10]), "e4m3")) == [0.0, 2.0 ** -9, 2.0 ** -8]
    # 1 + 1/16 lies halfway between 1 and 1.125: ties to even (1).
    assert q(np.array([1.0625, 1.1875]), "e4m3").tolist() == [1.0, 1.25]
    assert q(np.array([57344.0, 61440.0, 2.0 ** -17, 2.0 ** -16]), "e5m2").tolist() == [57344.0, 57344.0, 0.0, 2.0 ** -16]
    assert len(gpt2_numpy.FP8["e4m3"]) == 127 and len(gpt2_numpy.FP8["e5m2"]) == 124
    # MX: a block of amax 3 (floor log2 = 1) has scale 2^(1-8); 0 blocks stay 0; the last block is short.
    x = np.zeros(40, dtype=np.float32)
    x[0], x[1], x[33] = 3.0, 0.01, 1.0
    y = gpt2_numpy.mx_quantize(x[None, :], "e4m3", 1)[0]
    assert y[0] == 3.0 and y[33] == 1.0 and y[1] == np.float32(q(np.array([0.01 * 128]), "e4m3")[0] / 128)
    assert gpt2_numpy.bf16(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8], dtype=np.float32)).tolist() == [1.0, 1 + 2 ** -6]
