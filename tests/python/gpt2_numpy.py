"""GPT-2's forward and hand-written backward in numpy, with the fp8 training recipes of docs/amp.md
("fp8 training modes"), written from the documentation, not from mpbench's C++: its own e4m3 and
e5m2 quantizer (the table of every finite code value, round to nearest with ties to even by search,
saturating to +-max), per-tensor current scaling (fp8 max / amax), delayed scaling's first step
(every scale 1) and MX blocks (32 elements along K, e8m0 scale 2^(floor(log2 amax) - 8), e4m3 for
every operand). Elsewhere it rounds to bf16 where the bf16 mode stores (amp/policy.cpp's
low_storage_ops: every activation and activation gradient, the weights, the parameter gradients).

Reads a checkpoint folder mpbench writes (model.safetensors, config.json, batch.json; the format of
docs/transformer.md's checkpoint section). Used by test_fp8_first_step.py."""
import json
import struct
from pathlib import Path

import numpy as np


# --- files -------------------------------------------------------------------------------------

def read_safetensors(path):
    """{name: float32 array} of an F32 safetensors file: an 8-byte little-endian header length, a
    JSON header, the raw data."""
    raw = Path(path).read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + length])
    data = raw[8 + length:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(t["shape"]).astype(np.float32)
    return out


CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def is_conv1d(name):
    return name.endswith(CONV1D)


def load_checkpoint(folder):
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text())
    batch = json.loads((folder / "batch.json").read_text())
    weights = read_safetensors(folder / "model.safetensors")
    # The model works on [out, in] matrices; the file holds Conv1D's [in, out].
    params = {k: (v.T.copy() if is_conv1d(k) else v) for k, v in weights.items()}
    return config, batch, params


# --- number formats ----------------------------------------------------------------------------

def bf16(x):
    """x rounded to bf16 (round to nearest, ties to even), as float32 values."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def fp8_values(fmt):
    """The non-negative finite values of e4m3 (OCP fn: bias 7, no infinity, 0x7F NaN) or e5m2 (bias
    15, codes 0x7C.. infinity and NaN), in code order (which is magnitude order)."""
    if fmt == "e4m3":
        man_bits, bias, codes = 3, 7, range(0x7F)
    else:
        man_bits, bias, codes = 2, 15, range(0x7C)
    values = []
    for code in codes:
        e, m = code >> man_bits, code & ((1 << man_bits) - 1)
        frac = m / (1 << man_bits)
        values.append(frac * 2.0 ** (1 - bias) if e == 0 else (1 + frac) * 2.0 ** (e - bias))
    return np.array(values, dtype=np.float64)


FP8 = {f: fp8_values(f) for f in ("e4m3", "e5m2")}
FP8_MAX = {f: FP8[f][-1] for f in FP8}  # 448, 57344


def fp8_round(y, fmt):
    """y (float64, finite) to the nearest value of fmt, ties to the even code, saturating to +-max."""
    table = FP8[fmt]
    a = np.abs(y)
    hi = np.clip(np.searchsorted(table, a, side="left"), 1, len(table) - 1)
    lo = hi - 1
    d_lo, d_hi = a - table[lo], table[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    r = np.where(pick_hi, table[hi], table[lo])
    r = np.where(a >= table[-1], table[-1], r)  # saturate
    return np.copysign(r, y)


class Recipe:
    """How a linear layer's GEMM operands are quantized. kind: none (the plain bf16 mode), current,
    delayed (first step: every scale 1), mxfp8. grad_format overrides the gradients' format (a
    deliberately wrong recipe, for the test that the check can fail)."""

    def __init__(self, kind, grad_format=None, margin=0, mx_rounding="down"):
        self.kind = kind
        self.margin = margin
        self.mx_rounding = mx_rounding
        default = "e4m3" if kind == "mxfp8" else "e5m2"
        self.formats = {"input": "e4m3", "weight": "e4m3", "grad": grad_format or default}

    def __call__(self, x, role, k_axis):
        """The dequantized operand (float32) of x as `role`, its GEMM's K along axis k_axis."""
        if self.kind == "none":
            return x
        fmt = self.formats[role]
        x = f32(x)
        if self.kind == "mxfp8":
            return mx_quantize(x, fmt, k_axis, rounding=self.mx_rounding)
        if self.kind == "delayed":
            scale = np.float32(1)
        else:
            amax = np.float32(np.max(np.abs(x)))
            fmax = np.float32(FP8_MAX[fmt] / 2.0 ** self.margin)
            scale = np.float32(fmax / amax) if np.isfinite(amax) and amax > 0 else np.float32(1)
        inverse = np.float32(np.float32(1) / scale)
        y = (x * scale).astype(np.float32).astype(np.float64)  # x * scale in fp32
        return (fp8_round(y, fmt).astype(np.float32) * inverse).astype(np.float32)


