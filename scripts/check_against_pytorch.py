#!/usr/bin/env python3
"""Checks an mpbench checkpoint's loss (and with --grads its gradients) against PyTorch.

The checkpoint folder (workloads/checkpoint.hpp) is loaded with
transformers.GPT2LMHeadModel.from_pretrained in fp32 on the CPU, in eval mode, and run on the
batch of batch.json. The loss is the mean cross-entropy of the logits at each position against
that position's target: mpbench's targets already are the next tokens, so no shift is applied (the
labels= argument of the Hugging Face model would shift them once more).

Exit status: 0 when everything agrees, 1 on a mismatch, 2 when the checkpoint or the Python
packages are missing.
"""
import argparse
import json
import sys
from pathlib import Path

INSTALL = "pip install torch transformers safetensors"


def fail(message):
    print(f"check_against_pytorch: error: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="checkpoint folder (model.safetensors, config.json, batch.json)")
    parser.add_argument("--grads", action="store_true", help="also compare every gradient with grads.safetensors")
    parser.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance of the loss (default 1e-4)")
    parser.add_argument("--grad-rtol", type=float, default=1e-4,
                        help="a gradient tensor passes when max|diff| <= GRAD_RTOL * max|g| + GRAD_ATOL "
                             "(default 1e-4)")
    parser.add_argument("--grad-atol", type=float, default=1e-6, help="see --grad-rtol (default 1e-6)")
    return parser.parse_args(argv)


def import_torch():
    try:
        import torch
        import transformers
        from safetensors.torch import load_file
    except ImportError as e:
        fail(f"the Python package '{e.name}' is missing; install the comparison's dependencies with: {INSTALL} "
             "(torch is a large download, so scripts/requirements.txt leaves it out)")
    return torch, transformers, load_file


def load_model(transformers, folder):
    transformers.utils.logging.disable_progress_bar()
    model, info = transformers.GPT2LMHeadModel.from_pretrained(
        folder, output_loading_info=True, attn_implementation="eager")
    # A name the loader did not match would leave that weight randomly initialised. The LM head is
    # tied to wte, so the file does not hold it.
    missing = [k for k in info["missing_keys"] if k != "lm_head.weight"]
    unexpected = list(info["unexpected_keys"])
    if missing or unexpected or info.get("mismatched_keys"):
        fail(f"{folder}/model.safetensors does not load cleanly: missing {missing}, unexpected {unexpected}, "
             f"mismatched {info.get('mismatched_keys')}")
    return model.float().eval()


def main(argv=None):
    args = parse_args(argv)
    folder = args.dir
    for name in ("config.json", "model.safetensors", "batch.json") + (("grads.safetensors",) if args.grads else ()):
        if not (folder / name).is_file():
            fail(f"{folder / name} is missing")
    torch, transformers, load_file = import_torch()
    torch.manual_seed(0)  # nothing should be random here; this keeps it so if something is
    model = load_model(transformers, folder)
    batch = json.loads((folder / "batch.json").read_text())
    inputs = torch.tensor(batch["inputs"], dtype=torch.long)
    targets = torch.tensor(batch["targets"], dtype=torch.long)
    expected_loss = float(batch["loss"])

    logits = model(input_ids=inputs).logits
    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss_error = abs(loss.item() - expected_loss) / abs(loss.item())
    loss_ok = loss_error <= args.rtol
    print(f"loss: pytorch {loss.item():.9f}  mpbench {expected_loss:.9f}  relative error {loss_error:.2e}  "
          f"(rtol {args.rtol:g})  {'ok' if loss_ok else 'MISMATCH'}")
    ok = loss_ok

    if args.grads:
        loss.backward()
        ok = compare_gradients(model, load_file(str(folder / "grads.safetensors")), args) and ok
    print("all match" if ok else "MISMATCH")
    return 0 if ok else 1


def compare_gradients(model, mpbench_grads, args):
    # Both sides in Hugging Face's layout (Conv1D weights [in, out]); wte's gradient holds the
    # embedding's and the tied LM head's parts in both.
    params = dict(model.transformer.named_parameters())
    ok = True
    for name in sorted(set(mpbench_grads) - set(params)):
        print(f"{name}: in grads.safetensors but not a parameter of the model  MISMATCH")
        ok = False
    print(f"{'tensor':<28} {'shape':<12} {'max|g|':>10} {'max|diff|':>10} {'diff/max|g|':>11}")
    for name, param in params.items():
        if name not in mpbench_grads:
            print(f"{name}: missing from grads.safetensors  MISMATCH")
            ok = False
            continue
        reference = param.grad.detach()
        ours = mpbench_grads[name]
        if ours.shape != reference.shape:
            print(f"{name}: shape {list(ours.shape)} in grads.safetensors, {list(reference.shape)} in the model  "
                  "MISMATCH")
            ok = False
            continue
        scale = reference.abs().max().item()
        diff = (ours.double() - reference.double()).abs().max().item()
        tensor_ok = diff <= args.grad_rtol * scale + args.grad_atol
        ok = ok and tensor_ok
        shape = "x".join(str(d) for d in reference.shape)
        print(f"{name:<28} {shape:<12} {scale:>10.3e} {diff:>10.3e} {diff / scale if scale else 0.0:>11.2e}"
              f"{'' if tensor_ok else '  MISMATCH'}")
    return ok


if __name__ == "__main__":
    sys.exit(main())
