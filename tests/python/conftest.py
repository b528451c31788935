"""Shared by the Python tests: fixture result documents for the report tests, built here and checked
against the real schema, and the machine's smallest bandwidth size for short real runs."""
import importlib.util
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "results" / "schema" / "result-1.schema.json"
REPORT_PATH = ROOT / "scripts" / "report.py"


def smallest_bandwidth_elements(binary):
    """The bandwidth sweep follows the machine's cache (up to 2^29 elements on a 480 MiB one): its
    smallest size keeps a test run short."""
    listed = subprocess.run([str(binary), "list", "--suite", "bandwidth", "--quick", "--device", "cpu"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    return min(int(n) for n in re.findall(r"bandwidth/memcpy/n=(\d+)/", listed))


@pytest.fixture(scope="session")
def report():
    spec = importlib.util.spec_from_file_location("mpbench_report", REPORT_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def seconds(median, spread=0.01):
    values = [median * (1 + spread * f) for f in (-1.0, -0.5, 0.0, 0.5, 1.0)]
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "mean": statistics.fmean(values), "stddev": statistics.stdev(values), "samples": len(values),
            "values": values}


def case(suite, name, precision, params, rates, median=None, backend="cuda", status="ok", message="",
         details=None):
    c = {"suite": suite, "name": name, "backend": backend, "precision": precision, "params": params,
         "status": status, "message": message, "metrics": {}, "rates": rates, "details": details or {}}
    if median is not None:
        c["metrics"]["seconds"] = seconds(median)
    return c


# Peak TFLOP/s the fixture GPU's datasheet would give, per precision.
PEAKS = {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0}


def gemm_case(name, group, m, n, k, precision, tflops, with_counts=True):
    params = {"group": group, "m": m, "n": n, "k": k, "batch": 1}
    if with_counts:
        in_bytes, out_bytes = (4, 4) if precision in ("fp32", "tf32") else (2, 2)
        params.update(flops=2.0 * m * n * k, bytes=(m * k + n * k) * in_bytes + m * n * out_bytes)
    rates = {"tflops": tflops, "pct_of_peak": 100.0 * tflops / PEAKS[precision]}
    return case("gemm", name, precision, params, rates, median=2.0 * m * n * k / (tflops * 1e12))


def gemm_cases(scale=1.0):
    cases = []
    for size, fraction in ((1024, 0.4), (2048, 0.6), (4096, 0.8)):
        for precision in ("fp32", "tf32", "bf16"):
            cases.append(gemm_case(f"square_{size}", "square", size, size, size, precision,
                                   scale * fraction * PEAKS[precision], with_counts=size != 2048))
    for name, (m, n, k) in {"gpt2-124m/qkv": (8192, 2304, 768), "gpt2-124m/fc": (8192, 3072, 768)}.items():
        for precision in ("fp32", "bf16"):
            cases.append(gemm_case(name, "gpt2", m, n, k, precision, scale * 0.7 * PEAKS[precision]))
    for size in (4095, 4096, 4097):
        cases.append(gemm_case(f"align_{size}", "alignment", size, size, size, "bf16",
                               scale * (0.8 if size % 8 == 0 else 0.3) * PEAKS["bf16"]))
    cases.append(gemm_case("custom_512x512x512x1", "custom", 512, 512, 512, "bf16", scale * 0.2 * PEAKS["bf16"]))
    return cases


L2_BYTES = 40 * 2**20


def bandwidth_cases():
    cases = []
    for elements in (2**16, 2**20, 2**24, 2**26):
        nbytes = 2 * 4 * elements
        gbps = 3000.0 if nbytes < L2_BYTES else 1500.0 + elements / 2**26  # the L2 -> HBM cliff
        params = {"kernel": "copy", "elements": elements, "dtype": "fp32", "bytes": nbytes, "cache_bytes": L2_BYTES}
        cases.append(case("bandwidth", f"copy/n={elements}", "fp32", params, {"gbps": gbps},
                          median=nbytes / (gbps * 1e9)))
    params = {"kernel": "h2d_pinned", "bytes": 2**28}
    cases.append(case("bandwidth", "h2d_pinned/bytes=268435456", "fp32", params, {"gbps": 25.0},
                      median=2**28 / 25e9))
    return cases


def cast_cases():
    n = 2**24
    copy = case("cast", f"copy/n={n}", "fp32", {"kernel": "copy", "elements": n, "bytes": 8.0 * n},
                {"gbps": 1500.0}, median=8.0 * n / 1500e9)
    bf16 = case("cast", f"f32_to_bf16/n={n}", "bf16",
                {"kernel": "f32_to_bf16", "elements": n, "from": "fp32", "to": "bf16", "bytes": 6.0 * n},
                {"gbps": 1200.0, "pct_of_copy": 80.0}, median=6.0 * n / 1200e9)
    return [copy, bf16]


MODES = ("fp32", "tf32", "amp-bf16")


def transformer_cases(tokens_per_s, with_details=True):
    cases = []
    for mode, speed in zip(MODES, (1.0, 2.5, 4.0)):
        details = {}
        if with_details:
            details = {"breakdown": {"gemm": 0.5 / speed, "elementwise": 0.2, "optimizer": 0.05},
                       "loss": [10.8 - 0.1 * s for s in range(50)], "entropy_floor": 3.2}
            if mode == "amp-bf16":
                details["loss_scale"] = [65536.0 / (2 ** (s // 20)) for s in range(50)]
        rates = {"tokens_per_s": tokens_per_s * speed, "peak_memory_bytes": (8 - speed) * 2**30}
        cases.append(case("transformer", "gpt2-124m", mode, {"layers": 12, "width": 768}, rates,
                          median=1.0 / speed, details=details))
    return cases


def speedups(cases, baseline="fp32"):
    base = {(c["suite"], c["name"], c["backend"]): c["metrics"]["seconds"]["median"]
            for c in cases if c["status"] == "ok" and c["precision"] == baseline}
    out = []
    for c in cases:
        key = (c["suite"], c["name"], c["backend"])
        if c["status"] == "ok" and c["precision"] != baseline and key in base:
            out.append({"suite": key[0], "name": key[1], "backend": key[2], "baseline": baseline,
                        "precision": c["precision"], "speedup": base[key] / c["metrics"]["seconds"]["median"]})
    return out


def document(cases, gpu="NVIDIA A100-SXM4-80GB", cuda="12.4", created="2026-12-02T10:00:00Z"):
    env = {"host": "runner", "os": {"name": "Debian GNU/Linux 12"},
           "cpu": {"model": "AMD EPYC 7763", "logical_cores": 64, "flags": {"avx2": True}},
           "gpus": [{"name": gpu, "compute_capability": "8.0", "driver_version": "550.54.15", "l2_bytes": L2_BYTES}],
           "cuda": {"runtime": cuda, "driver": cuda, "cublas": "12.4.5"}, "compiler": "GNU 12.2.0",
           "mpbench": {"version": "0.1.0", "git_revision": "abc123"}}
    suites = sorted({c["suite"] for c in cases})
    return {"schema": "mpbench.result/1", "created": created, "env": env,
            "run": {"suites": suites, "device": "cuda"}, "cases": cases, "speedups": speedups(cases)}


@pytest.fixture
def write_document(tmp_path, validator):
    """Writes a document after checking it against the schema, so fixtures never drift from it."""
    def write(name, doc):
        validator.validate(doc)
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path
    return write
