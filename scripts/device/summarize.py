#!/usr/bin/env python3
"""The short table at the end of scripts/device/check.sh: tests, the headline figures of the quick
run, and the issue's targets (GEMM against torch.matmul, copy against cudaMemcpy, casts against
copy), each PASS, FAIL or not measured. Standard library only: it runs on the bare GPU machine."""
import argparse
import json
import os
import re
import sys


def load(path):
    if not path or not os.path.exists(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except ValueError as e:
        print(f"summarize: {path} is not JSON ({e}): left out")
        return None


def ok_cases(doc, suite):
    return [c for c in doc.get("cases", []) if c["suite"] == suite and c["status"] == "ok"]


def verdict(ratio, target):
    if ratio is None:
        return "not measured"
    return f"{'PASS' if ratio >= target else 'FAIL'} ({100 * ratio:.0f}% vs >= {100 * target:.0f}%)"


def at_least(value, target, show):
    """PASS or FAIL of value against a target it must reach, both shown as show() writes them."""
    if value is None:
        return f"not measured (target >= {show(target)})"
    return f"{'PASS' if value >= target else 'FAIL'} ({show(value)}, target >= {show(target)})"


def test_lines(path):
    rows = []
    if not path or not os.path.exists(path):
        return ["tests: not run"]
    binary = None
    counts = {}
    with open(path) as f:
        for line in f:
            if line.startswith("-- "):
                binary = line[3:].strip()
                counts[binary] = {"passed": 0, "failed": 0, "skipped": 0, "exit": "?", "reasons": []}
            m = re.match(r"\[\s+(PASSED|FAILED|SKIPPED)\s+\]\s+(\d+) test", line)
            if m and binary:
                counts[binary][m.group(1).lower()] = int(m.group(2))
            if line.startswith("exit ") and binary:
                counts[binary]["exit"] = line.split()[1]
            if line.startswith("skipped ") and binary:
                counts[binary]["reasons"].append(line.strip())
    for name, c in counts.items():
        rows.append(f"{name:<22} passed {c['passed']:>4}  failed {c['failed']:>3}  skipped {c['skipped']:>3}  exit {c['exit']}")
        rows += [f"   {reason}" for reason in c["reasons"]]
    return rows


def gemm_rows(doc):
    rows = []
    for c in ok_cases(doc, "gemm"):
        if c["name"] in ("square_8192", "align_4095", "align_4096", "align_4097", "gpt2-124m/lm_head_50257",
                         "gpt2-124m/lm_head_50304"):
            algo = c["details"].get("algorithm", {})
            peak = c["rates"].get("pct_of_peak")
            rows.append(f"{c['name']:<26} {c['precision']:<11} {c['rates']['tflops']:8.1f} TFLOP/s"
                        f"  {'' if peak is None else f'{peak:5.1f}% peak'}  tensor_cores={algo.get('tensor_cores')}")
    return rows


def best_square(doc, precision):
    """The square GEMM case of this precision with the highest rate, or None."""
    cases = [c for c in ok_cases(doc, "gemm") if c["precision"] == precision and c["name"].startswith("square_")]
    return max(cases, key=lambda c: c["rates"]["tflops"]) if cases else None


def torch_rate(torch_doc, suite, name, precision, rate):
    """A rate of PyTorch's case of the same suite, name and precision (scripts/torch_baseline.py's
    document), or None where it has none or it did not run."""
    for c in (torch_doc or {}).get("cases", []):
        if (c.get("suite"), c.get("name"), c.get("precision"), c.get("status")) == (suite, name, precision, "ok"):
            return c.get("rates", {}).get(rate)
    return None


def largest(cases, kernel, precision="fp32"):
    chosen = [c for c in cases if c["params"].get("kernel") == kernel and c["precision"] == precision]
    return max(chosen, key=lambda c: c["params"].get("elements", 0)) if chosen else None


def microbench_rows(doc, torch):
    """The quick run's headline figures and the microbenchmark targets: GEMM against torch.matmul,
    copy against cudaMemcpy, casts against copy."""
    if doc is None:
        return ["== mpbench run --quick: no result document", "== targets"]
    gpu = (doc["env"].get("gpus") or [{}])[0].get("name", doc["env"]["cpu"]["model"])
    statuses = [c["status"] for c in doc["cases"]]
    rows = [f"== mpbench run on {gpu} ({doc['run']['device']}): {statuses.count('ok')} ok, "
            f"{statuses.count('skipped')} skipped, {statuses.count('error')} error"]
    rows += [f"   error {c['suite']}/{c['name']}/{c['precision']}: {c['message']}"
             for c in doc["cases"] if c["status"] == "error"]
    rows += gemm_rows(doc)
    rows.append("== targets")
    for precision in ("bf16", "fp16"):
        best = best_square(doc, precision)
        ours = best["rates"]["tflops"] if best else None
        theirs = torch_rate(torch, "gemm", best["name"], precision, "tflops") if best else None
        ratio = ours / theirs if ours and theirs else None
        rows.append(f"gemm {precision} best square vs torch.matmul ({best['name'] if best else '-'}): "
                    f"{'-' if ours is None else f'{ours:.1f}'} vs {'-' if theirs is None else f'{theirs:.1f}'} TFLOP/s  "
                    f"{verdict(ratio, 0.90)}")
    bandwidth = ok_cases(doc, "bandwidth")
    copy, memcpy = largest(bandwidth, "copy"), largest(bandwidth, "memcpy")
    ratio = copy["rates"]["gbps"] / memcpy["rates"]["gbps"] if copy and memcpy else None
    rows.append(f"copy kernel vs cudaMemcpy (largest size): "
                f"{'-' if not copy else round(copy['rates']['gbps'])} vs "
                f"{'-' if not memcpy else round(memcpy['rates']['gbps'])} GB/s  {verdict(ratio, 0.90)}")
    for c in ok_cases(doc, "cast"):
        if c["params"].get("kernel") == "copy":
            continue
        pct = c["rates"].get("pct_of_copy")
        rows.append(f"cast {c['params']['kernel']:<24} {c['rates']['gbps']:8.1f} GB/s  "
                    f"{verdict(None if pct is None else pct / 100, 0.85)}")
    return rows


def transformer_rows(doc, torch_gpt2):
    """The training targets: bf16 tokens/s >= 1.3x PyTorch eager bf16 autocast, MFU >= 40%, and the
    amp modes' final loss within 2% of fp32's."""
    if doc is None:
        return ["transformer: no result document"]
    rows = []
    cases = {c["precision"]: c for c in doc["cases"] if c["suite"] == "transformer"}
    for mode, c in cases.items():
        if c["status"] != "ok":
            rows.append(f"transformer {c['name']} {mode:<9} {c['status']}: {c['message']}")
            continue
        mfu = c["rates"].get("mfu")
        rows.append(f"transformer {c['name']} {mode:<9} {c['params'].get('attention', '-'):<8} "
                    f"{c['metrics']['seconds']['median'] * 1e3:8.1f} ms/step "
                    f"{c['rates']['tokens_per_s']:10.0f} tok/s  MFU {'-' if mfu is None else f'{100 * mfu:.1f}%'}  "
                    f"final loss {c['details'].get('final_loss')}")
    bf16 = cases.get("bf16")
    ours = bf16["rates"]["tokens_per_s"] if bf16 and bf16["status"] == "ok" else None
    theirs = torch_rate(torch_gpt2, "transformer", bf16["name"], "amp-bf16", "tokens_per_s") if bf16 else None
    speedup = ours / theirs if ours and theirs else None
    rows.append(f"transformer bf16 tokens/s vs PyTorch eager bf16 autocast: {'-' if ours is None else round(ours)} vs "
                f"{'-' if theirs is None else round(theirs)}  "
                f"{at_least(speedup, 1.3, lambda x: f'{x:.2f}x')}")
    mfu = bf16["rates"].get("mfu") if ours else None
    rows.append(f"transformer bf16 MFU: {at_least(mfu, 0.40, lambda x: f'{100 * x:.1f}%')}")
    for mode in ("amp-fp16", "amp-bf16"):
        c = cases.get(mode)
        gap = c["details"].get("final_loss_vs_fp32") if c and c["status"] == "ok" else None
        rows.append(f"transformer {mode} final loss vs fp32: "
                    f"{'not measured' if gap is None else ('PASS' if abs(gap) <= 0.02 else 'FAIL') + f' ({100 * gap:+.2f}%, target within 2%)'}")
    return rows


def storage_rows(half_doc, emulated_doc):
    """What half activation storage bought over the emulation, per mode measured both ways: step time
    and peak memory, from two runs in the same call."""
    if half_doc is None or emulated_doc is None:
        return ["activation storage: " + ("no emulated run" if half_doc else "no transformer run")]
    rows = []
    half = {c["precision"]: c for c in half_doc["cases"] if c["suite"] == "transformer" and c["status"] == "ok"}
    for e in emulated_doc["cases"]:
        h = half.get(e["precision"])
        if e["suite"] != "transformer" or e["status"] != "ok" or h is None:
            continue
        t_half, t_emulated = h["metrics"]["seconds"]["median"], e["metrics"]["seconds"]["median"]
        m_half, m_emulated = h["rates"]["peak_memory_bytes"], e["rates"]["peak_memory_bytes"]
        rows.append(f"storage {e['precision']:<9} {h['params'].get('activation_storage', '-')} vs emulated: "
                    f"{t_half * 1e3:.1f} vs {t_emulated * 1e3:.1f} ms/step ({t_emulated / t_half:.2f}x), "
                    f"peak {m_half / 2**20:.0f} vs {m_emulated / 2**20:.0f} MiB")
    return rows or ["activation storage: no mode measured both ways"]


def without_profile(profiled_case, plain_doc):
    """How the --profile run's steps compare with the same mode's in the run without --profile (a
    process of its own, no CUPTI loaded): its timed steps (NVTX reaching CUPTI, CUPTI loaded by an
    earlier mode) and its profiled steps, each against the plain run's median."""
    plain = next((c for c in (plain_doc or {}).get("cases", []) if c["suite"] == "transformer"
                  and c["status"] == "ok" and c["name"] == profiled_case["name"]
                  and c["precision"] == profiled_case["precision"]), None)
    if plain is None:
        return ""
    base = plain["metrics"]["seconds"]["median"]
    timed = profiled_case["metrics"]["seconds"]["median"]
    profiled = profiled_case["details"]["profile"].get("profiled_step_median_s")
    text = f"; against the run without --profile: timed steps {100 * (timed / base - 1):+.1f}%"
    return text + ("" if profiled is None else f", profiled steps {100 * (profiled / base - 1):+.1f}%")


def profile_rows(doc, plain_doc=None):
    """The profiler targets: overhead under 5% of step time, unattributed time under 1%."""
    if doc is None:
        return ["profile: no result document"]
    rows = []
    for c in doc["cases"]:
        if c["suite"] != "transformer" or c["status"] != "ok":
            continue
        profile = c["details"].get("profile", {})
        if profile.get("status") != "profiled":
            rows.append(f"profile {c['name']} {c['precision']}: {profile.get('status')} ({profile.get('reason')})")
            continue
        overhead = profile.get("overhead")
        breakdown = c["details"].get("breakdown", {})
        total = sum(v for v in breakdown.get("categories", {}).values() if isinstance(v, (int, float)))
        unattributed = breakdown.get("unattributed_s")
        share = unattributed / total if unattributed is not None and total > 0 else None
        rows.append(f"profile {c['name']} {c['precision']}: overhead "
                    f"{'not measured' if overhead is None else ('PASS' if overhead < 0.05 else 'FAIL')} "
                    f"({'-' if overhead is None else f'{100 * overhead:.1f}%'}, target < 5%); unattributed "
                    f"{'-' if share is None else f'{100 * share:.2f}%'} (target < 1%); NVTX ranges/step "
                    f"{profile.get('nvtx_ranges_per_step', '-')}{without_profile(c, plain_doc)}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--result")
    parser.add_argument("--torch")
    parser.add_argument("--tests")
    parser.add_argument("--transformer")
    parser.add_argument("--torch-gpt2")
    parser.add_argument("--profile")
    parser.add_argument("--emulated")
    args = parser.parse_args()
    doc, torch = load(args.result), load(args.torch)

    print("== tests")
    print("\n".join(test_lines(args.tests)))
    print("\n".join(microbench_rows(doc, torch)))
    print("\n".join(transformer_rows(load(args.transformer), load(args.torch_gpt2))))
    print("\n".join(storage_rows(load(args.transformer), load(args.emulated))))
    print("\n".join(profile_rows(load(args.profile), load(args.transformer))))
    return 0 if doc else 1


if __name__ == "__main__":
    sys.exit(main())
