"""scripts/device/torch_gpt2_baseline.py runs only on a GPU, in the device check, where a failure costs
device time. Its model and training step run here on the CPU: a tiny GPT-2 learns one batch of
tokens in each autocast mode, fed the same non-contiguous token slices as on the GPU."""
import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "device" / "torch_gpt2_baseline.py"
torch = pytest.importorskip("torch", reason="torch not installed: pip install torch")


@pytest.fixture(scope="module")
def baseline():
    spec = importlib.util.spec_from_file_location("torch_gpt2_baseline", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("mode", ["fp32", "amp-bf16", "amp-fp16"])
def test_the_tiny_model_learns_a_batch(baseline, mode):
    vocab, seq = 96, 16
    torch.manual_seed(3)
    model = baseline.build_model(torch, layers=2, heads=2, channels=64, vocab=vocab, max_seq=seq)
    optimizer = baseline.make_optimizer(torch, model)
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(mode)
    scaler = torch.amp.GradScaler("cpu", enabled=mode == "amp-fp16")
    steps = torch.randint(0, vocab, (1, 4, seq + 1)).expand(30, 4, seq + 1)  # one batch, as main() slices it
    losses = [baseline.train_step(torch, model, optimizer, scaler, dtype, steps[i]).item() for i in range(30)]
    assert all(math.isfinite(loss) for loss in losses), losses
    # With GPT-2's initialisation the untrained logits are near uniform; 30 AdamW steps at the
    # script's learning rate on one batch of 64 targets take a third of that loss off.
    assert abs(losses[0] - math.log(vocab)) < 1.0, losses[0]
    assert losses[-1] < 0.7 * losses[0], losses