def mx_quantize(x, fmt, k_axis, block=32, rounding="down"):
    """OCP MX: blocks of `block` consecutive elements along k_axis (the last one shorter), scale
    2^(floor(log2 amax) - emax) with emax 8 (e4m3) or 15 (e5m2), clamped to 2^-127; amax 0 gives the
    smallest scale; the elements x / scale rounded to fmt, saturating. rounding "up" (Transformer
    Engine's): the smallest power of two with amax / scale <= the format's max, clamped alike."""
    emax = 8 if fmt == "e4m3" else 15
    moved = np.moveaxis(f32(x), k_axis, -1).astype(np.float64)
    out = np.empty_like(moved)
    K = moved.shape[-1]
    for start in range(0, K, block):
        part = moved[..., start:start + block]
        amax = np.max(np.abs(part), axis=-1, keepdims=True)
        _, e = np.frexp(np.where(amax > 0, amax, 1.0))  # amax = m 2^e, m in [0.5, 1)
        shared = e - 1 - emax
        if rounding == "up":
            shared = np.where(amax / np.ldexp(1.0, shared) > FP8_MAX[fmt], shared + 1, shared)
        shared = np.where(amax > 0, np.maximum(shared, -127), -127)
        scale = np.ldexp(1.0, shared)
        out[..., start:start + block] = fp8_round(part / scale, fmt) * scale
    return np.moveaxis(out, -1, k_axis).astype(np.float32)


# --- the model ---------------------------------------------------------------------------------

EPS = 1e-5
GELU_K = np.sqrt(2.0 / np.pi)


def layernorm_forward(x, w, b):
    xd = x.astype(np.float64)
    m = xd.mean(axis=-1, keepdims=True)
    s = 1.0 / np.sqrt(((xd - m) ** 2).mean(axis=-1, keepdims=True) + EPS)
    y = bf16(f32((xd - m) * s * w + b))
    return y, f32(m), f32(s)


def layernorm_backward(dinp, dy, x, w, m, s):
    """Adds into dinp (bf16 storage); returns dweight, dbias (fp32 sums)."""
    m, s = m.astype(np.float64), s.astype(np.float64)
    xhat = (x - m) * s
    g = dy.astype(np.float64) * w
    g_mean = g.mean(axis=-1, keepdims=True)
    gx_mean = (g * xhat).mean(axis=-1, keepdims=True)
    dx = bf16(f32(dinp.astype(np.float64) + s * (g - g_mean - xhat * gx_mean)))
    return dx, f32((dy * xhat).sum(axis=0)), f32(dy.astype(np.float64).sum(axis=0))


def gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(GELU_K * (x + 0.044715 * x ** 3)))


def gelu_grad(x):
    x = x.astype(np.float64)
    u = GELU_K * (x + 0.044715 * x ** 3)
    t = np.tanh(u)
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * GELU_K * (1 + 3 * 0.044715 * x * x)


# The linear layers' GEMM sums: double (fp32 would sum in another order than mpbench's oneDNN; either
# is "fp32 accumulation" to within fp32 rounding).
ACCUMULATE = np.float64


def gemm(a, b_t):
    """a [M,K] @ b_t.T, products of fp32 values summed in ACCUMULATE, the result in fp32."""
    return f32(a.astype(ACCUMULATE) @ b_t.astype(ACCUMULATE).T)


