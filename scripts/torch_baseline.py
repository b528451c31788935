#!/usr/bin/env python3
"""PyTorch's counterpart of the cases of an mpbench result document, measured on this machine and
written as a result document of the same schema (mpbench.result/1) with backend `torch` (eager) or
`torch-compile` (torch.compile), the same suites, case names, parameters and precisions: `mpbench
compare`, `explain` and `scripts/report.py` then put both side by side.

gemm: torch.matmul (TN: A[m,k] times B[n,k] transposed, batched with bmm), fp8 through
torch._scaled_mm. bandwidth: copy_, mul, add, add with alpha (triad), dot, pinned host<->device
copies. cast: Tensor.to, the scaled e4m3 cast as amax, scale and convert. transformer: a GPT-2 written
here with mpbench's structure (pre-LayerNorm blocks, tanh-GELU MLP, causal attention, LM head tied to
wte, cross-entropy over the real vocabulary), its optimizer (AdamW 0.9, 0.95, eps 1e-8, weight
decay 0.1 on matrices and embeddings, fused by default), learning rates (the ones the mpbench case
recorded), clipping (by global norm 1.0, only above it) and micro-batches, in each mode with
PyTorch's own means (autocast, GradScaler). Started from the same checkpoint (--checkpoint-in) on the
same token file (--data), its losses follow mpbench's step by step within fp32 rounding.

Exit status: 0 every case ok or skipped, 1 a case failed, 2 bad input or torch missing, 128 + the
signal when Ctrl-C, SIGTERM or SIGHUP interrupted it (the finished cases are written, with
run.interrupted true).
"""
import argparse
import json
import math
import os
import platform
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

SCHEMA = "mpbench.result/1"
SUITES = ("gemm", "bandwidth", "cast", "transformer")
INSTALL = ("install it into a separate virtual environment, e.g. python3 -m venv ~/torchvenv && "
           "~/torchvenv/bin/pip install torch (several GB with its CUDA packages; it also runs on the CPU), "
           "then run this script with ~/torchvenv/bin/python")
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16")


class BadInput(Exception):
    """A one-line reason for exit 2."""


class Skip(Exception):
    """A case PyTorch cannot run here, with the reason."""


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--cases-from", required=True, type=Path, metavar="DOC",
                        help="an mpbench result document: its ok cases are the ones measured")
    parser.add_argument("--out", required=True, type=Path, help="result document to write")
    parser.add_argument("--suite", default="all", help="comma-separated: gemm, bandwidth, cast, transformer or all")
    parser.add_argument("--precision", default="", help="comma-separated precisions or modes (default: all the document has)")
    parser.add_argument("--filter", default="", metavar="REGEX",
                        help="only the cases whose suite/name/precision this regular expression finds")
    parser.add_argument("--device", default="", help="cpu or cuda (default: the document's device)")
    parser.add_argument("--compile", action="store_true", help="run the transformer through torch.compile "
                        "(backend torch-compile); the microbenchmarks stay eager")
    parser.add_argument("--optimizer", choices=("fused", "foreach"), default="fused",
                        help="AdamW's implementation (default fused)")
    parser.add_argument("--threads", type=int, default=0,
                        help="CPU threads (default: the document's, else torch's default)")
    parser.add_argument("--checkpoint-in", type=Path, metavar="DIR",
                        help="transformer: start from this mpbench checkpoint directory (model.safetensors)")
    parser.add_argument("--data", type=Path, metavar="TOKENS",
                        help="transformer: little-endian uint16 token file, read as mpbench reads it "
                             "(default: uniform random tokens, seeded)")
    parser.add_argument("--max-noise", type=float, help="sampler: as `mpbench run` (default: the document's)")
    parser.add_argument("--min-time", type=float, help="sampler: as `mpbench run` (default: the document's)")
    parser.add_argument("--timeout", type=float, help="sampler: as `mpbench run` (default: the document's)")
    args = parser.parse_args(argv)
    for name in ("max_noise", "min_time", "timeout"):
        value = getattr(args, name)
        if value is not None and not (math.isfinite(value) and value > 0):
            parser.error(f"--{name.replace('_', '-')} must be a positive number, not {value}")
    try:
        args.filter = re.compile(args.filter)
    except re.error as e:
        parser.error(f"--filter {args.filter!r} is not a regular expression: {e}")
    if args.threads < 0:
        parser.error("--threads must be 0 (the default) or more")
    return args


