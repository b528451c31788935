#!/usr/bin/env python3
"""PyTorch eager GPT-2 training with bf16 autocast (or another mode) on this GPU, for the
transformer target: mpbench's gpt2-124m bf16 tokens/s against PyTorch's on the same config, in the
same device call. A plain nanoGPT-style model written here (pre-LayerNorm blocks, fused QKV,
scaled_dot_product_attention with is_causal, tanh-GELU MLP, tied LM head, vocabulary padded to 50304,
GPT-2's initialisation),
AdamW (0.9, 0.95, weight decay 0.1), random tokens; steps timed with CUDA events after warm-up."""
import argparse
import json
import statistics
import sys

CONFIGS = {"gpt2-124m": (12, 12, 768), "gpt2-350m": (24, 16, 1024), "gpt2-774m": (36, 20, 1280)}


def build_model(torch, layers, heads, channels, vocab, max_seq):
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(channels), nn.LayerNorm(channels)
            self.c_attn, self.attn_proj = nn.Linear(channels, 3 * channels), nn.Linear(channels, channels)
            self.c_fc, self.mlp_proj = nn.Linear(channels, 4 * channels), nn.Linear(4 * channels, channels)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, heads, C // heads).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
            x = x + self.attn_proj(y)
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, channels), nn.Embedding(max_seq, channels)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(channels)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)
            return F.cross_entropy(logits.float().reshape(-1, vocab), targets.reshape(-1))

    return init_like_gpt2(torch, Gpt(), layers)


def init_like_gpt2(torch, model, layers):
    """GPT-2's initialisation, as mpbench's model has it: matrices normal(0, 0.02), the residual
    projections scaled by 1/sqrt(2 layers), biases 0 (LayerNorm keeps weight 1, bias 0)."""
    nn = torch.nn
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                std = 0.02 / (2 * layers) ** 0.5 if name.endswith("_proj") else 0.02
                nn.init.normal_(module.weight, 0.0, std)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)
    return model


def make_optimizer(torch, model):
    """AdamW as nanoGPT sets it up: weight decay on matrices only."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                             lr=6e-4, betas=(0.9, 0.95), eps=1e-8)


def train_step(torch, model, optimizer, scaler, dtype, tokens):
    """One AdamW step on a (batch, seq + 1) block of tokens, autocast to dtype unless it is None."""
    device = tokens.device.type
    with torch.autocast(device, dtype=dtype or torch.float32, enabled=dtype is not None):
        loss = model(tokens[:, :-1], tokens[:, 1:])
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    return loss


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--config", default="gpt2-124m", choices=sorted(CONFIGS))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--mode", default="amp-bf16", choices=["fp32", "tf32", "amp-fp16", "amp-bf16"])
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_gpt2_baseline: PyTorch is not installed", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch_gpt2_baseline: PyTorch sees no GPU", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = args.mode == "tf32"
    torch.backends.cudnn.allow_tf32 = args.mode == "tf32"
    layers, heads, channels = CONFIGS[args.config]
    vocab = 50304
    torch.manual_seed(1)
    model = build_model(torch, layers, heads, channels, vocab, 1024).cuda()
    optimizer = make_optimizer(torch, model)
    dtype = {"amp-fp16": torch.float16, "amp-bf16": torch.bfloat16}.get(args.mode)
    scaler = torch.amp.GradScaler("cuda", enabled=args.mode == "amp-fp16")
    tokens = torch.randint(0, 50257, (args.steps, args.batch, args.seq + 1), device="cuda")
    times, losses = [], []
    for step in range(args.steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = train_step(torch, model, optimizer, scaler, dtype, tokens[step])
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
        losses.append(loss.item())
    timed = times[args.warmup:]
    median = statistics.median(timed)
    result = {"config": args.config, "mode": args.mode, "batch": args.batch, "seq_len": args.seq,
              "steps": args.steps, "warmup": args.warmup, "step_seconds": timed, "median_step_s": median,
              "tokens_per_s": args.batch * args.seq / median, "losses": losses,
              "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
              "peak_memory_bytes": torch.cuda.max_memory_allocated()}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"torch {args.config} {args.mode} B={args.batch} T={args.seq}: {median * 1e3:.1f} ms/step, "
          f"{result['tokens_per_s']:.0f} tokens/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