class Model:
    def __init__(self, config, params, recipe):
        self.C = config["n_embd"]
        self.L = config["n_layer"]
        self.NH = config["n_head"]
        # The working copy: every weight in bf16 (the modes' weight storage).
        self.p = {k: bf16(v) for k, v in params.items()}
        self.q = recipe

    def linear_forward(self, x, w, b):
        xq = self.q(x, "input", 1)
        wq = self.q(w, "weight", 1)
        out = xq.astype(ACCUMULATE) @ wq.astype(ACCUMULATE).T
        if b is not None:
            out = out + b
        return bf16(f32(out))

    def linear_backward(self, dout, x, w, has_bias):
        d_rows = self.q(dout, "grad", 1)
        dx = bf16(gemm(d_rows, self.q(w, "weight", 0).T))
        d_cols = self.q(dout, "grad", 0) if self.q.kind == "mxfp8" else d_rows
        dw = bf16(gemm(d_cols.T, self.q(x, "input", 0).T))
        db = bf16(f32(dout.astype(np.float64).sum(axis=0))) if has_bias else None
        return dx, dw, db

    def attention_forward(self, qkv, B, T):
        C, NH = self.C, self.NH
        hs = C // NH
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3) for i in range(3))
        scale = np.float32(1.0 / np.sqrt(np.float32(hs)))
        scores = f32(q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2)) * scale
        mask = np.tril(np.ones((T, T), dtype=bool))
        scores = np.where(mask, scores, -np.inf).astype(np.float32)
        e = np.exp(scores - scores.max(axis=-1, keepdims=True)).astype(np.float32)
        att = f32(e * f32(1.0 / e.sum(axis=-1, keepdims=True, dtype=np.float32)))
        y = f32(bf16(att).astype(np.float64) @ v.astype(np.float64))
        return bf16(y.transpose(0, 2, 1, 3).reshape(B * T, C)), att, scale

    def attention_backward(self, dy, qkv, att, scale, B, T):
        C, NH = self.C, self.NH
        hs = C // NH
        q, k, v = (qkv[:, i * C:(i + 1) * C].reshape(B, T, NH, hs).transpose(0, 2, 1, 3).astype(np.float64)
                   for i in range(3))
        dyh = dy.reshape(B, T, NH, hs).transpose(0, 2, 1, 3).astype(np.float64)
        datt = f32(dyh @ v.transpose(0, 1, 3, 2))
        weighted = (att * datt).sum(axis=-1, keepdims=True, dtype=np.float32)
        dscore = bf16(f32(att * (datt - weighted) * scale)).astype(np.float64)
        att_b = bf16(att).astype(np.float64)
        dv = f32(att_b.transpose(0, 1, 3, 2) @ dyh)
        dq = f32(dscore @ k)
        dk = f32(dscore.transpose(0, 1, 3, 2) @ q)
        parts = [d.transpose(0, 2, 1, 3).reshape(B * T, C) for d in (dq, dk, dv)]
        return bf16(np.concatenate(parts, axis=1))

    def loss_and_grads(self, inputs, targets):
        p, C = self.p, self.C
        inputs, targets = np.asarray(inputs), np.asarray(targets)
        B, T = inputs.shape
        N = B * T
        tok, tgt = inputs.reshape(-1), targets.reshape(-1)
        pos = np.tile(np.arange(T), B)
        V = p["wte.weight"].shape[0]
        acts = []
        res = bf16(f32(p["wte.weight"][tok] + p["wpe.weight"][pos]))
        for l in range(self.L):
            h = f"h.{l}."
            a = {"res_in": res}
            a["ln1"], a["ln1_m"], a["ln1_s"] = layernorm_forward(res, p[h + "ln_1.weight"], p[h + "ln_1.bias"])
            a["qkv"] = self.linear_forward(a["ln1"], p[h + "attn.c_attn.weight"], p[h + "attn.c_attn.bias"])
            a["atty"], a["att"], a["scale"] = self.attention_forward(a["qkv"], B, T)
            attproj = self.linear_forward(a["atty"], p[h + "attn.c_proj.weight"], p[h + "attn.c_proj.bias"])
            a["res2"] = bf16(f32(res + attproj))
            a["ln2"], a["ln2_m"], a["ln2_s"] = layernorm_forward(a["res2"], p[h + "ln_2.weight"], p[h + "ln_2.bias"])
            a["fch"] = self.linear_forward(a["ln2"], p[h + "mlp.c_fc.weight"], p[h + "mlp.c_fc.bias"])
            a["gelu"] = bf16(f32(gelu(a["fch"])))
            fcproj = self.linear_forward(a["gelu"], p[h + "mlp.c_proj.weight"], p[h + "mlp.c_proj.bias"])
            res = bf16(f32(a["res2"] + fcproj))
            acts.append(a)
        lnf, lnf_m, lnf_s = layernorm_forward(res, p["ln_f.weight"], p["ln_f.bias"])
        logits = self.linear_forward(lnf, p["wte.weight"], None)
        z = logits.astype(np.float32)
        zmax = z.max(axis=1, keepdims=True)
        e = np.exp(z - zmax).astype(np.float32)
        total = e.astype(np.float64).sum(axis=1, keepdims=True)
        probs = f32(e * f32(1.0 / total))
        losses = np.log(total[:, 0]) - (z[np.arange(N), tgt].astype(np.float64) - zmax[:, 0])
        loss = float(np.mean(f32(losses).astype(np.float64)))

        g = {}
        dloss = np.float32(1.0 / N)
        dz = f32(dloss * probs)
        dz[np.arange(N), tgt] -= dloss
        dz = bf16(dz)
        dlnf, dwte_head, _ = self.linear_backward(dz, lnf, p["wte.weight"], False)
        dres, g["ln_f.weight"], g["ln_f.bias"] = layernorm_backward(np.zeros_like(res), dlnf, res, p["ln_f.weight"],
                                                                    lnf_m, lnf_s)
        for l in reversed(range(self.L)):
            h, a = f"h.{l}.", acts[l]
            dres2 = dres  # residual_2: both branches get dres3
            dgelu, g[h + "mlp.c_proj.weight"], g[h + "mlp.c_proj.bias"] = self.linear_backward(
                dres, a["gelu"], p[h + "mlp.c_proj.weight"], True)
            dfch = bf16(f32(gelu_grad(a["fch"]) * dgelu))
            dln2, g[h + "mlp.c_fc.weight"], g[h + "mlp.c_fc.bias"] = self.linear_backward(
                dfch, a["ln2"], p[h + "mlp.c_fc.weight"], True)
            dres2, g[h + "ln_2.weight"], g[h + "ln_2.bias"] = layernorm_backward(
                dres2, dln2, a["res2"], p[h + "ln_2.weight"], a["ln2_m"], a["ln2_s"])
            datty, g[h + "attn.c_proj.weight"], g[h + "attn.c_proj.bias"] = self.linear_backward(
                dres2, a["atty"], p[h + "attn.c_proj.weight"], True)
            dqkv = self.attention_backward(datty, a["qkv"], a["att"], a["scale"], B, T)
            dln1, g[h + "attn.c_attn.weight"], g[h + "attn.c_attn.bias"] = self.linear_backward(
                dqkv, a["ln1"], p[h + "attn.c_attn.weight"], True)
            dres, g[h + "ln_1.weight"], g[h + "ln_1.bias"] = layernorm_backward(
                dres2, dln1, a["res_in"], p[h + "ln_1.weight"], a["ln1_m"], a["ln1_s"])
        dwte = dwte_head.copy()
        dwpe = np.zeros_like(p["wpe.weight"])
        np.add.at(dwte, tok, dres)
        np.add.at(dwpe, pos, dres)
        g["wte.weight"], g["wpe.weight"] = dwte[:V], dwpe
        grads = {k: bf16(v) for k, v in g.items()}  # the optimizer reads bf16 gradients
        # In the file's layout.
        grads = {k: (v.T.copy() if is_conv1d(k) else v) for k, v in grads.items()}
        return loss, grads


def evaluate(folder, recipe):
    """(loss, {name: gradient in the file's layout}) of the checkpoint's batch under `recipe`."""
    config, batch, params = load_checkpoint(folder)
    model = Model(config, params, recipe)
    return model.loss_and_grads(batch["inputs"], batch["targets"])