def import_torch():
    try:
        import torch
    except ImportError:
        raise BadInput(f"PyTorch is not installed; {INSTALL}") from None
    return torch


def read_document(path: Path) -> dict:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"cannot read {path}: {e}") from None

    def refuse_constant(name):
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        doc = json.loads(text, parse_constant=refuse_constant)
    except ValueError as e:
        raise BadInput(f"{path} is not JSON: {e}") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("cases"), list):
        raise BadInput(f"{path} is not an mpbench result document (schema {SCHEMA} with a cases array)")
    return doc


def selected_cases(doc: dict, args) -> list[dict]:
    suites = set(SUITES) if args.suite == "all" else set(filter(None, args.suite.split(",")))
    unknown = suites - set(SUITES)
    if unknown:
        raise BadInput(f"unknown suite {sorted(unknown)[0]!r}: the suites are {', '.join(SUITES)} or all")
    precisions = set(filter(None, args.precision.split(",")))
    cases = [c for c in doc["cases"] if isinstance(c, dict) and c.get("status") == "ok"
             and c.get("suite") in suites and (not precisions or c.get("precision") in precisions)
             and c.get("backend") in ("cpu", "cuda")
             and args.filter.search(f"{c.get('suite')}/{c.get('name')}/{c.get('precision')}")]
    if not cases:
        raise BadInput(f"{args.cases_from} has no ok case of suite {','.join(sorted(suites))}"
                       + (f" and precision {args.precision}" if precisions else "")
                       + (f" matching --filter {args.filter.pattern!r}" if args.filter.pattern else ""))
    return cases


# ----------------------------------------------------------------------------------------------
# Measuring: the same stopping rules as mpbench's sampler (core/sampler), on the wall clock around
# each sample, synchronised on a GPU.

class Sampler:
    def __init__(self, torch, device, settings):
        self.torch, self.device = torch, device
        self.max_noise = settings["max_noise"]
        self.min_time = settings["min_time_s"]
        self.timeout = settings["timeout_s"]
        self.min_samples = max(2, int(settings.get("min_samples", 10)))
        self.max_samples = max(self.min_samples, int(settings.get("max_samples", 2000)))
        self.min_sample = float(settings.get("min_sample_s", 2e-5))

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def timed(self, fn, repeats):
        self.sync()
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        self.sync()
        return (time.perf_counter() - start) / repeats

    def measure(self, fn):
        """Seconds per call: samples until the noise target (after min_time and min_samples), the
        sample cap or the timeout; calls too short to time alone are batched into one sample."""
        first = self.timed(fn, 1)  # warm-up: allocations, kernel selection
        repeats = 1 if first >= self.min_sample else min(10_000, math.ceil(self.min_sample / max(first, 1e-9)))
        values, started = [], time.perf_counter()
        while True:
            values.append(self.timed(fn, repeats))
            n, elapsed = len(values), time.perf_counter() - started
            noise = statistics.stdev(values) / statistics.fmean(values) if n > 1 else math.inf
            if n >= self.min_samples and sum(values) * repeats >= self.min_time and noise <= self.max_noise:
                return values, repeats, True, f"noise {noise:.2%} below {self.max_noise:.2%}"
            if n >= self.max_samples:
                return values, repeats, False, f"max_samples {self.max_samples} reached, noise {noise:.2%}"
            if elapsed >= self.timeout and n >= 2:
                return values, repeats, False, f"timeout {self.timeout:.1f} s reached, noise {noise:.2%}"


def statistics_of(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "mean": statistics.fmean(values), "stddev": statistics.stdev(values) if len(values) > 1 else 0.0,
            "samples": len(values), "values": values}


# ----------------------------------------------------------------------------------------------
# Microbenchmarks: each returns the operation to time (a closure over its fresh random inputs).

def dtype_of(torch, precision: str):
    return {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}.get(precision)


