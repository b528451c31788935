"""`mpbench numerics --json` against numpy.float16 and ml_dtypes (bfloat16, float8_e4m3fn,
float8_e5m2), and tf32 against exact rational rounding, over random values and edge cases."""
import json
import math
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes", reason="pip install ml_dtypes to compare bf16/fp8 conversions")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"mpbench binary not found at {BIN}; build it or set MPBENCH_BIN"),
    # Overflow to inf and NaN bit patterns are what these tests are about, not accidents.
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
    pytest.mark.filterwarnings("ignore:invalid value encountered in cast:RuntimeWarning"),
]

# format name in mpbench -> (numpy dtype, unsigned view of its bits)
DTYPES = {
    "fp16": (np.float16, np.uint16),
    "bf16": (ml_dtypes.bfloat16, np.uint16),
    "fp8-e4m3": (ml_dtypes.float8_e4m3fn, np.uint8),
    "fp8-e5m2": (ml_dtypes.float8_e5m2, np.uint8),
}
BATCH = 4000  # values per invocation, well inside the argument-list limit


def run(*args):
    return subprocess.run([str(BIN), "numerics", *args], capture_output=True, text=True, timeout=120)


def numerics(values, *flags):
    """The JSON results for `values`, keyed by input text, invoked in batches."""
    results = {}
    for start in range(0, len(values), BATCH):
        texts = [repr(float(v)) for v in values[start:start + BATCH]]
        proc = run("--json", *flags, "--", *texts)
        assert proc.returncode == 0, proc.stderr
        for entry in json.loads(proc.stdout)["values"]:
            results[entry["input"]] = {r["format"]: r for r in entry["results"]}
    return results


def expected_bits(value, fmt):
    dtype, view = DTYPES[fmt]
    return np.array([value], dtype=np.float32).astype(dtype).view(view)[0]


def stored(result):
    """The stored value: the exact JSON number, or the text for inf and NaN (JSON has neither)."""
    return result["stored"] if result["stored"] is not None else float(result["stored_text"])


def check_against_oracles(values, results):
    mismatches = []
    for v in values:
        per_format = results[repr(float(v))]
        for fmt, (dtype, _) in DTYPES.items():
            want = np.array([v], dtype=np.float32).astype(dtype).astype(np.float64)[0]
            got = per_format[fmt]
            if math.isnan(want):
                ok = got["stored_text"] == "nan"
            else:
                ok = int(got["bits"], 16) == int(expected_bits(v, fmt)) and stored(got) == want
            if not ok:
                mismatches.append((v, fmt, got["bits"], hex(int(expected_bits(v, fmt))), got["stored_text"], want))
    assert not mismatches, mismatches[:10]


def random_values(rng, count):
    """Log-uniform magnitudes over all of fp32's range (and a little past it), random signs."""
    exponents = rng.uniform(-46, 39, count)
    signs = rng.choice([-1.0, 1.0], count)
    return list(signs * 10.0 ** exponents)


def test_random_values_match_numpy_and_ml_dtypes():
    rng = np.random.default_rng(20240611)
    values = random_values(rng, 6000)
    # and values near each narrow format's range, where rounding decisions happen
    values += list(rng.uniform(-70000, 70000, 2000)) + list(rng.uniform(-600, 600, 2000))
    values += list(rng.uniform(-1e-4, 1e-4, 2000))
    check_against_oracles(values, numerics(values))


def finite_values(fmt):
    dtype, view = DTYPES[fmt]
    codes = np.arange(np.iinfo(view).max + 1, dtype=view)
    vals = codes.view(dtype).astype(np.float64)
    return np.unique(vals[np.isfinite(vals)])


@pytest.mark.parametrize("fmt", DTYPES)
def test_ties_and_edges_match(fmt):
    """Midpoints between neighbouring values (ties to even), one fp32 ulp either side, and the
    overflow midpoint above the largest finite value; all of them for fp8, a sample for 16 bits."""
    grid = finite_values(fmt)
    info = ml_dtypes.finfo(DTYPES[fmt][0])
    top_ulp = float(info.max) - float(grid[-2])
    grid = np.append(grid, float(info.max) + top_ulp)  # the next value past max: overflow ties against it
    mids = (grid[:-1] + grid[1:]) / 2
    rng = np.random.default_rng(7)
    if len(mids) > 1500:
        keep = np.concatenate([rng.choice(len(mids), 1500, replace=False), [0, 1, len(mids) - 2, len(mids) - 1]])
        mids = mids[keep]
    points = []
    for m in mids:
        f = np.float32(m)
        if float(f) != m:
            continue
        points += [float(f), float(np.nextafter(f, np.float32(np.inf))), float(np.nextafter(f, np.float32(0)))]
    points += [float(info.max), float(info.smallest_subnormal), float(info.smallest_normal), 0.0, -0.0,
               float(info.smallest_subnormal) / 2, math.inf, -math.inf, math.nan]
    points += [-p for p in points if not math.isnan(p)]
    check_against_oracles(points, numerics(points))


