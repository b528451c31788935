#!/usr/bin/env python3
"""PyTorch's own matmul and copy on this GPU, measured in the same device call as mpbench, so the
targets (mpbench GEMM >= 90% of torch.matmul, copy >= 90% of cudaMemcpy) compare like with like.
Random inputs, CUDA events, warm-up first, median of the timed launches."""
import argparse
import json
import statistics
import sys


def timed(torch, fn, warmup=3, iterations=20):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return statistics.median(times), min(times), max(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--size", type=int, default=8192, help="square matmul size")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("torch_baseline: PyTorch is not installed", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch_baseline: PyTorch sees no GPU", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    n = args.size
    result = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
              "matmul": {}, "copy": {}}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)):
        a = torch.randn(n, n, device="cuda", dtype=dtype)
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        median, low, high = timed(torch, lambda: torch.matmul(a, b))
        result["matmul"][name] = {"m": n, "n": n, "k": n, "seconds_median": median, "seconds_min": low,
                                  "seconds_max": high, "tflops": 2.0 * n ** 3 / median / 1e12}
        print(f"torch.matmul {name} {n}^3: {result['matmul'][name]['tflops']:.1f} TFLOP/s")
        del a, b
    elements = 256 * 1024 * 1024  # 1 GiB of fp32, well past L2
    src = torch.rand(elements, device="cuda")
    dst = torch.empty_like(src)
    median, low, high = timed(torch, lambda: dst.copy_(src))
    result["copy"] = {"bytes_read_plus_written": 8 * elements, "seconds_median": median,
                      "gbps": 8 * elements / median / 1e9}
    print(f"tensor.copy_ 1 GiB: {result['copy']['gbps']:.0f} GB/s (read + written)")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
