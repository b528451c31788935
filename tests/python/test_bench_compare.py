"""scripts/bench_compare.py: the bandwidth size it measures comes from `mpbench list` on the machine at
hand, a suite without an ok case is an error (exit 2), its known sets and its record of the machine."""
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "bench_compare.py"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_compare", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LISTED = """capabilities of Some CPU (cpu):
  fp32        native       oneDNN 2.6.3 fp32 matmul on ISA avx2

bandwidth — copy/scale/add/triad/dot
  50 cases on Some CPU:
    bandwidth/memcpy/n=134217728/fp32
    bandwidth/copy/n=16777216/fp16
    bandwidth/triad/n=536870912/bf16
"""


def test_the_smallest_listed_size_is_measured(bench):
    assert bench.smallest_quick_size(LISTED, "bandwidth") == 16777216
    with pytest.raises(bench.BenchError, match="lists no bandwidth case"):
        bench.smallest_quick_size(LISTED.replace("bandwidth/", "cast/"), "bandwidth")


def test_the_real_list_gives_a_size_the_filter_selects(bench):
    binary = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))
    if not binary.exists():
        pytest.skip(f"{binary} is not built")
    listed = subprocess.run([str(binary), "list", "--suite", "bandwidth", "--quick", "--device", "cpu"],
                            capture_output=True, text=True, timeout=60, check=True).stdout
    n = bench.smallest_quick_size(listed, "bandwidth")
    pattern = bench.case_filter(binary)
    assert f"n={n}/" in pattern
    assert all(f"n={n}/" in line or "n=" not in line for line in listed.splitlines()
               if re.search(pattern, line.strip())), "only the smallest size is selected"


def document_with(path: Path, statuses: dict) -> Path:
    cases = [{"suite": suite, "name": "x", "precision": "fp32", "status": status} for suite, status in statuses.items()]
    path.write_text(json.dumps({"cases": cases}))
    return path


def test_a_suite_without_an_ok_case_is_an_error(bench, tmp_path):
    bench.require_ok_cases(document_with(tmp_path / "a.json", {"gemm": "ok", "bandwidth": "ok", "cast": "ok"}))
    with pytest.raises(bench.BenchError, match="no ok case of the bandwidth suite"):
        bench.require_ok_cases(document_with(tmp_path / "b.json", {"gemm": "ok", "bandwidth": "skipped", "cast": "ok"}))
    with pytest.raises(bench.BenchError, match="no ok case of the cast suite"):
        bench.require_ok_cases(document_with(tmp_path / "c.json", {"gemm": "ok", "bandwidth": "ok"}))


def fake_mpbench(tmp_path: Path, list_output: str, run_statuses: dict) -> Path:
    """An executable standing in for mpbench: `list` prints LIST_OUTPUT, `run` writes a document."""
    script = tmp_path / "mpbench"
    cases = [{"suite": s, "name": "x", "precision": "fp32", "status": st} for s, st in run_statuses.items()]
    script.write_text(f"""#!{sys.executable}
import json, sys
if sys.argv[1] == "list":
    print({list_output!r})
elif sys.argv[1] == "run":
    out = sys.argv[sys.argv.index("--out") + 1]
    open(out, "w").write(json.dumps({{"cases": {cases!r}}}))
else:
    sys.exit(9)
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def run_script(tmp_path: Path, binary: Path):
    return subprocess.run([sys.executable, str(SCRIPT), "--mpbench", str(binary), "--runs", "1",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)


def test_the_script_exits_2_when_no_bandwidth_case_is_listed(tmp_path):
    done = run_script(tmp_path, fake_mpbench(tmp_path, "no cases", {"gemm": "ok"}))
    assert done.returncode == 2, done.stderr
    assert "lists no bandwidth case" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_script_exits_2_when_a_run_measured_no_case_of_a_suite(tmp_path):
    done = run_script(tmp_path, fake_mpbench(tmp_path, LISTED, {"gemm": "ok", "bandwidth": "ok", "cast": "error"}))
    assert done.returncode == 2, done.stderr
    assert "no ok case of the cast suite" in done.stderr


def test_the_isa_slowdown_slows_every_gemm_time_and_leaves_the_other_suites(bench):
    slowed, unaffected = bench.KNOWN_SETS["isa"]
    bf16_time = {"suite": "gemm", "metric": "seconds", "precision": "bf16"}
    bf16_speedup = {"suite": "gemm", "metric": "speedup", "precision": "bf16"}
    cast_share = {"suite": "cast", "metric": "pct_of_copy", "precision": "bf16"}
    assert slowed(bf16_time) and not unaffected(bf16_time)
    assert not slowed(bf16_speedup) and not unaffected(bf16_speedup), "a ratio of two slowed times moves either way"
    assert unaffected(cast_share) and not slowed(cast_share)


def test_the_machine_is_recorded(bench, tmp_path):
    case = {"suite": "gemm", "name": "x", "precision": "fp32", "status": "ok",
            "details": {"measurement": {"clocks_before": {"load_average_1m": 3.5},
                                        "clocks_after": {"load_average_1m": 7.25}}}}
    doc = {"run": {"cpu_isa": ""}, "cases": [case],
           "env": {"cpu": {"model": "Some Xeon", "logical_cores": 2, "threads": 1, "omp_num_threads": 1,
                           "flags": {"avx2": True, "amx_tile": True, "avx512f": False}},
                   "onednn": {"version": "2.6.3", "effective_isa": "avx512_core_bf16", "max_isa_env": ""},
                   "mpbench": {"git_revision": "abc123"}, "host": "vm", "os": {"name": "Debian"}}}
    path = tmp_path / "run0.json"
    path.write_text(json.dumps(doc))
    machine = bench.machine_record([path], 2.0, 123.4)
    assert machine["cpu_model"] == "Some Xeon"
    assert machine["isa_flags"] == ["amx_tile", "avx2"]
    assert machine["isa_limit"] == "none"
    assert machine["onednn"]["version"] == "2.6.3" and machine["onednn"]["effective_isa"] == "avx512_core_bf16"
    assert machine["threads"] == 1 and machine["mpbench_revision"] == "abc123"
    assert machine["load_average_1m"]["start"] == 2.0
    assert machine["load_average_1m"]["during_cases"] == [3.5, 7.25]
    assert machine["wall_s"] == 123