def gemm_operation(torch, device, case):
    p, precision = case["params"], case["precision"]
    m, n, k, batch = int(p["m"]), int(p["n"]), int(p["k"]), int(p.get("batch", 1))
    shape_a, shape_b = ((batch, m, k), (batch, n, k)) if batch > 1 else ((m, k), (n, k))
    if precision == "fp16-acc16":
        raise Skip("PyTorch has no matmul that accumulates in fp16")
    if precision == "tf32" and device != "cuda":
        raise Skip("TF32 is a GPU Tensor Core format: PyTorch's CPU matmul has none")
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    if precision == "fp8-e4m3":
        return fp8_gemm(torch, device, shape_a, shape_b, batch)
    dtype = dtype_of(torch, precision)
    if dtype is None:
        raise Skip(f"no PyTorch counterpart of precision {precision}")
    a = torch.randn(shape_a, device=device, dtype=dtype)
    b = torch.randn(shape_b, device=device, dtype=dtype)
    return lambda: torch.matmul(a, b.transpose(-1, -2))


def fp8_gemm(torch, device, shape_a, shape_b, batch):
    if batch > 1 or not hasattr(torch, "float8_e4m3fn"):
        raise Skip("torch._scaled_mm takes 2-D e4m3 operands only")
    a = torch.randn(shape_a, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(shape_b, device=device).to(torch.float8_e4m3fn)
    one = torch.ones((), device=device)
    try:
        torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    except (RuntimeError, NotImplementedError) as e:
        raise Skip(f"torch._scaled_mm on {device}: {str(e).splitlines()[0]}") from None
    return lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def stream_operation(torch, device, case):
    p = case["params"]
    kernel = p.get("kernel", "")
    if kernel in ("h2d_pinned", "d2h_pinned"):
        return transfer_operation(torch, device, kernel, int(p["bytes"]))
    dtype = dtype_of(torch, case["precision"])
    n = int(p["elements"])
    a, b, c = (torch.rand(n, device=device, dtype=dtype) for _ in range(3))
    operations = {"copy": lambda: b.copy_(a), "memcpy": lambda: b.copy_(a),
                  "scale": lambda: torch.mul(a, 3.0, out=b), "add": lambda: torch.add(a, b, out=c),
                  "triad": lambda: torch.add(b, c, alpha=3.0, out=a), "dot": lambda: torch.dot(a, b)}
    if kernel not in operations:
        raise Skip(f"no PyTorch counterpart of the {kernel} kernel")
    return operations[kernel]


def transfer_operation(torch, device, kernel, size):
    if device != "cuda":
        raise Skip("host<->device copies need a GPU")
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    gpu = torch.empty(size, dtype=torch.uint8, device=device)
    return (lambda: gpu.copy_(host, non_blocking=True)) if kernel == "h2d_pinned" else (
        lambda: host.copy_(gpu, non_blocking=True))


def cast_operation(torch, device, case):
    p = case["params"]
    kernel, n = p.get("kernel", ""), int(p["elements"])
    if kernel == "f32_to_bf16_stochastic":
        raise Skip("PyTorch has no stochastic-rounding cast")
    formats = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    if kernel == "copy":
        x, y = torch.rand(n, device=device), torch.empty(n, device=device)
        return lambda: y.copy_(x)
    if kernel == "f32_to_e4m3_scaled":
        x = torch.randn(n, device=device)
        # As mpbench's cast: the scale maps the amax to e4m3's largest finite value, 448.
        return lambda: (x * (448.0 / x.abs().max())).to(torch.float8_e4m3fn)
    source, target = formats.get(p.get("from")), formats.get(p.get("to"))
    if source is None or target is None:
        raise Skip(f"no PyTorch counterpart of the {kernel} cast")
    x = torch.randn(n, device=device).to(source)
    return lambda: x.to(target)


def microbench_rates(case, seconds: float) -> dict:
    p = case["params"]
    if case["suite"] == "gemm":
        return {"tflops": float(p["flops"]) / seconds / 1e12}
    return {"gbps": float(p["bytes"]) / seconds / 1e9}


def add_pct_of_copy(cases: list[dict]):
    """Each bandwidth and cast case's rate as a share of the copy of the same size, as mpbench's."""
    copies = {(c["suite"], c["params"].get("elements")): c for c in cases
              if c["status"] == "ok" and c["params"].get("kernel") == "copy" and "gbps" in c["rates"]}
    for c in cases:
        copy = copies.get((c["suite"], c["params"].get("elements")))
        if c["status"] == "ok" and copy and "gbps" in c["rates"]:
            c["rates"]["pct_of_copy"] = 100.0 * c["rates"]["gbps"] / copy["rates"]["gbps"]
            c["details"]["copy_reference"] = {"name": copy["name"], "precision": copy["precision"]}


# ----------------------------------------------------------------------------------------------
# The transformer: mpbench's model and training loop in PyTorch.

def build_gpt(torch, config, compile_model):
    nn, F = torch.nn, torch.nn.functional
    layers, heads, channels = config["layers"], config["heads"], config["channels"]
    vocab, padded_vocab, max_seq = config["vocab"], config["padded_vocab"], config["max_seq"]

    class Conv1D(nn.Module):
        """A linear layer stored as Hugging Face's GPT-2 (and mpbench's checkpoints) store it: [in, out]."""

        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight, self.bias = nn.Parameter(torch.empty(n_in, n_out)), nn.Parameter(torch.zeros(n_out))

        def forward(self, x):
            return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
            self.attn = nn.ModuleDict({"c_attn": Conv1D(channels, 3 * channels), "c_proj": Conv1D(channels, channels)})
            self.mlp = nn.ModuleDict({"c_fc": Conv1D(channels, 4 * channels), "c_proj": Conv1D(4 * channels, channels)})

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.attn["c_attn"](self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
            x = x + self.attn["c_proj"](y)
            return x + self.mlp["c_proj"](F.gelu(self.mlp["c_fc"](self.ln_2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            # wte has the padded rows mpbench has: the LM head's GEMM is as wide; the loss reads the real ones.
            self.wte, self.wpe = nn.Embedding(padded_vocab, channels), nn.Embedding(max_seq, channels)
            self.h = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(channels)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)[..., :vocab]
            return F.cross_entropy(logits.float().reshape(-1, vocab), targets.reshape(-1))

    model = Gpt()
    init_like_gpt2(torch, model, layers, vocab)
    return model, (torch.compile(model) if compile_model else model)


def init_like_gpt2(torch, model, layers, vocab):
    """GPT-2's initialisation (mpbench's distribution, not its values): matrices and embeddings
    normal(0, 0.02), the residual projections 0.02/sqrt(2 layers), biases 0, LayerNorm 1 and 0;
    the padding rows of wte 0."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                p.normal_(0.0, std)
        model.wte.weight[vocab:].zero_()


def load_checkpoint(torch, model, folder: Path, vocab: int):
    try:
        from safetensors.torch import load_file
    except ImportError:
        raise BadInput("--checkpoint-in needs the Python package safetensors (pip install safetensors)") from None
    path = folder / "model.safetensors"
    if not path.is_file():
        raise BadInput(f"{path} is missing")
    try:
        tensors = {k.removeprefix("transformer."): v for k, v in load_file(str(path)).items()}
    except Exception as e:  # safetensors raises its own error types for malformed files
        raise BadInput(f"{path} cannot be read: {e}") from None
    params = dict(model.named_parameters())
    missing, unexpected = sorted(set(params) - set(tensors)), sorted(set(tensors) - set(params))
    if missing or unexpected:
        raise BadInput(f"{path} does not match the document's config: missing {missing[:3]}, unexpected {unexpected[:3]}")
    with torch.no_grad():
        for name, p in params.items():
            t = tensors[name]
            rows = vocab if name == "wte.weight" else p.shape[0]
            if tuple(t.shape) != (rows, *p.shape[1:]):
                raise BadInput(f"{path}: {name} has shape {list(t.shape)}, the config wants {[rows, *p.shape[1:]]}")
            p[:rows].copy_(t)


class TokenFile:
    """mpbench's FileTokenSource: B*T+1 tokens from the current position, wrapping to the start when
    they do not fit; the position moves on by B*T."""

    def __init__(self, torch, path: Path, vocab: int):
        import array
        data = array.array("H")
        try:
            raw = path.read_bytes()
        except OSError as e:
            raise BadInput(f"cannot read {path}: {e}") from None
        if len(raw) % 2:
            raise BadInput(f"{path} has an odd number of bytes: not uint16 tokens")
        data.frombytes(raw)
        if sys.byteorder == "big":
            data.byteswap()
        self.tokens = torch.tensor(data, dtype=torch.long)
        if self.tokens.numel() and int(self.tokens.max()) >= vocab:
            raise BadInput(f"{path} holds token {int(self.tokens.max())}, not below the vocabulary's {vocab}")
        self.position = 0

    def next_batch(self, batch, seq):
        n = batch * seq
        if n + 1 > self.tokens.numel():
            raise BadInput(f"the token file holds {self.tokens.numel()} tokens, fewer than {n + 1} for one batch")
        if self.position + n + 1 > self.tokens.numel():
            self.position = 0
        block = self.tokens[self.position:self.position + n + 1]
        self.position += n
        return block[:-1].view(batch, seq), block[1:].view(batch, seq)


class RandomTokens:
    def __init__(self, torch, vocab, seed):
        self.torch, self.vocab = torch, vocab
        self.generator = torch.Generator().manual_seed(seed)

    def next_batch(self, batch, seq):
        block = self.torch.randint(0, self.vocab, (batch * seq + 1,), generator=self.generator)
        return block[:-1].view(batch, seq), block[1:].view(batch, seq)


MODES = {"fp32": None, "tf32": None, "amp-fp16": "float16", "amp-bf16": "bfloat16"}


def learning_rates(case) -> list[float]:
    """The rates mpbench recorded for each step, else its schedule recomputed: linear warm-up to
    max_lr, cosine decay to a tenth of it by the last step."""
    recorded = case["details"].get("lr")
    p = case["params"]
    steps = int(p["steps"])
    if isinstance(recorded, list) and len(recorded) == steps:
        return [float(x) for x in recorded]
    max_lr, warmup = float(p.get("max_lr", 6e-4)), int(p.get("lr_warmup_steps", max(1, steps // 10)))
    rates = []
    for step in range(steps):
        if step < warmup:
            rates.append(max_lr * (step + 1) / warmup)
            continue
        decay = steps - 1 - warmup
        progress = 1.0 if decay <= 0 else min(1.0, (step - warmup) / decay)
        rates.append(max_lr / 10 + 0.5 * (1 + math.cos(math.pi * progress)) * (max_lr - max_lr / 10))
    return rates


def train_transformer(torch, device, case, args, sync):
    mode, p = case["precision"], case["params"]
    if mode not in MODES:
        raise Skip(f"PyTorch has no built-in {mode} mode (bf16 weights with fp32 master weights); "
                   "its counterpart is amp-bf16")
    if mode == "tf32" and device != "cuda":
        raise Skip("TF32 is a GPU Tensor Core format: PyTorch's CPU matmul has none")
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = mode == "tf32"
    config, batch, seq = p["config"], int(p["batch"]), int(p["seq_len"])
    micro_batches, steps = int(p.get("micro_batches", 1)), int(p["steps"])
    torch.manual_seed(int(case["details"].get("seed", 1)))
    model, forward = build_gpt(torch, config, args.compile)
    if args.checkpoint_in:
        load_checkpoint(torch, model, args.checkpoint_in, config["vocab"])
    model.to(device)
    data = TokenFile(torch, args.data, config["vocab"]) if args.data else RandomTokens(torch, config["vocab"], 1)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=0.0, betas=(0.9, 0.95), eps=1e-8, **{args.optimizer: True})
    autocast = getattr(torch, MODES[mode]) if MODES[mode] else None
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 16, enabled=mode == "amp-fp16")
    losses, norms, times = [], [], []
    for step, lr in enumerate(learning_rates(case)):
        sync()
        start = time.perf_counter()
        loss = 0.0
        for _ in range(micro_batches):
            inputs, targets = (t.to(device) for t in data.next_batch(batch, seq))
            with torch.autocast(device, dtype=autocast or torch.float32, enabled=autocast is not None):
                micro_loss = forward(inputs, targets) / micro_batches
            scaler.scale(micro_loss).backward()
            loss += micro_loss.detach()
        scaler.unscale_(optimizer)
        norm = torch.nn.utils.get_total_norm([q.grad for q in model.parameters()])
        # mpbench clips only above the limit, by exactly limit/norm (clip_grad_norm_ adds 1e-6).
        torch._foreach_mul_([q.grad for q in model.parameters()], torch.clamp(1.0 / norm, max=1.0))
        for group in optimizer.param_groups:
            group["lr"] = lr
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - start)
        losses.append(float(loss))
        norms.append(float(norm))
    return losses, norms, times


def transformer_case(torch, device, case, args, sync):
    losses, norms, times = train_transformer(torch, device, case, args, sync)
    p = case["params"]
    warmup = min(int(p.get("timing_warmup_steps", 1)), len(times) - 2)
    timed = times[max(0, warmup):]
    seconds = statistics_of(timed)
    tokens = int(p.get("tokens_per_step", int(p["batch"]) * int(p["seq_len"]) * int(p.get("micro_batches", 1))))
    rates = {"tokens_per_s": tokens / seconds["median"]}
    flops = case["details"].get("flops", {}).get("per_token")
    if isinstance(flops, (int, float)):
        rates["tflops"] = flops * tokens / seconds["median"] / 1e12
    if device == "cuda":
        rates["peak_memory_bytes"] = torch.cuda.max_memory_allocated()
    details = {"loss": losses, "grad_norm": norms, "final_loss": losses[-1],
               "optimizer": f"torch.optim.AdamW({args.optimizer}=True)",
               "data": str(args.data) if args.data else "uniform random tokens (seed 1)",
               "weights": str(args.checkpoint_in) if args.checkpoint_in else "GPT-2 initialisation (seed of the case)",
               "compile": args.compile}
    return {"seconds": seconds}, rates, details


# ----------------------------------------------------------------------------------------------
# The document.

def cpu_facts() -> tuple[str, dict]:
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown", {}
    model = re.search(r"^model name\s*:\s*(.*)$", info, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", info, re.M)
    present = set(flags.group(1).split()) if flags else set()
    return (model.group(1).strip() if model else "unknown"), {f: f in present for f in CPU_FLAGS}


def git_revision() -> str:
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def environment(torch, device, threads) -> dict:
    model, flags = cpu_facts()
    cuda = torch.cuda.is_available() and device == "cuda"
    gpus = [{"name": torch.cuda.get_device_name(i),
             "compute_capability": ".".join(map(str, torch.cuda.get_device_capability(i)))}
            for i in range(torch.cuda.device_count())] if cuda else []
    return {
        "host": platform.node(), "os": {"system": platform.system(), "release": platform.release()},
        "cpu": {"model": model, "logical_cores": os.cpu_count() or 1, "flags": flags, "threads": threads,
                "omp_num_threads": os.environ.get("OMP_NUM_THREADS")},
        "gpus": gpus, **({} if gpus else {"gpu_status": "not used: the run is on the CPU" if device == "cpu"
                                                       else "PyTorch sees no GPU"}),
        "torch": {"version": torch.__version__, "cuda": torch.version.cuda,
                  "cudnn": torch.backends.cudnn.version() if cuda else None,
                  "mkldnn": torch.backends.mkldnn.is_available(), "threads": threads,
                  "cpu_capability": torch.backends.cpu.get_cpu_capability()},
        "mpbench": {"version": "torch_baseline", "git_revision": git_revision()},
        "compiler": f"Python {platform.python_version()}, PyTorch {torch.__version__}",
        "command": [sys.argv[0], *sys.argv[1:]],
    }


def speedups_of(cases: list[dict]) -> list[dict]:
    """Each precision's speedup over fp32 on the same case, as mpbench computes them."""
    fp32 = {(c["suite"], c["name"], c["backend"]): c["metrics"]["seconds"]["median"]
            for c in cases if c["status"] == "ok" and c["precision"] == "fp32"}
    out = []
    for c in cases:
        base = fp32.get((c["suite"], c["name"], c["backend"]))
        if c["status"] == "ok" and c["precision"] != "fp32" and base:
            out.append({"suite": c["suite"], "name": c["name"], "backend": c["backend"], "baseline": "fp32",
                        "precision": c["precision"], "speedup": base / c["metrics"]["seconds"]["median"]})
    return out


def write_atomically(path: Path, doc: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
    os.replace(temporary, path)


def measure_case(torch, device, sampler, case, args) -> dict:
    backend = "torch-compile" if args.compile and case["suite"] == "transformer" else "torch"
    out = {"suite": case["suite"], "name": case["name"], "backend": backend, "precision": case["precision"],
           "params": dict(case.get("params", {})), "status": "ok", "message": "", "metrics": {}, "rates": {},
           "details": {"pairs_with": {"backend": case["backend"]}}}
    try:
        if case["suite"] == "transformer":
            metrics, rates, details = transformer_case(torch, device, case, args, sampler.sync)
        else:
            make = {"gemm": gemm_operation, "bandwidth": stream_operation, "cast": cast_operation}[case["suite"]]
            values, repeats, converged, reason = sampler.measure(make(torch, device, case))
            metrics = {"seconds": statistics_of(values)}
            rates = microbench_rates(case, metrics["seconds"]["median"])
            details = {"measurement": {"converged": converged, "stop_reason": reason, "ops_per_sample": repeats}}
        out["metrics"], out["rates"] = metrics, rates
        out["details"].update(details)
    except Skip as e:
        out["status"], out["message"] = "skipped", str(e)
    except (RuntimeError, ValueError, TypeError, KeyError) as e:
        out["status"], out["message"] = "error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return out


def sampler_settings(doc: dict, args) -> dict:
    settings = dict(doc.get("run", {}).get("sampler") or {})
    settings.setdefault("max_noise", 0.02 if doc.get("run", {}).get("quick") else 0.005)
    settings.setdefault("min_time_s", 0.05 if doc.get("run", {}).get("quick") else 0.5)
    settings.setdefault("timeout_s", 3.0 if doc.get("run", {}).get("quick") else 15.0)
    for arg, key in (("max_noise", "max_noise"), ("min_time", "min_time_s"), ("timeout", "timeout_s")):
        if getattr(args, arg) is not None:
            settings[key] = getattr(args, arg)
    return settings


def choose_device(torch, doc, args) -> str:
    device = args.device or ("cuda" if str(doc.get("run", {}).get("device", "cpu")).startswith("cuda") else "cpu")
    if device not in ("cpu", "cuda"):
        raise BadInput(f"--device takes cpu or cuda, not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise BadInput("PyTorch sees no GPU (--device cuda, or the document ran on one): pass --device cpu")
    return device


def run(args) -> int:
    doc = read_document(args.cases_from)
    cases = selected_cases(doc, args)
    if args.data and not args.data.is_file():
        raise BadInput(f"--data {args.data}: no such file")
    if args.checkpoint_in and not args.checkpoint_in.is_dir():
        raise BadInput(f"--checkpoint-in {args.checkpoint_in}: no such directory")
    torch = import_torch()
    device = choose_device(torch, doc, args)
    threads = args.threads or int(doc.get("env", {}).get("backend", {}).get("threads") or 0) or torch.get_num_threads()
    torch.set_num_threads(threads)
    settings = sampler_settings(doc, args)
    sampler = Sampler(torch, device, settings)
    results, interrupted, started = [], 0, time.perf_counter()
    try:
        for index, case in enumerate(cases, 1):
            label = f"{case['suite']}/{case['name']}/{case['precision']}"
            print(f"[{index}/{len(cases)} {time.perf_counter() - started:.0f} s] {label}", file=sys.stderr, flush=True)
            results.append(measure_case(torch, device, sampler, case, args))
            if results[-1]["status"] != "ok":
                print(f"  {results[-1]['status']}: {results[-1]['message']}", file=sys.stderr)
    except KeyboardInterrupt as e:
        interrupted = 128 + getattr(e, "number", signal.SIGINT)
        print(f"torch_baseline: interrupted; writing the {len(results)} finished cases", file=sys.stderr)
    add_pct_of_copy(results)
    out = {"schema": SCHEMA, "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "env": environment(torch, device, threads),
           "run": {"suites": sorted({c["suite"] for c in cases}), "device": device, "device_requested": args.device or "",
                   "quick": bool(doc.get("run", {}).get("quick")), "interrupted": bool(interrupted), "sampler": settings,
                   "cases_from": str(args.cases_from), "compile": args.compile},
           "cases": results, "speedups": speedups_of(results)}
    write_atomically(args.out, out)
    print(f"wrote {len(results)} cases to {args.out}", file=sys.stderr)
    if interrupted:
        return interrupted
    return 1 if any(c["status"] == "error" for c in results) else 0


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled as Ctrl-C is: the finished cases are written."""

    def __init__(self, number):
        super().__init__(signal.Signals(number).name)
        self.number = number


def raise_interrupted(number, _frame):
    raise Interrupted(number)


def main(argv=None) -> int:
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, raise_interrupted)
    args = parse_args(argv)
    try:
        return run(args)
    except BadInput as e:
        print(f"torch_baseline: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