def tf32_oracle(x):
    """Round to 10 mantissa bits, ties to even, with Python's exact round() on a power-of-two quotient."""
    x = float(np.float32(x))
    if math.isnan(x) or math.isinf(x) or x == 0:
        return x
    _, e = math.frexp(abs(x))  # |x| = f * 2^e, f in [0.5, 1)
    quantum = 2.0 ** (max(e - 1, -126) - 10)
    r = round(abs(x) / quantum) * quantum
    if r > (2 - 2 ** -10) * 2.0 ** 127:
        r = math.inf
    return math.copysign(r, x)


def test_tf32_matches_exact_rounding():
    rng = np.random.default_rng(3)
    values = random_values(rng, 3000) + [1 + 2 ** -11, 1 + 3 * 2 ** -11, 3.4028234663852886e38, 1e-40]
    results = numerics(values, "--format", "tf32")
    for v in values:
        got = results[repr(float(v))]["tf32"]
        assert stored(got) == tf32_oracle(v), (v, got)


def test_format_properties_match_finfo():
    proc = run("--json")
    assert proc.returncode == 0, proc.stderr
    formats = {f["name"]: f for f in json.loads(proc.stdout)["formats"]}
    assert set(formats) == {"fp32", "tf32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2"}
    for name, dtype in [("fp32", np.float32), ("fp16", np.float16), ("bf16", ml_dtypes.bfloat16),
                        ("fp8-e4m3", ml_dtypes.float8_e4m3fn), ("fp8-e5m2", ml_dtypes.float8_e5m2)]:
        info = ml_dtypes.finfo(dtype)
        got = formats[name]
        assert got["max_finite"] == float(info.max), name
        assert got["min_normal"] == float(info.smallest_normal), name
        assert got["min_subnormal"] == float(info.smallest_subnormal), name
        assert got["eps"] == float(info.eps), name
        assert got["exponent_bits"] == info.nexp, name
        assert got["mantissa_bits"] == info.nmant, name
        assert got["storage_bits"] == info.bits, name
    assert formats["fp8-e4m3"]["has_inf"] is False
    assert formats["tf32"]["mantissa_bits"] == 10 and formats["tf32"]["storage_bits"] == 32


def test_fields_and_relative_error_are_consistent():
    values = [1e-8, -3.14159, 65520.0, 1e-6, 448.5, 2.0 ** -24]
    results = numerics(values)
    for v in values:
        for fmt, r in results[repr(v)].items():
            code = int(r["bits"], 16)
            fields = r["sign"] + r["exponent"] + r["mantissa"]
            assert int(fields, 2) == code, (v, fmt, r)
            if r["relative_error"] is not None:
                assert r["relative_error"] == pytest.approx(abs(stored(r) - v) / abs(v), rel=1e-12, abs=0)


def test_flags_tell_why_a_gradient_vanishes():
    results = numerics([1e-8, 65520.0, 1e-6, 3.0, 0.1])
    assert results["1e-08"]["fp16"]["flag"] == "flushed-to-zero"
    assert results["1e-08"]["bf16"]["flag"] == "rounded"
    assert results["65520.0"]["fp16"]["flag"] == "overflow"
    assert results["65520.0"]["fp8-e4m3"]["stored_text"] == "nan"
    assert results["1e-06"]["fp16"]["flag"] == "underflow-to-subnormal"
    assert results["3.0"]["fp8-e5m2"]["flag"] == "exact"
    assert results["0.1"]["fp16"]["flag"] == "rounded"
    special = json.loads(run("--json", "--", "nan", "-inf").stdout)["values"]
    assert special[0]["results"][2]["flag"] == "nan"
    assert special[1]["results"][2]["flag"] == "inf" and special[1]["results"][2]["stored_text"] == "-inf"


def test_saturate_clamps_fp8():
    results = numerics([1000.0, -1e5], "--saturate")
    assert results["1000.0"]["fp8-e4m3"]["stored_text"] == "448"
    assert results["1000.0"]["fp8-e4m3"]["flag"] == "saturated"
    assert results["-100000.0"]["fp8-e5m2"]["stored_text"] == "-57344"
    assert results["-100000.0"]["fp16"]["flag"] == "overflow"  # saturation is for fp8 only


@pytest.mark.parametrize("args, mentions", [
    (["--format", "fp12", "1"], "fp12"),
    (["1.5x"], "1.5x"),
    (["--format", "fp16,", "1"], "unknown format"),
])
def test_bad_input_is_one_line_and_exit_2(args, mentions):
    proc = run(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mpbench: error: ") and mentions in lines[0], proc.stderr
