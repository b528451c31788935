#!/usr/bin/env python3
"""Plots and an HTML page from mpbench result documents.

    python3 scripts/report.py RESULTS... -o DIR [--reference-machine NAME] [--prices FILE]
    python3 scripts/report.py --history DB -o DIR [--history-runs N] [--reference-machine NAME]
                              [--prices FILE] [--mpbench PATH]

RESULTS are result documents (schema "mpbench.result/1") or folders of them. DIR receives one PNG,
one SVG and one JSON (the points drawn) per plot, and index.html, which shows the plots and the
tables of cases and refers only to files beside it. Cases whose status is not ok are never drawn:
index.html lists them. Documents are grouped by machine (a GPU with its CUDA version; a CPU model
with its ISA flags and ISA limit); several documents of one case on one machine are repetitions,
drawn as their median with the range as error bars. With two machines or more the
hardware-selection plots appear: speedup per mode per machine, throughput relative to a reference
machine and, with --prices, per dollar and per watt. Transformer cases of several world sizes (documents of
data-parallel jobs) get a scaling page per machine: tokens/s per rank and in total, efficiency against world
size 1, and the exposed communication's share of the step. With --history, DIR receives trend plots of an
`mpbench history` (a file, or a postgresql:// URL, its password shown as ***) instead, per machine, from
`mpbench history export DB --format json`, and the hardware-selection plots drawn from the documents of
each machine's last N runs there (`export --latest N`, N from --history-runs, default 1).

Exit status: 0 on success, 2 on unusable input (unreadable or non-regular file, malformed JSON,
NaN or Infinity, nesting deeper than 64 levels, another schema, no document, bad --prices file,
unknown --reference-machine, an mpbench that cannot be run or whose export fails) or without
matplotlib or jsonschema, each said on one line. The report is drawn in a temporary folder beside
DIR and its files are moved into DIR only when all of them are written: a failure leaves DIR as it
was, and so do Ctrl-C, SIGTERM and SIGHUP (exit 128 + the signal), which also remove the temporary
folder; one left by a killed run is removed by the next run that writes beside it.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import hashlib
import html
import importlib
import io
import itertools
import json
import math
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import urllib.parse
import warnings
from dataclasses import dataclass, field
from pathlib import Path



def required_module(name: str):
    """A module of scripts/requirements.txt, or one line saying how to get it and exit 2: a
    traceback would bury the fix."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        package = name.split(".")[0]
        print(f"report.py: error: {package} is not installed (get it with bash scripts/setup.sh, then run "
              f".venv/bin/python scripts/report.py; or with pip install -r scripts/requirements.txt; "
              f"the import said: {e})", file=sys.stderr)
        sys.exit(2)


jsonschema = required_module("jsonschema")
matplotlib = required_module("matplotlib")
matplotlib.use("Agg")  # no display on CI machines; must precede pyplot
plt = required_module("matplotlib.pyplot")
for submodule in ("matplotlib.ticker", "matplotlib.patches", "matplotlib.transforms", "matplotlib.lines"):
    required_module(submodule)

SCHEMA = "mpbench.result/1"
SCHEMA_FILE = Path(__file__).resolve().parent.parent / "results" / "schema" / "result-1.schema.json"
# Bytes per element of GEMM inputs (A, B) and output (C), by precision name.
GEMM_DTYPE_BYTES = {
    "fp32": (4, 4), "tf32": (4, 4), "fp16": (2, 2), "fp16-acc16": (2, 2), "bf16": (2, 2),
    "fp8-e4m3": (1, 2), "fp8-e5m2": (1, 2),
}
# Transfers between host and device are not a ceiling for kernels on device memory.
HOST_TRANSFER_KERNELS = ("h2d_pinned", "d2h_pinned")

plt.rcParams["svg.hashsalt"] = "mpbench"  # stable ids, so reports diff cleanly
plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller files, searchable labels
plt.rcParams["text.parse_math"] = False  # a "$" in a case or machine name is drawn, not read as TeX
# A name in a script the font lacks is drawn as boxes; matplotlib's warning per glyph and figure is noise.
warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)


class ReportError(Exception):
    """Unusable input: printed on one line, exit status 2."""


# ----------------------------------------------------------------------------- loading

# As mpbench's own readers (core/files.hpp): its documents nest a dozen levels, the largest are a
# few hundred MB.
MAX_JSON_DEPTH = 64
MAX_DOCUMENT_BYTES = 1 << 30


def refuse_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (mpbench writes null where it has no number)")


CONTAINERS = {dict, list}
# A number literal, loosely: enough to find the one that overflowed once an infinity is found.
NUMBER_LITERAL = re.compile(r"-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")


def json_problem(value) -> str | None:
    """"deep" where containers nest deeper than MAX_JSON_DEPTH, "overflow" where a number parsed
    as infinity, else None. Only containers are walked and their elements are tested in C: an
    array of numbers (millions of timing samples in a long run) costs no Python step per element,
    which checking each number as it is parsed did."""
    stack = [([value], 0)]  # the value in a list, so that a top-level number is tested too
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return "deep"
        children = item.values() if type(item) is dict else item
        if math.inf in children or -math.inf in children:
            return "overflow"
        if not CONTAINERS.isdisjoint(map(type, children)):
            stack.extend((child, depth + 1) for child in children if type(child) in CONTAINERS)
    return None


def overflowing_literal(text: str) -> str:
    return next(m[0] for m in NUMBER_LITERAL.finditer(text) if math.isinf(float(m[0])))


def read_text(path: Path, what: str) -> str:
    """A regular file's UTF-8 text (a FIFO would block, a folder has none); `what` names the
    format for the message when it is not text."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ReportError(f"cannot read '{path}': not a regular file")
        if info.st_size > MAX_DOCUMENT_BYTES:
            raise ReportError(f"cannot read '{path}': {info.st_size} bytes, more than a result document's "
                              f"{MAX_DOCUMENT_BYTES}")
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ReportError(f"cannot read '{path}': {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise ReportError(f"'{path}' is not valid {what}: {e}") from e
    if "\0" in text:  # as mpbench's readers: a NUL is never part of JSON (or CSV) text
        raise ReportError(f"'{path}' holds a NUL byte at character {text.index(chr(0))}: not {what} text")
    return text


def read_json(path: Path):
    text = read_text(path, "JSON")
    try:
        value = json.loads(text, parse_constant=refuse_constant)
        problem = json_problem(value)
    except RecursionError:
        value, problem = None, "deep"
    except ValueError as e:  # json.JSONDecodeError among them
        raise ReportError(f"'{path}' is not valid JSON: {e}") from e
    if problem == "deep":
        raise ReportError(f"'{path}' nests deeper than {MAX_JSON_DEPTH} levels: not a result document")
    if problem == "overflow":
        raise ReportError(f"'{path}' is not valid JSON: the number {overflowing_literal(text)[:40]} overflows a double")
    return value


def check_document(doc, path: Path) -> dict:
    if not isinstance(doc, dict) or "schema" not in doc:
        raise ReportError(f"'{path}' is not an mpbench result document: it has no \"schema\" field")
    if doc["schema"] != SCHEMA:
        raise ReportError(f"'{path}' has schema '{doc['schema']}', this report reads '{SCHEMA}': "
                          "re-run the benchmark or use the matching report.py")
    error = jsonschema.exceptions.best_match(document_validator().iter_errors(doc))
    if error is not None:
        message = error.message if len(error.message) <= 160 else error.message[:160] + "..."
        raise ReportError(f"'{path}' is malformed at {error.json_path}: {message}")
    for index, case in enumerate(doc["cases"]):
        if "seconds" in case["metrics"]:
            check_times(case["metrics"]["seconds"], path, f"$.cases[{index}].metrics.seconds")
    check_data_parallel(doc, path)
    return doc


def is_count(value) -> bool:
    return type(value) is int and value >= 1  # exact: bool, a subclass of int, is not a count


def check_data_parallel(doc: dict, path: Path) -> None:
    """The fields the scaling plots read, which the schema leaves open: run.world_size and each
    case's params.world_size (a count of ranks), and in a transformer case params.grad_reduce (null
    on one rank, what the gradients travelled in on several) and details.communication (seconds of
    the gradients' all-reduce per step, the exposed part no more than all of it nor than the step)."""
    def refuse(where: str, why: str):
        raise ReportError(f"'{path}' is malformed at {where}: {why}")

    run_size = doc["run"].get("world_size")
    if run_size is not None and not is_count(run_size):
        refuse("$.run.world_size", f"{json.dumps(run_size)[:40]} is not a count of ranks (an integer, 1 or more)")
    for index, case in enumerate(doc["cases"]):
        at = f"$.cases[{index}]"
        params = case.get("params") or {}
        size = params.get("world_size")
        if size is not None and not is_count(size):
            refuse(f"{at}.params.world_size",
                   f"{json.dumps(size)[:40]} is not a count of ranks (an integer, 1 or more)")
        if case["suite"] != "transformer":
            continue
        if size is not None and run_size is not None and size != run_size:
            refuse(f"{at}.params.world_size", f"{size}, but run.world_size is {run_size}: a training case runs on "
                                              "every rank of the job")
        reduce = params.get("grad_reduce")
        if reduce is not None and (not isinstance(reduce, str) or not reduce):
            refuse(f"{at}.params.grad_reduce", f"{json.dumps(reduce)[:40]} is neither null nor the name of a dtype")
        if (size or 1) > 1 and reduce is None and case["status"] == "ok":
            refuse(f"{at}.params.grad_reduce", f"null on {size} ranks: a data-parallel case names the dtype its "
                                               "gradients were reduced in")
        details = case.get("details") or {}
        if "communication" not in details:
            continue
        communication = details["communication"]
        where = f"{at}.details.communication"
        if not isinstance(communication, dict):
            refuse(where, f"{json_type(communication)}, not an object")
        for key in ("library", "dtype"):
            if key in communication and not isinstance(communication[key], str):
                refuse(f"{where}.{key}", f"{json_type(communication[key])}, not a string")
        seconds = {}
        for key in ("seconds_per_step", "exposed_seconds_per_step"):
            value = communication.get(key)
            if key in communication and not (type(value) in (int, float) and math.isfinite(value) and value >= 0):
                refuse(f"{where}.{key}", f"{json.dumps(value)[:40]} is not a number of seconds (0 or more)")
            seconds[key] = value
        total, exposed = seconds["seconds_per_step"], seconds["exposed_seconds_per_step"]
        if total is not None and exposed is not None and exposed > total * (1 + 1e-9):
            refuse(f"{where}.exposed_seconds_per_step", f"{exposed} is more than seconds_per_step {total}: the "
                                                        "exposed part of the communication is part of it")
        step = case["metrics"].get("seconds", {}).get("median")
        if exposed is not None and step and exposed > step * (1 + 1e-9):
            refuse(f"{where}.exposed_seconds_per_step", f"{exposed} is more than the step's median time {step}: "
                                                        "the exposed communication is part of the step")


def check_times(stats: dict, path: Path, where: str) -> None:
    """As mpbench's readers (core/stats.cpp): a summary of times that contradicts itself or its
    samples is refused, naming the field; the schema cannot say how fields relate."""
    lo, hi = stats["min"], stats["max"]
    rounding = 1e-9  # the mean of equal samples may round an ulp beyond them
    values = stats.get("values")
    problems = [
        ("max", hi < lo, f"{hi} is below min {lo}"),
        ("median", not lo <= stats["median"] <= hi, f"{stats['median']} is outside [min, max] = [{lo}, {hi}]"),
        ("mean", not lo * (1 - rounding) <= stats["mean"] <= hi * (1 + rounding),
         f"{stats['mean']} is outside [min, max] = [{lo}, {hi}]"),
        ("samples", values is not None and stats["samples"] != len(values),
         f"{stats['samples']} but values lists {len(values or [])}"),
        ("samples", stats["samples"] == 1 and (lo != hi or stats["stddev"] != 0), "1, but min, max or stddev show a spread"),
        ("values", bool(values) and not lo <= min(values) <= max(values) <= hi, f"hold a value outside [{lo}, {hi}]"),
    ]
    for field_name, wrong, why in problems:
        if wrong:
            raise ReportError(f"'{path}' is inconsistent at {where}.{field_name}: {why}")


def document_validator():
    """The result schema's validator, read once: every document is checked before it is drawn."""
    global _validator
    if _validator is None:
        try:
            schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:  # a copy of report.py without the project's results/schema
            raise ReportError(f"cannot read the result schema '{SCHEMA_FILE}' ({getattr(e, 'strerror', None) or e}): "
                              "report.py reads it from results/schema/ beside its scripts/ folder") from e
        standard = jsonschema.validators.validator_for(schema)
        bulk = jsonschema.validators.extend(standard, {"items": items_in_bulk(standard.VALIDATORS["items"])})
        _validator = bulk(schema)
    return _validator


# Python types of JSON's values that the schema's plain "type" of array items admits.
BULK_ITEM_TYPES = {"number": (int, float), "string": (str,)}


def items_in_bulk(standard_items):
    """The "items" keyword, with arrays of a plain type (a case's timing samples: millions in a
    long run) checked by a type test per element. jsonschema's own check builds a validator per
    element, 90% of the time report.py took on a large document; it still runs on the elements that
    fail the test, so its messages and paths stay the same."""
    def items(validator, item_schema, instance, schema):
        plain = (isinstance(item_schema, dict) and item_schema.keys() == {"type"} and "prefixItems" not in schema
                 and isinstance(instance, list))
        types = BULK_ITEM_TYPES.get(item_schema["type"]) if plain else None
        if types is None:
            yield from standard_items(validator, item_schema, instance, schema)
            return
        for index, item in enumerate(instance):
            if type(item) not in types:  # exact: bool, a subclass of int, is not a JSON number
                yield from validator.descend(item, item_schema, path=index)
    return items


_validator = None


# Control characters and lone surrogates (JSON's "\ud800"): SVG, being XML, cannot hold the first,
# UTF-8 cannot encode the second.
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
CASE_NAMES = ("suite", "name", "precision", "message")


def printable(text: str) -> str:
    """The text with each unprintable character written as an escape, \\x1b or \\ud800."""
    return UNPRINTABLE.sub(lambda c: f"\\x{ord(c[0]):02x}" if ord(c[0]) < 0x100 else f"\\u{ord(c[0]):04x}", text)


def printable_strings(value):
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_strings(k): printable_strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_strings(v) for v in value]
    return value


def with_printable_names(doc: dict) -> dict:
    """The document with printable names wherever plots, file names and the page show them: its
    machine, runs and cases (not their details, whose long series hold numbers)."""
    for part in ("env", "run", "speedups"):
        doc[part] = printable_strings(doc[part])
    for c in doc["cases"]:
        c.update({k: printable(c[k]) for k in CASE_NAMES if isinstance(c.get(k), str)})
        c["params"] = printable_strings(c.get("params", {}))
    return doc


def load_documents(paths: list[Path]) -> tuple[list[tuple[Path, dict]], list[Path]]:
    """Documents from files and folders; JSON in a folder without "schema" (Google Benchmark's,
    for one) is ignored and returned as such."""
    documents, ignored = [], []
    for path in paths:
        if path.is_dir():
            for file in sorted(path.glob("*.json")):
                doc = read_json(file)
                if isinstance(doc, dict) and "schema" in doc:
                    documents.append((file, with_printable_names(check_document(doc, file))))
                else:
                    ignored.append(file)
        else:
            documents.append((path, with_printable_names(check_document(read_json(path), path))))
    if not documents:
        raise ReportError("no mpbench result document among " + ", ".join(map(str, paths)))
    return documents, ignored


# ----------------------------------------------------------------------------- machines

def case_key(case: dict) -> tuple:
    return case["suite"], case["name"], case["backend"], case["precision"]


def case_label(case: dict) -> str:
    return "/".join(case_key(case))


# Precisions and modes in the order plots show them: the baseline first.
PRECISION_ORDER = ("fp32", "tf32", "fp16", "fp16-acc16", "bf16", "fp8-e4m3", "fp8-e5m2", "amp-fp16", "amp-bf16")


def precision_order(name: str):
    return (PRECISION_ORDER.index(name), "") if name in PRECISION_ORDER else (len(PRECISION_ORDER), name)


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


@dataclass
class Machine:
    """Documents measured on one machine. Several documents of one case are repetitions: each is
    kept (runs), plots draw their median with the range as error bars (merged cases)."""
    key: str
    label: str
    env: dict
    cuda: str
    dates: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    runs: dict = field(default_factory=dict)  # case key -> [case of each document]
    speedup_runs: dict = field(default_factory=dict)  # case key -> [speedup of each document]
    speedup_baselines: dict = field(default_factory=dict)  # case key -> the precision it is a speedup over
    threads: set = field(default_factory=set)  # env.cpu.threads of each document (OpenMP threads)
    # PyTorch's documents of the same hardware (scripts/torch_baseline.py): drawn beside mpbench's,
    # never mixed into its series. (suite, name, precision) -> [PyTorch's case of each document]
    peer_runs: dict = field(default_factory=dict)
    peer_sources: list = field(default_factory=list)
    peer_label: str = ""
    first_doc: dict = field(default_factory=dict, repr=False)

    def ok(self, suite: str) -> list[dict]:
        merged = (merge_runs([c for c in runs if c["status"] == "ok"]) for key, runs in sorted(self.runs.items())
                  if key[0] == suite)
        return [c for c in merged if c is not None]

    def ok_keys(self) -> set:
        return {key for key, runs in self.runs.items() if any(c["status"] == "ok" for c in runs)}

    def not_ok(self) -> list[dict]:
        return [c for _, runs in sorted(self.runs.items()) for c in runs if c["status"] != "ok"]

    def speedups(self) -> dict[tuple, dict]:
        """Each ok case's speedup: the median of its documents', with their range and count."""
        ok = self.ok_keys()
        return {key: {"speedup": median(values), "low": min(values), "high": max(values), "runs": len(values)}
                for key, values in sorted(self.speedup_runs.items()) if key in ok and values}

    def stamp(self) -> str:
        dates = sorted({d[:10] for d in self.dates})
        return f"{self.label} · {', '.join(dates)}"


def merge_runs(runs: list[dict]) -> dict | None:
    """One case from its ok repetitions: the newest document's, with each rate and the median time
    replaced by the median over the repetitions, and their range kept in "spread"."""
    if not runs:
        return None
    merged = dict(runs[-1], rates=dict(runs[-1].get("rates", {})), runs=len(runs), spread={})
    for k in merged["rates"]:
        values = [v for c in runs if isinstance(v := c.get("rates", {}).get(k), (int, float)) and math.isfinite(v)]
        if values:
            merged["rates"][k] = median(values)
            merged["spread"][k] = (min(values), max(values))
    times = [c["metrics"]["seconds"]["median"] for c in runs if "seconds" in c.get("metrics", {})]
    if times:
        merged["metrics"] = {"seconds": dict(runs[-1]["metrics"]["seconds"], median=median(times))}
    return merged


def ran_on_gpu(doc: dict) -> bool:
    device = doc["run"].get("device")
    if isinstance(device, str):
        return device.startswith("cuda")
    return any(c["backend"] == "cuda" for c in doc["cases"])


def isa_tier(flags: list[str]) -> str:
    """The CPU's best low-precision instructions, for a short machine label."""
    for flag, name in (("amx_bf16", "AMX"), ("avx512_fp16", "AVX512-FP16"), ("avx512_bf16", "AVX512-BF16"),
                       ("avx512f", "AVX-512"), ("avx2", "AVX2")):
        if flag in flags:
            return name
    return "no AVX2"


def machine_of(doc: dict) -> tuple[str, str, str]:
    """(identity, label, CUDA version): a GPU's name and CUDA runtime, or a CPU's model with the ISA
    flags it has and its ISA limit (--cpu-isa, else DNNL_MAX_CPU_ISA), as `mpbench compare` has it."""
    env = doc["env"]
    if ran_on_gpu(doc):
        gpus = [g.get("name", "GPU") for g in env.get("gpus", []) if isinstance(g, dict)]
        name = (env.get("device") or {}).get("name") or (gpus[0] if gpus else "GPU")
        cuda = str((env.get("cuda") or {}).get("runtime", ""))
        return f"GPU {name}, CUDA {cuda}", f"{name} · CUDA {cuda}", cuda
    cpu = env.get("cpu", {})
    flags = sorted(f for f, has in (cpu.get("flags") or {}).items() if has is True)
    limit = doc["run"].get("cpu_isa") or (env.get("onednn") or {}).get("max_isa_env") or "none"
    model = cpu.get("model", "CPU")
    label = f"{model} · {isa_tier(flags)}" + (f" · ISA limit {limit}" if limit != "none" else "")
    return f"CPU {model}, ISA {' '.join(flags)}, ISA limit {limit}", label, ""


TORCH_BACKENDS = ("torch", "torch-compile")


def is_torch_document(doc: dict) -> bool:
    """A document of scripts/torch_baseline.py: every case PyTorch's."""
    return bool(doc["cases"]) and all(c["backend"] in TORCH_BACKENDS for c in doc["cases"])


def hardware_of(doc: dict) -> str:
    """The machine without what PyTorch's documents do not record: the ISA limit (a setting of
    mpbench's run) and, on a GPU, the CUDA runtime mpbench was built with."""
    identity = machine_of(doc)[0]
    return identity.rsplit(", CUDA ", 1)[0] if ran_on_gpu(doc) else identity.rsplit(", ISA limit ", 1)[0]


def attach_peers(machines: list[Machine], documents: list[tuple[Path, dict]], notes: list[str]):
    """Each PyTorch document to the machine of mpbench's documents with its hardware."""
    for path, doc in sorted(documents, key=lambda d: d[1]["created"]):
        m = next((m for m in machines if m.sources and hardware_of(m.first_doc) == hardware_of(doc)), None)
        if m is None:
            notes.append(f"PyTorch document {path} not drawn: no mpbench document of its machine "
                         f"({hardware_of(doc)})")
            continue
        version = (doc["env"].get("torch") or {}).get("version")
        m.peer_label = f"PyTorch {version}" if version else "PyTorch"
        m.peer_sources.append(str(path))
        for c in doc["cases"]:
            m.peer_runs.setdefault((c["suite"], c["name"], c["precision"]), []).append(c)


def group_by_machine(documents: list[tuple[Path, dict]]) -> list[Machine]:
    machines: dict[str, Machine] = {}
    for path, doc in sorted(documents, key=lambda d: d[1]["created"]):
        key, label, cuda = machine_of(doc)
        m = machines.setdefault(key, Machine(key, label, doc["env"], cuda, first_doc=doc))
        m.dates.append(doc["created"])
        m.sources.append(str(path))
        if isinstance(threads := (doc["env"].get("cpu") or {}).get("threads"), int):
            m.threads.add(threads)
        for c in doc["cases"]:
            m.runs.setdefault(case_key(c), []).append(dict(c, source=str(path)))
        for s in doc["speedups"]:
            key = (s["suite"], s["name"], s["backend"], s["precision"])
            m.speedup_runs.setdefault(key, []).append(s["speedup"])
            m.speedup_baselines[key] = s["baseline"]
    labels = [m.label for m in machines.values()]
    for m in machines.values():  # two machines one label would merge in legends: name them fully
        if labels.count(m.label) > 1:
            m.label = m.key
    return sorted(machines.values(), key=lambda m: m.label)


# ----------------------------------------------------------------------------- plot records

@dataclass
class Plot:
    """A figure and the points drawn in it, written as NAME.png, NAME.svg and NAME.json."""
    name: str
    title: str
    caption: str
    figure: object
    points: list = field(default_factory=list)  # {"series", "x", "y", "case"}

    def add(self, series: str, x, y, case: str | None = None, spread: tuple | None = None, runs: int = 1,
            **extra):
        point = {"series": series, "x": x, "y": y, "case": case, **extra}
        if runs > 1:
            point.update(low=spread[0], high=spread[1], runs=runs)
        self.points.append(point)

    def add_range(self, series: str, x, y, case: dict, key: str, **extra):
        """A point of a merged case with its rate range (`rate_range`) and run count, always."""
        low, high = rate_range(case, key)
        self.points.append({"series": series, "x": x, "y": y, "case": case_label(case), "low": low, "high": high,
                            "runs": case.get("runs", 1), **extra})

    def add_case(self, series: str, x, y, case: dict, key: str):
        """A point of a merged case: its median, with the range and count of its repetitions."""
        self.add(series, x, y, case_label(case), case.get("spread", {}).get(key), case.get("runs", 1))


def new_plot(name: str, title: str, caption: str, stamp: str, ncols: int = 1, nrows: int = 1,
             size=(8, 5)):
    fig, axes = plt.subplots(nrows, ncols, figsize=(size[0] * ncols ** 0.75, size[1] * nrows ** 0.85),
                             squeeze=False)
    fig.suptitle(title)
    fig.text(0.01, 0.005, stamp, fontsize=7, color="0.35", ha="left", va="bottom")
    return Plot(name, title, caption, fig), [ax for row in axes for ax in row]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def rate(case: dict, key: str):
    value = case.get("rates", {}).get(key)
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def param(case: dict, key: str, default=None):
    value = case.get("params", {}).get(key, default)
    return value if value is not None else default


def colours(names):
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    return {n: cycle[i % len(cycle)] for i, n in enumerate(sorted(names))}


def finish(plot: Plot, ax, xlabel: str, ylabel: str, legend: str | None = "inside"):
    """Labels, grid and a legend "inside" the axes or "below" them (`legend_below`)."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if legend == "inside" and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    elif legend == "below":
        legend_below(ax)


def legend_below(ax, handles=None):
    """One column under the axes: entries that name machines, cores and runs are long, and inside
    the axes they would cover bars and their labels."""
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14))


# ----------------------------------------------------------------------------- GEMM

def gemm_group(case: dict) -> str:
    return str(param(case, "group", "other"))


def gemm_size(case: dict) -> float:
    m, n, k = (param(case, d, 0) for d in "mnk")
    return float((m * n * k) ** (1 / 3)) if m and n and k else 0.0


def datasheet_peak(cases: list[dict]):
    """Peak TFLOP/s implied by the cases' own tflops and pct_of_peak."""
    peaks = [rate(c, "tflops") / rate(c, "pct_of_peak") * 100 for c in cases
             if rate(c, "tflops") and rate(c, "pct_of_peak")]
    return sorted(peaks)[len(peaks) // 2] if peaks else None


def by_precision(cases: list[dict]) -> dict[str, list[dict]]:
    groups: dict[str, list[dict]] = {}
    for c in cases:
        groups.setdefault(c["precision"], []).append(c)
    return dict(sorted(groups.items(), key=lambda item: precision_order(item[0])))


def error_bars(cases: list[dict], key: str, values: list[float]):
    """Distances below and above each value to its repetitions' range, for matplotlib's xerr/yerr;
    None when no case was measured more than once."""
    if all(c.get("runs", 1) < 2 for c in cases):
        return None
    spreads = [c.get("spread", {}).get(key, (v, v)) for c, v in zip(cases, values)]
    return [[v - low for v, (low, _) in zip(values, spreads)], [high - v for v, (_, high) in zip(values, spreads)]]


def relative_spread(case: dict) -> float:
    """One standard deviation of a case's timing samples over their median: its spread within the run."""
    seconds = case.get("metrics", {}).get("seconds", {})
    stddev, middle = seconds.get("stddev"), seconds.get("median")
    return stddev / middle if isinstance(stddev, (int, float)) and middle else 0.0


def within_run(value: float, spread: float) -> tuple[float, float]:
    """A rate's range for times one relative standard deviation either side of the median, taken as a
    factor down and up: a rate is work over time, so a factor on the time is one on the rate."""
    return value / (1 + spread), value * (1 + spread)


def rate_range(case: dict, key: str) -> tuple[float, float]:
    """A merged case's rate range: over its runs where it ran more than once, else within its run."""
    if case.get("runs", 1) > 1 and key in case.get("spread", {}):
        return case["spread"][key]
    return within_run(rate(case, key), relative_spread(case))


def spread_caption(runs: list[int], what: str) -> str:
    """What error bars drawn from `rate_range` are, given the run counts of the cases they are of."""
    parts = []
    if any(n > 1 for n in runs):
        parts.append(f"the range of the runs' medians where {what} ran more than once")
    if any(n == 1 for n in runs):
        parts.append(f"one standard deviation of {what}'s timing samples within its run, as a factor either side")
    return " Error bars: " + "; else ".join(parts) + "."


def not_run(m: Machine, suite: str) -> dict[str, str]:
    """Precisions of the suite that did not run on the machine, with the first reason given."""
    reasons: dict[str, str] = {}
    ok = {key[3] for key in m.ok_keys() if key[0] == suite}
    for c in m.not_ok():
        if c["suite"] == suite and c["precision"] not in ok:
            reasons.setdefault(c["precision"], f"{c['status']}: {c.get('message', '')}")
    return dict(sorted(reasons.items(), key=lambda item: precision_order(item[0])))


def not_run_caption(m: Machine, suite: str) -> str:
    reasons = not_run(m, suite)
    return " Not run here: " + "; ".join(f"{p} ({why})" for p, why in reasons.items()) + "." if reasons else ""


def note_not_run(plot: Plot, m: Machine, suite: str):
    """Names in the figure the precisions that did not run, their reasons in the caption."""
    reasons = not_run(m, suite)
    if reasons:
        plot.figure.text(0.99, 0.005, "not run: " + ", ".join(reasons) + " (reasons in the caption)", fontsize=7,
                         color="0.35", ha="right", va="bottom")
        plot.caption += not_run_caption(m, suite)


def plot_gemm_sizes(m: Machine) -> Plot | None:
    gemm = [c for c in m.ok("gemm") if rate(c, "tflops") is not None]
    square = [c for c in gemm if gemm_group(c) == "square"]
    if not square:
        return None
    plot, (ax,) = new_plot(f"gemm-size-{slug(m.label)}", f"GEMM throughput vs size — {m.label}",
                           "TFLOP/s of square GEMMs per precision; dashed: datasheet peak, dotted: best "
                           "measured in any GEMM case of that precision.", m.stamp())
    colour = colours({c["precision"] for c in gemm})
    for precision, cases in by_precision(square).items():
        cases.sort(key=gemm_size)
        xs, ys = [gemm_size(c) for c in cases], [rate(c, "tflops") for c in cases]
        ax.errorbar(xs, ys, yerr=error_bars(cases, "tflops", ys), fmt="o-", capsize=3, color=colour[precision],
                    label=precision)
        for c, x, y in zip(cases, xs, ys):
            plot.add_case(precision, x, y, c, "tflops")
        all_of_precision = [c for c in gemm if c["precision"] == precision]
        peak = datasheet_peak(all_of_precision)
        if peak:
            ax.axhline(peak, color=colour[precision], linestyle="--", linewidth=1, label=f"{precision} datasheet peak")
            plot.add(f"{precision} datasheet peak", None, peak)
        best = max(rate(c, "tflops") for c in all_of_precision)
        ax.axhline(best, color=colour[precision], linestyle=":", linewidth=1, label=f"{precision} best measured")
        plot.add(f"{precision} best measured", None, best)
    ax.set_xscale("log", base=2)
    finish(plot, ax, "size (m = n = k)", "TFLOP/s")
    note_not_run(plot, m, "gemm")
    return plot


def plot_gemm_shapes(m: Machine) -> Plot | None:
    shaped = [c for c in m.ok("gemm") if gemm_group(c) not in ("square", "alignment") and rate(c, "tflops")]
    if not shaped:
        return None
    names = sorted({c["name"] for c in shaped})
    precisions = sorted({c["precision"] for c in shaped}, key=precision_order)
    plot, (ax,) = new_plot(f"gemm-shapes-{slug(m.label)}", f"GEMM throughput of model shapes — {m.label}",
                           "TFLOP/s per named shape (GPT-2 training GEMMs and any other group) and precision.",
                           m.stamp(), size=(8, 1.5 + 0.35 * len(names) * len(precisions) ** 0.5))
    colour = colours(precisions)
    height = 0.8 / len(precisions)
    for j, precision in enumerate(precisions):
        values = {c["name"]: c for c in shaped if c["precision"] == precision}
        drawn = [values[name] for name in names if name in values]
        ys = [i + j * height for i, name in enumerate(names) if name in values]
        widths = [rate(c, "tflops") for c in drawn]
        bars = ax.barh(ys, widths, height=height, color=colour[precision], label=precision,
                       xerr=error_bars(drawn, "tflops", widths), capsize=2)
        ax.bar_label(bars, fmt="%.3g", fontsize=6, padding=2)
        for c, width in zip(drawn, widths):
            plot.add_case(precision, width, c["name"], c, "tflops")
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(names))], names, fontsize=7)
    ax.invert_yaxis()
    finish(plot, ax, "TFLOP/s", "")
    note_not_run(plot, m, "gemm")
    return plot


def varying_dimension(cases: list[dict]) -> str:
    for d in "kmn":
        if len({param(c, d) for c in cases}) > 1:
            return d
    return "k"


def plot_alignment(m: Machine) -> Plot | None:
    cases = [c for c in m.ok("gemm") if gemm_group(c) == "alignment" and rate(c, "tflops")]
    if not cases:
        return None
    dim = varying_dimension(cases)
    plot, (ax,) = new_plot(f"gemm-alignment-{slug(m.label)}", f"GEMM alignment sweep — {m.label}",
                           f"TFLOP/s against {dim}; filled markers: {dim} is a multiple of 8 (what fp16/bf16 "
                           "Tensor Core kernels want), hollow: it is not.", m.stamp())
    colour = colours({c["precision"] for c in cases})
    for precision, group in by_precision(cases).items():
        group.sort(key=lambda c: param(c, dim, 0))
        xs, ys = [param(c, dim, 0) for c in group], [rate(c, "tflops") for c in group]
        ax.errorbar(xs, ys, yerr=error_bars(group, "tflops", ys), fmt="-", capsize=3, color=colour[precision],
                    label=precision)
        for c, x, y in zip(group, xs, ys):
            aligned = x % 8 == 0
            ax.plot([x], [y], "o", color=colour[precision], markerfacecolor=colour[precision] if aligned else "white")
            plot.add_case(precision, x, y, c, "tflops")
    sizes = sorted({param(c, dim, 0) for c in cases})
    if len(sizes) <= 12:
        ax.set_xticks(sizes, [str(x) for x in sizes], fontsize=8)
    finish(plot, ax, dim, "TFLOP/s")
    note_not_run(plot, m, "gemm")
    return plot


def fp8_pairs(m: Machine) -> list[dict]:
    """Per square size, the ok fp8-e4m3 case measured end to end and the ok bf16 case of the same
    name and backend (what explain's crossover compares), smallest size first."""
    square = [c for c in m.ok("gemm") if gemm_group(c) == "square" and rate(c, "tflops")]
    bf16 = {(c["backend"], c["name"]): c for c in square if c["precision"] == "bf16"}
    pairs = [{"n": param(c, "m"), "fp8": c, "bf16": bf16[(c["backend"], c["name"])]} for c in square
             if c["precision"] == "fp8-e4m3" and measured_end_to_end(c) and (c["backend"], c["name"]) in bf16]
    return sorted(pairs, key=lambda p: p["n"])


def measured_end_to_end(case: dict) -> bool:
    """Whether the gemm suite measured the case's casts (documents from issue 31 on)."""
    return rate(case, "tflops_end_to_end") is not None and isinstance(case.get("details", {}).get("quantize"), dict)


def relative_time(bf16: dict, fp8: dict, key: str) -> dict:
    """fp8's time over bf16's of one shape, from their rates (same flops, so bf16's rate over fp8's),
    with its range from bf16's low over fp8's high to the reverse (merged cases' `spread`)."""
    (bf16_low, bf16_high), (fp8_low, fp8_high) = bf16["spread"]["tflops"], fp8["spread"][key]
    return {"y": rate(bf16, "tflops") / rate(fp8, key), "low": bf16_low / fp8_high, "high": bf16_high / fp8_low,
            "runs": max(bf16.get("runs", 1), fp8.get("runs", 1))}


def bf16_relative(bf16: dict) -> dict:
    """bf16 itself, 1 by definition, with the range of its runs' times about their median."""
    low, high = bf16["spread"]["tflops"]
    middle = rate(bf16, "tflops")
    return {"y": 1.0, "low": middle / high, "high": middle / low, "runs": bf16.get("runs", 1)}


def quantize_share(m: Machine, case: dict) -> float | None:
    """The casts' share of the end-to-end time as each ok document records it (details.quantize.share),
    the median over the case's runs: the figure explain prints, never recomputed here."""
    quantized = [q for c in m.runs[case_key(case)]
                 if c["status"] == "ok" and isinstance(q := c.get("details", {}).get("quantize"), dict)]
    shares = [q["share"] for q in quantized if isinstance(q.get("share"), (int, float))]
    return median(shares) if shares else None


def fp8_crossover(end_to_end: list[tuple[int, dict, dict]]):
    """The smallest size from which fp8 end to end beats bf16 at it and every larger size measured
    (a win below a loss does not count: a model of that size would not gain), else None; as explain
    computes it (profiler/fp8_rules.cpp)."""
    crossover = None
    for n, relative, _ in reversed(end_to_end):
        if relative["y"] >= 1:
            break
        crossover = n
    return crossover


FP8_SERIES = (("bf16 GEMM", "0.4"), ("fp8-e4m3 GEMM alone", "tab:blue"),
              ("fp8-e4m3 end to end (casts from bf16, then GEMM)", "tab:orange"))


def draw_relative(plot: Plot, ax, series: str, colour: str, points: list[tuple[int, dict, dict]],
                  extra: list[dict] | None = None):
    """One series of (size, relative time, its case), each JSON point with its `extra` fields; error
    bars only where a case ran more than once, as in gemm-size."""
    xs, ys = [n for n, _, _ in points], [r["y"] for _, r, _ in points]
    repeated = any(r["runs"] > 1 for _, r, _ in points)
    yerr = ([[r["y"] - r["low"] for _, r, _ in points], [r["high"] - r["y"] for _, r, _ in points]]
            if repeated else None)
    ax.errorbar(xs, ys, yerr=yerr, fmt="o-", capsize=3, color=colour, label=series)
    for (n, r, c), more in zip(points, extra or [{}] * len(points)):
        plot.add(series, n, r["y"], case_label(c), (r["low"], r["high"]), r["runs"], **more)


def crossover_caption(crossover) -> str:
    if crossover is None:
        return (" Crossover: none measured: fp8 end to end does not beat bf16 at the largest size measured, or "
                "loses again at a larger one.")
    return (f" Crossover (dotted): N = {crossover}, the smallest size from which fp8 end to end beats bf16 at it "
            "and at every larger size measured.")


def mark_crossover(plot: Plot, ax, crossover):
    if crossover is None:
        ax.plot([], [], " ", label="crossover: none measured")  # said in the legend, where it covers no point
        plot.add("crossover", None, None, missing="none measured")
    else:
        ax.axvline(crossover, color="tab:green", linestyle=":", label=f"crossover N = {crossover}")
        plot.add("crossover", crossover, None)


def note_no_crossover(m: Machine, notes: list[str]):
    """Why a machine with fp8-e4m3 square GEMMs gets no crossover plot: older documents carry no
    quantize cost, or no bf16 case of the same shapes ran."""
    fp8 = [c for c in m.ok("gemm") if gemm_group(c) == "square" and c["precision"] == "fp8-e4m3"]
    if not fp8:
        return
    why = "no ok bf16 case of the same shapes" if any(measured_end_to_end(c) for c in fp8) else \
        "its fp8-e4m3 GEMM cases carry no details.quantize (documents of a gemm suite that did not measure the casts)"
    notes.append(f"{m.label}: no fp8 crossover plot: {why}")


def fp8_caption(pairs: list[dict], crossover) -> str:
    repeated = any(c.get("runs", 1) > 1 for p in pairs for c in (p["fp8"], p["bf16"]))
    return ("Time of each square GEMM (m = n = k = N) relative to bf16's of the same size (bf16 = 1; below 1, fp8 "
            "is faster): fp8-e4m3's GEMM alone, and end to end, the current-scaling casts of A and B from bf16 then "
            "the GEMM measured as one op (what a training step pays); each end-to-end point is labelled with the "
            "casts' share of it (details.quantize.share). Relative time rather than TFLOP/s: TFLOP/s spans orders "
            "of magnitude over the sweep, while the question is fp8 against bf16 at each size, which this reads "
            "off the line at 1." + crossover_caption(crossover)
            + (" Error bars: the range over the runs, from bf16's low over fp8's high to the reverse."
               if repeated else ""))


def plot_fp8_crossover(m: Machine, notes: list[str]) -> Plot | None:
    pairs = fp8_pairs(m)
    if not pairs:
        note_no_crossover(m, notes)
        return None
    end_to_end = [(p["n"], relative_time(p["bf16"], p["fp8"], "tflops_end_to_end"), p["fp8"]) for p in pairs]
    crossover = fp8_crossover(end_to_end)
    caption = fp8_caption(pairs, crossover)
    plot, (ax,) = new_plot(f"fp8-crossover-{slug(m.label)}", f"fp8-e4m3 against bf16 GEMM vs size — {m.label}",
                           caption, m.stamp())
    (bf16_series, bf16_colour), (gemm_series, gemm_colour), (e2e_series, e2e_colour) = FP8_SERIES
    draw_relative(plot, ax, bf16_series, bf16_colour, [(p["n"], bf16_relative(p["bf16"]), p["bf16"]) for p in pairs])
    draw_relative(plot, ax, gemm_series, gemm_colour,
                  [(p["n"], relative_time(p["bf16"], p["fp8"], "tflops"), p["fp8"]) for p in pairs])
    shares = [quantize_share(m, p["fp8"]) for p in pairs]
    draw_relative(plot, ax, e2e_series, e2e_colour, end_to_end, [{"quantize_share": s} for s in shares])
    annotate_shares(ax, end_to_end, shares)
    mark_crossover(plot, ax, crossover)
    ax.set_xscale("log", base=2)
    ax.set_xticks([p["n"] for p in pairs], [str(p["n"]) for p in pairs], fontsize=8)
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    finish(plot, ax, "size N (m = n = k)", "time / bf16 GEMM's time")
    note_not_run(plot, m, "gemm")
    return plot


def annotate_shares(ax, end_to_end: list[tuple[int, dict, dict]], shares: list[float | None]):
    """The casts' share beside each end-to-end point: how much of fp8's cost the casts are."""
    for (n, r, _), share in zip(end_to_end, shares):
        if share is not None:
            ax.annotate(f"casts {printed_share(100 * share)}", (n, r["y"]), xytext=(4, 4),
                        textcoords="offset points", fontsize=7, color=FP8_SERIES[2][1])


# ----------------------------------------------------------------------------- roofline

def gemm_flops_bytes(case: dict):
    m, n, k, batch = (param(case, d, 0) for d in ("m", "n", "k", "batch"))
    batch = batch or 1
    flops = param(case, "flops") or 2.0 * batch * m * n * k
    sizes = GEMM_DTYPE_BYTES.get(case["precision"])
    computed = batch * ((m * k + n * k) * sizes[0] + m * n * sizes[1]) if sizes else None
    return flops, param(case, "bytes") or computed


def memory_ceiling(m: Machine, backend: str):
    """Best device-memory bandwidth (GB/s) measured beyond the cache, and the case it came from."""
    cases = [c for c in m.ok("bandwidth") if c["backend"] == backend and rate(c, "gbps")
             and param(c, "kernel", "") not in HOST_TRANSFER_KERNELS]
    beyond_cache = [c for c in cases if param(c, "bytes", 0) > param(c, "cache_bytes", 0)]
    best = max(beyond_cache or cases, key=lambda c: rate(c, "gbps"), default=None)
    return (rate(best, "gbps"), case_label(best)) if best else (None, None)


def plot_roofline(m: Machine, notes: list[str]) -> Plot | None:
    gemm = [c for c in m.ok("gemm") if rate(c, "tflops")]
    groups = {}
    for precision, cases in by_precision(gemm).items():
        points = [(c, *gemm_flops_bytes(c)) for c in cases]
        points = [(c, f / b) for c, f, b in points if f and b]
        if points:
            groups[precision] = points
        else:
            notes.append(f"{m.label}: no roofline for {precision}: its GEMM cases give no byte count")
    if not groups:
        return None
    backend = gemm[0]["backend"]
    bandwidth, bandwidth_case = memory_ceiling(m, backend)
    ncols = min(3, len(groups))
    plot, axes = new_plot(f"roofline-{slug(m.label)}", f"Roofline per precision — {m.label}",
                          "Achieved TFLOP/s against arithmetic intensity (FLOPs per byte of A, B and C). "
                          + (f"Slanted line: measured memory bandwidth {bandwidth:.0f} GB/s ({bandwidth_case}); "
                             if bandwidth else "No bandwidth suite result, so no memory ceiling; ")
                          + "solid: best GEMM measured; dashed: datasheet peak.",
                          m.stamp(), ncols=ncols, nrows=math.ceil(len(groups) / ncols), size=(5.5, 4.5))
    for ax, (precision, points) in zip(axes, groups.items()):
        draw_roofline(plot, ax, precision, points, bandwidth)
    for ax in axes[len(groups):]:
        ax.set_visible(False)
    return plot


def draw_roofline(plot: Plot, ax, precision: str, points: list, bandwidth):
    intensities = [i for _, i in points]
    achieved = [rate(c, "tflops") for c, _ in points]
    best, peak = max(achieved), datasheet_peak([c for c, _ in points])
    ax.errorbar(intensities, achieved, yerr=error_bars([c for c, _ in points], "tflops", achieved), fmt="o",
                markersize=4, capsize=2, label="measured", zorder=3)
    for (c, i), y in zip(points, achieved):
        plot.add_case(precision, i, y, c, "tflops")
    ridge = (peak or best) * 1e3 / bandwidth if bandwidth else None  # FLOP/byte where memory stops limiting
    span = [min(intensities + ([ridge] if ridge else [])) / 4, max(intensities) * 4]
    for ceiling, style, label in ((best, "-", "best GEMM"), (peak, "--", "datasheet peak")):
        if ceiling:
            ax.plot(span, [ceiling] * 2, style, color="0.3", linewidth=1, label=f"{label} {ceiling:.3g}")
            plot.add(f"{precision} {label}", None, ceiling)
    if bandwidth:
        xs = [span[0], ridge]
        ax.plot(xs, [x * bandwidth / 1e3 for x in xs], "-", color="tab:red", linewidth=1,
                label=f"memory {bandwidth:.0f} GB/s")
        plot.add(f"{precision} memory ceiling", None, bandwidth)
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain_log_ticks(ax.yaxis)
    ax.set_title(precision, fontsize=9)
    finish(plot, ax, "FLOP / byte", "TFLOP/s")


def plain_log_ticks(axis):
    """1, 2, 5, 10, 20 ... instead of 2x10^1 on a log axis."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


# ----------------------------------------------------------------------------- memory

def format_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n:g} B"


def plot_bandwidth(m: Machine) -> Plot | None:
    cases = [c for c in m.ok("bandwidth") if rate(c, "gbps") and param(c, "bytes")
             and param(c, "kernel", "") not in HOST_TRANSFER_KERNELS]
    if not cases:
        return None
    dtypes: dict[str, list[dict]] = {}
    for c in cases:
        dtypes.setdefault(str(param(c, "dtype", c["precision"])), []).append(c)
    plot, axes = new_plot(f"bandwidth-{slug(m.label)}", f"Memory bandwidth vs size — {m.label}",
                          "GB/s (bytes read + written) against the bytes a kernel touches, one panel per dtype; "
                          "the dotted line is the cache size: beyond it the kernels stream from memory.",
                          m.stamp(), ncols=min(3, len(dtypes)), nrows=math.ceil(len(dtypes) / 3), size=(5.5, 4.5))
    colour = colours({param(c, "kernel", c["name"].split("/")[0]) for c in cases})
    transfers = [c for c in m.ok("bandwidth") if param(c, "kernel", "") in HOST_TRANSFER_KERNELS and rate(c, "gbps")]
    for ax, (dtype, group) in zip(axes, sorted(dtypes.items())):
        draw_bandwidth(plot, ax, dtype, group, colour, transfers)
    for ax in axes[len(dtypes):]:
        ax.set_visible(False)
    note_not_run(plot, m, "bandwidth")
    return plot


def draw_bandwidth(plot: Plot, ax, dtype: str, cases: list[dict], colour: dict, transfers: list[dict]):
    kernels: dict[str, list[dict]] = {}
    for c in cases:
        kernels.setdefault(param(c, "kernel", c["name"].split("/")[0]), []).append(c)
    for kernel, group in sorted(kernels.items()):
        group.sort(key=lambda c: param(c, "bytes"))
        xs, ys = [param(c, "bytes") for c in group], [rate(c, "gbps") for c in group]
        ax.errorbar(xs, ys, yerr=error_bars(group, "gbps", ys), fmt="o-", markersize=3, capsize=2,
                    color=colour[kernel], label=kernel)
        for c, x, y in zip(group, xs, ys):
            plot.add_case(f"{kernel} {dtype}", x, y, c, "gbps")
    cache = max((param(c, "cache_bytes", 0) or 0 for c in cases), default=0)
    if cache:
        ax.axvline(cache, color="0.4", linestyle=":", label=f"cache {format_bytes(cache)}")
    for c in transfers:
        ax.axhline(rate(c, "gbps"), color="0.6", linestyle="-.", linewidth=1, label=param(c, "kernel"))
        plot.add(param(c, "kernel"), None, rate(c, "gbps"), case_label(c))
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(base=4))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: format_bytes(v)))
    ax.set_title(dtype, fontsize=9)
    finish(plot, ax, "bytes touched", "GB/s")


def cast_kernel(case: dict) -> str:
    return param(case, "kernel", case["name"].split("/")[0])


def copy_of(casts: list[dict], copies: list[dict]) -> dict | None:
    """The fastest copy the casts' shares are of: the copies their details.copy_reference names (as
    mpbench picks it: the fastest copy of the same element count), else, in documents written before
    it was recorded, the copies of the casts' element counts. One line, never one per copy case."""
    named = {(ref.get("name"), ref.get("precision")) for c in casts
             if isinstance(ref := c.get("details", {}).get("copy_reference"), dict)}
    sizes = {param(c, "elements") for c in casts}
    same = [c for c in copies if (c["name"], c["precision"]) in named] or \
           [c for c in copies if param(c, "elements") in sizes]
    return max(same, key=lambda c: rate(c, "gbps"), default=None)


def printed_share(percent: float) -> str:
    """A share in percent as mpbench prints it (core/figure_text.hpp): 98.6 -> "98.6%"."""
    return f"{percent:.1f}%"


def share_label(case: dict) -> str:
    """A cast's GB/s and its rates.pct_of_copy as the document records it (the figure `mpbench run`,
    compare and explain show), never recomputed here; merged runs carry the median of their shares."""
    text = f"{rate(case, 'gbps'):.4g} GB/s"
    share = rate(case, "pct_of_copy")
    if share is None:
        return text
    runs = case.get("runs", 1)
    return text + (f" ({printed_share(share)} of copy, median of {runs} runs)" if runs > 1
                   else f" ({printed_share(share)} of copy)")


def elements(case: dict) -> str:
    count = param(case, "elements")
    return f"{count:,}" if isinstance(count, int) else "?"


def copy_caption(copy: dict | None, exceeding: int) -> str:
    if copy is None:
        return " No fp32 copy of the casts' element count ran, so no copy line is drawn."
    line = (f" The dashed line is the fastest fp32 copy of the same elements measured in the same run "
            f"({elements(copy)} elements, {rate(copy, 'gbps'):.4g} GB/s)")
    if exceeding:
        return line + (f"; {exceeding} of the casts exceed it, so it is not a ceiling on this machine, only the "
                       "copy their shares are of.")
    return line + ": the most a memory-bound cast can reach."


def plot_casts(m: Machine) -> Plot | None:
    cases = [c for c in m.ok("cast") if rate(c, "gbps")]
    casts = [c for c in cases if cast_kernel(c) != "copy"]
    if not casts:
        return None
    copy = copy_of(casts, [c for c in cases if cast_kernel(c) == "copy"])
    exceeding = sum(rate(c, "gbps") > rate(copy, "gbps") for c in casts) if copy else 0
    sizes = {param(c, "elements") for c in casts}
    label = (lambda c: c["name"]) if len(sizes) > 1 else (lambda c: c["name"].split("/")[0])
    casts.sort(key=label)
    runs = [c.get("runs", 1) for c in casts]
    caption = ("GB/s (bytes read + written) of each conversion, the median of its samples." +
               spread_caption(runs, "a cast") + copy_caption(copy, exceeding) +
               " Each \"% of copy\" is the document's own rates.pct_of_copy, the share mpbench run, compare and "
               "explain report" + ("; where a cast ran several times, the median of the runs' recorded shares."
                                   if max(runs) > 1 else "."))
    title = "Casts against the copy ceiling" if not exceeding else "Casts against the fp32 copy of the same run"
    plot, (ax,) = new_plot(f"casts-{slug(m.label)}", f"{title} — {m.label}", caption, m.stamp(),
                           size=(8, 2.2 + 0.4 * len(casts)))
    ys, widths = list(range(len(casts))), [rate(c, "gbps") for c in casts]
    ranges = [rate_range(c, "gbps") for c in casts]
    ax.barh(ys, widths, color="tab:blue", capsize=3, label="cast, with its spread (see the caption)",
            xerr=[[w - low for w, (low, _) in zip(widths, ranges)], [high - w for w, (_, high) in zip(widths, ranges)]])
    for c, y, (_, high) in zip(casts, ys, ranges):  # beyond the error bar, so the two never cross
        ax.annotate(share_label(c), (high, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7,
                    bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})  # over the copy line
        plot.add_range("cast", rate(c, "gbps"), label(c), c, "gbps", pct_of_copy=rate(c, "pct_of_copy"))
    ax.set_yticks(list(ys), [label(c) for c in casts], fontsize=8)
    if copy:
        ax.axvline(rate(copy, "gbps"), color="tab:red", linestyle="--",
                   label=f"fastest fp32 copy of the same {elements(copy)} elements, same run" +
                   (f": {exceeding} casts exceed it, not a ceiling here" if exceeding else " (the ceiling)"))
        plot.add("copy ceiling" if not exceeding else "fp32 copy (not a ceiling)", rate(copy, "gbps"), None,
                 case_label(copy))
    # Room right of the longest bar for its label ("123 GB/s (100% of copy, median of 3 runs)").
    ax.set_xlim(0, max([high for _, high in ranges] + [rate(copy, "gbps") if copy else 0]) * 1.6)
    ax.invert_yaxis()
    finish(plot, ax, "GB/s", "", legend="below")
    note_not_run(plot, m, "cast")
    return plot


# ----------------------------------------------------------------------------- transformer

def per_config(cases: list[dict]) -> dict[str, list[dict]]:
    configs: dict[str, list[dict]] = {}
    for c in cases:
        configs.setdefault(c["name"], []).append(c)
    return dict(sorted(configs.items()))


def config_suffix(m: Machine, config: str, count: int) -> str:
    return slug(m.label) + (f"-{slug(config)}" if count > 1 else "")


def plot_transformer_speedup(m: Machine, config: str, cases: list[dict], count: int) -> Plot | None:
    speedups = {k[3]: s for k, s in m.speedups().items() if k[0] == "transformer" and k[1] == config}
    if not speedups:
        return None
    # With --attention auto a GPU runs amp modes on fused attention and fp32 unfused: say so on the bars.
    attention = {c["precision"]: c.get("params", {}).get("attention") for c in cases}
    mixed = len({a for a in attention.values() if a}) > 1
    caption = "Step-time speedup of each precision mode over the run's baseline, measured in the same run."
    if mixed:
        caption += (" The modes ran different attention kernels (params.attention), so part of a speedup may be "
                    "the fused attention; a run with --attention unfused compares precisions alone.")
    plot, (ax,) = new_plot(f"transformer-speedup-{config_suffix(m, config, count)}",
                           f"Training step speedup per mode — {config} — {m.label}", caption, m.stamp())
    # The baseline first, at 1 by definition, then the modes measured against it.
    baseline = [c["precision"] for c in cases if c["precision"] not in speedups][:1]
    modes = sorted(speedups, key=precision_order)
    stats = [{"speedup": 1.0, "low": 1.0, "high": 1.0, "runs": 1}] * len(baseline) + [speedups[p] for p in modes]
    labels = [f"{p}\n{attention[p]} attention" if mixed and attention.get(p) else p for p in baseline + modes]
    values = [s["speedup"] for s in stats]
    repeated = any(s["runs"] > 1 for s in stats)
    yerr = [[s["speedup"] - s["low"] for s in stats], [s["high"] - s["speedup"] for s in stats]] if repeated else None
    bars = ax.bar(labels, values, color=["0.6"] * len(baseline) + ["tab:green"] * len(modes), yerr=yerr, capsize=4)
    ax.bar_label(bars, fmt="%.2fx", fontsize=8, padding=2)
    ax.axhline(1, color="0.3", linewidth=1)
    for p in modes:
        s = speedups[p]
        plot.add("speedup", p, s["speedup"], f"transformer/{config}/{p}", (s["low"], s["high"]), s["runs"])
    finish(plot, ax, "mode", "speedup", legend=None)
    note_not_run(plot, m, "transformer")
    return plot


def breakdown_seconds(case: dict) -> dict:
    """Seconds per kernel category: details.breakdown.categories, or a flat details.breakdown."""
    breakdown = case.get("details", {}).get("breakdown")
    if not isinstance(breakdown, dict):
        return {}
    categories = breakdown.get("categories", breakdown)
    return {k: v for k, v in categories.items() if isinstance(v, (int, float))} if isinstance(categories, dict) else {}


def plot_breakdown(m: Machine, config: str, cases: list[dict], count: int) -> Plot | None:
    profiled = [c for c in cases if breakdown_seconds(c)]
    if not profiled:
        return None
    profiled.sort(key=lambda c: precision_order(c["precision"]))
    categories = sorted({k for c in profiled for k in breakdown_seconds(c)})
    plot, (ax,) = new_plot(f"transformer-breakdown-{config_suffix(m, config, count)}",
                           f"Step time by kernel category — {config} — {m.label}",
                           "Seconds per training step in each kernel category, per precision mode.", m.stamp())
    bottoms = [0.0] * len(profiled)
    modes = [c["precision"] for c in profiled]
    for category in categories:
        values = [float(breakdown_seconds(c).get(category, 0) or 0) for c in profiled]
        ax.bar(modes, values, bottom=bottoms, label=category)
        for c, v in zip(profiled, values):
            plot.add(category, c["precision"], v, case_label(c))
        bottoms = [b + v for b, v in zip(bottoms, values)]
    finish(plot, ax, "mode", "seconds per step")
    return plot


def plot_series(m: Machine, config: str, cases: list[dict], count: int, key: str) -> Plot | None:
    with_series = [c for c in cases if isinstance(c.get("details", {}).get(key), list) and c["details"][key]]
    if not with_series:
        return None
    is_loss = key == "loss"
    plot, (ax,) = new_plot(f"transformer-{slug(key)}-{config_suffix(m, config, count)}",
                           f"{'Loss' if is_loss else 'Loss scale'} over steps — {config} — {m.label}",
                           "Training loss per step and mode; the dashed line is the entropy floor of the data."
                           if is_loss else "Dynamic loss scale per step (drops mark overflow steps).", m.stamp())
    for c in sorted(with_series, key=lambda c: precision_order(c["precision"])):
        values = [v for v in c["details"][key] if isinstance(v, (int, float))]
        ax.plot(range(len(values)), values, label=c["precision"], linewidth=1)
        plot.points.extend({"series": c["precision"], "x": i, "y": v, "case": case_label(c)}
                           for i, v in enumerate(values))
    floors = {c.get("details", {}).get("entropy_floor", param(c, "entropy_floor")) for c in with_series}
    floors = sorted(f for f in floors if isinstance(f, (int, float)))
    if is_loss and floors:
        ax.axhline(floors[0], color="0.3", linestyle="--", label="entropy floor")
        plot.add("entropy floor", None, floors[0])
    if not is_loss:
        ax.set_yscale("log", base=2)
    finish(plot, ax, "step", key.replace("_", " "))
    return plot


def peak_memory(case: dict):
    for source in (case.get("rates", {}), case.get("details", {})):
        value = source.get("peak_memory_bytes")
        if isinstance(value, (int, float)):
            return value
    return None


def emulated_half_activations(case: dict) -> bool:
    """A mode with fp16/bf16 activations that held them in fp32 buffers (params.activation_storage)."""
    return case["precision"] not in ("fp32", "tf32") and case.get("params", {}).get("activation_storage") == "emulated"


def plot_peak_memory(m: Machine, config: str, cases: list[dict], count: int) -> Plot | None:
    measured = sorted((c for c in cases if peak_memory(c)), key=lambda c: precision_order(c["precision"]))
    if not measured:
        return None
    caption = "Peak device memory of a training step per precision mode."
    emulated = [c for c in measured if emulated_half_activations(c)]
    if emulated:
        caption += (" Modes marked 'emulated' held their fp16/bf16 activations in fp32 buffers "
                    "(--activation-storage emulated): their bars do not show the memory half storage saves.")
    plot, (ax,) = new_plot(f"transformer-memory-{config_suffix(m, config, count)}",
                           f"Peak memory per mode — {config} — {m.label}", caption, m.stamp())
    labels = [f"{c['precision']}\nemulated" if emulated_half_activations(c) else c["precision"] for c in measured]
    gib = [peak_memory(c) / 2**30 for c in measured]
    spread = error_bars(measured, "peak_memory_bytes", [peak_memory(c) for c in measured])
    bars = ax.bar(labels, gib, color="tab:purple", capsize=4,
                  yerr=[[d / 2**30 for d in side] for side in spread] if spread else None)
    ax.bar_label(bars, fmt="%.2f GiB", fontsize=8, padding=2)
    for c in measured:
        plot.add_case("peak memory", c["precision"], peak_memory(c), c, "peak_memory_bytes")
    finish(plot, ax, "mode", "GiB", legend=None)
    return plot


# ----------------------------------------------------------------------------- data-parallel scaling

def world_size_of(case: dict) -> int:
    """The ranks a training case ran on: params.world_size (checked on loading), 1 in documents from
    before data parallelism, which record none."""
    return param(case, "world_size", 1)


def communication_of(case: dict) -> dict:
    communication = case.get("details", {}).get("communication")
    return communication if isinstance(communication, dict) else {}


def exposed_seconds(case: dict):
    """The gradients' all-reduce per step that no compute hid: exposed_seconds_per_step, else
    seconds_per_step (all of it exposed), None where the case records no communication."""
    communication = communication_of(case)
    value = communication.get("exposed_seconds_per_step", communication.get("seconds_per_step"))
    return value if isinstance(value, (int, float)) else None


def scaling_point(world_size: int, runs: list[dict]) -> dict:
    """One world size of a series from its repetitions: medians over the documents, with the range of
    the per-rank rate."""
    per_rank = [rate(c, "tokens_per_s") for c in runs]
    steps = [c["metrics"]["seconds"]["median"] for c in runs if "seconds" in c.get("metrics", {})]
    exposed = [exposed_seconds(c) for c in runs if exposed_seconds(c) is not None]
    shares = [exposed_seconds(c) / c["metrics"]["seconds"]["median"] for c in runs
              if exposed_seconds(c) is not None and c.get("metrics", {}).get("seconds", {}).get("median")]
    point = {"world_size": world_size, "per_rank": median(per_rank), "low": min(per_rank), "high": max(per_rank),
             "total": median(per_rank) * world_size, "runs": len(runs), "case": case_label(runs[-1]),
             "step_seconds": median(steps) if steps else None,
             "exposed_seconds": median(exposed) if exposed else None,
             "exposed_share": median(shares) if shares else None,
             "sources": sorted({c.get("source", "") for c in runs})}
    return point


def scaling_series(m: Machine) -> dict[str, dict]:
    """Per transformer configuration holding ok cases of more than one world size: a series per
    (mode, --grad-reduce) over the world sizes, with tokens/s per rank (rates.tokens_per_s, which is
    one rank's) and in total (per rank × world size), the efficiency against world size 1 (per-rank
    tokens/s over the same mode's on one rank, which reduces nothing and so has no --grad-reduce: its
    point starts each of the mode's lines) and the exposed communication's share of the step
    (details.communication over metrics.seconds.median). Where a mode has no world-size-1 case the
    efficiency is None and "missing" says why."""
    groups: dict[str, dict[tuple, list[dict]]] = {}
    for key, runs in m.runs.items():
        if key[0] != "transformer":
            continue
        for c in runs:
            if c["status"] == "ok" and rate(c, "tokens_per_s"):
                reduce = param(c, "grad_reduce") if world_size_of(c) > 1 else None
                groups.setdefault(c["name"], {}).setdefault((c["backend"], c["precision"], reduce, world_size_of(c)),
                                                            []).append(c)
    pages = {}
    for config, cells in sorted(groups.items()):
        sizes = sorted({k[3] for k in cells})
        if len(sizes) < 2:
            continue
        backends = {k[0] for k in cells}
        lines = sorted({k[:3] for k in cells if k[3] > 1},
                       key=lambda k: (k[0], precision_order(k[1]), k[2] or ""))
        # A mode measured on one rank only is a line of one point.
        lines += sorted({k[:3] for k in cells if k[3] == 1 and not any(l[:2] == k[:2] for l in lines)},
                        key=lambda k: (k[0], precision_order(k[1])))
        series, missing = {}, []
        for backend, mode, reduce in lines:
            label = ((f"{backend} " if len(backends) > 1 else "") + mode
                     + (f" · grad {reduce}" if reduce else " · 1 rank"))
            single = cells.get((backend, mode, None, 1))
            base = scaling_point(1, single) if single else None
            points = [base] if base else []
            points += [scaling_point(n, cells[(backend, mode, reduce, n)]) for n in sizes
                       if n > 1 and (backend, mode, reduce, n) in cells]
            for p in points:
                p["efficiency"] = p["per_rank"] / base["per_rank"] if base else None
            if base is None:
                missing.append(f"{label}: no world-size-1 run of {mode} on this machine")
            series[label] = {"backend": backend, "mode": mode, "grad_reduce": reduce, "points": points,
                             "missing": None if base else f"no world-size-1 run of {mode} on this machine"}
        pages[config] = {"world_sizes": sizes, "series": series, "missing": missing}
    return pages


def plot_scaling(m: Machine, config: str, page: dict, count: int) -> Plot:
    sizes, series = page["world_sizes"], page["series"]
    caption = ("Data-parallel scaling of training, from the documents of this machine with each world size "
               "(params.world_size). Left: tokens/s per rank (rates.tokens_per_s, one rank's; solid) and in total "
               "(per rank × world size; dashed), a line per mode and --grad-reduce (params.grad_reduce); "
               "world size 1 reduces nothing, so its point starts each of its mode's lines. Middle: scaling "
               "efficiency, per-rank tokens/s over the same mode's at world size 1 (1 is perfect scaling). "
               "Right: the share of the step's median time (metrics.seconds.median) spent in exposed gradient "
               "communication (details.communication.exposed_seconds_per_step, else seconds_per_step), the rest "
               "computing and the optimizer; world size 1 has none.")
    plot, (rates_ax, efficiency_ax, share_ax) = new_plot(
        f"transformer-scaling-{config_suffix(m, config, count)}",
        f"Data-parallel scaling — {config} — {m.label}", caption, m.stamp(), ncols=3, size=(6, 5))
    colour = dict(zip(series, itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])))
    repeated = False
    for label, s in series.items():
        xs = [p["world_size"] for p in s["points"]]
        per_rank = [p["per_rank"] for p in s["points"]]
        repeated |= any(p["runs"] > 1 for p in s["points"])
        rates_ax.errorbar(xs, per_rank, yerr=[[v - p["low"] for v, p in zip(per_rank, s["points"])],
                                              [p["high"] - v for v, p in zip(per_rank, s["points"])]],
                          marker="o", color=colour[label], capsize=3)
        rates_ax.plot(xs, [p["total"] for p in s["points"]], marker="s", linestyle="--", color=colour[label])
        for p in s["points"]:
            plot.points.append({"series": f"{label} per rank", "x": p["world_size"], "y": p["per_rank"],
                                "case": p["case"], "low": p["low"], "high": p["high"], "runs": p["runs"]})
            plot.points.append({"series": f"{label} total", "x": p["world_size"], "y": p["total"],
                                "case": p["case"], "runs": p["runs"]})
        if s["missing"] is None:
            efficiency_ax.plot(xs, [p["efficiency"] for p in s["points"]], marker="o", color=colour[label], label=label)
            for p in s["points"]:
                plot.points.append({"series": f"{label} efficiency", "x": p["world_size"], "y": p["efficiency"],
                                    "case": p["case"], "runs": p["runs"]})
        else:
            plot.points.append({"series": f"{label} efficiency", "x": None, "y": None, "case": None,
                                "missing": s["missing"]})
    efficiency_ax.axhline(1, color="0.3", linewidth=1, linestyle=":", label="perfect scaling")
    if page["missing"]:
        modes = sorted({s["mode"] for s in series.values() if s["missing"]}, key=precision_order)
        efficiency_ax.text(0.02, 0.02, f"no efficiency line for {', '.join(modes)}:\nno world-size-1 run of it "
                           "on this machine\n(reasons in the caption)", transform=efficiency_ax.transAxes, fontsize=7,
                           color="0.3", ha="left", va="bottom")
        plot.caption += " No efficiency line: " + "; ".join(page["missing"]) + "."
    draw_shares(plot, share_ax, series, sizes, colour)
    for ax in (rates_ax, efficiency_ax):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.set_xlim(sizes[0] / 1.25, sizes[-1] * 1.25)
        ax.minorticks_off()
    rates_ax.set_yscale("log")
    plain_log_ticks(rates_ax.yaxis)
    finish(plot, rates_ax, "world size (ranks)", "tokens/s", legend=None)
    legend_below(rates_ax, [matplotlib.lines.Line2D([], [], color=colour[label], marker="o", label=label)
                            for label in series]
                 + [matplotlib.lines.Line2D([], [], color="0.3", marker="o", label="solid: per rank"),
                    matplotlib.lines.Line2D([], [], color="0.3", marker="s", linestyle="--", label="dashed: total")])
    finish(plot, efficiency_ax, "world size (ranks)", "per-rank tokens/s / world size 1's")
    finish(plot, share_ax, "world size (ranks)", "share of the step", legend=None)
    if repeated:
        plot.caption += (" Points are medians over the documents of a world size; error bars the range of the "
                         "per-rank tokens/s.")
    return plot


def draw_shares(plot: Plot, ax, series: dict, sizes: list[int], colour: dict):
    """Stacked bars per world size above 1 and series: exposed communication at the bottom, the rest of
    the step above it."""
    multi = [n for n in sizes if n > 1]
    width = 0.8 / max(len(series), 1)
    unrecorded = []
    for j, (label, s) in enumerate(series.items()):
        at = {p["world_size"]: p for p in s["points"]}
        for i, n in enumerate(multi):
            p = at.get(n)
            if p is None:
                continue
            x = i + j * width
            if p["exposed_share"] is None:
                unrecorded.append(f"{label} at {n} ranks")
                plot.points.append({"series": f"{label} exposed communication", "x": n, "y": None, "case": p["case"],
                                    "missing": "no details.communication recorded"})
                continue
            share = p["exposed_share"]
            ax.bar([x], [share], width, color=colour[label], edgecolor="0.2", linewidth=0.5)
            ax.bar([x], [1 - share], width, bottom=[share], color=colour[label], alpha=0.25, edgecolor="0.2",
                   linewidth=0.5)
            ax.annotate(f"{100 * share:.0f}%", (x, share), xytext=(0, 2), textcoords="offset points", ha="center",
                        fontsize=6)
            plot.points.append({"series": f"{label} exposed communication", "x": n, "y": share, "case": p["case"],
                                "exposed_seconds": p["exposed_seconds"], "step_seconds": p["step_seconds"],
                                "runs": p["runs"]})
            plot.points.append({"series": f"{label} rest of the step", "x": n, "y": 1 - share, "case": p["case"],
                                "runs": p["runs"]})
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(multi))], [str(n) for n in multi])
    ax.set_ylim(0, 1.05)
    ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    handles = [matplotlib.patches.Patch(color=colour[label], label=label) for label in series]
    handles += [matplotlib.patches.Patch(facecolor="0.3", label="solid: exposed communication"),
                matplotlib.patches.Patch(facecolor="0.3", alpha=0.25, label="light: rest of the step")]
    legend_below(ax, handles)
    if unrecorded:
        plot.caption += " No communication recorded (details.communication): " + "; ".join(unrecorded) + "."


def transformer_plots(m: Machine):
    configs = per_config(m.ok("transformer"))
    for config, cases in configs.items():
        n = len(configs)
        yield plot_transformer_speedup(m, config, cases, n)
        yield plot_breakdown(m, config, cases, n)
        yield plot_series(m, config, cases, n, "loss")
        yield plot_series(m, config, cases, n, "loss_scale")
        yield plot_peak_memory(m, config, cases, n)
    scaling = scaling_series(m)
    for config, page in scaling.items():
        yield plot_scaling(m, config, page, len(configs))


# ----------------------------------------------------------------------------- several machines

def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass
class Bar:
    """One bar of a machine comparison: a value with its range and the run count of each case in it."""
    value: float
    low: float
    high: float
    runs: list

    def runs_text(self) -> str:
        fewest, most = min(self.runs), max(self.runs)
        return f"{most} run{'s' if most > 1 else ''}" if fewest == most else f"{fewest}-{most} runs"


def geomean_bar(cases: list[tuple[float, float, float, int]]) -> Bar:
    """(value, low, high, runs) of each case as one bar: the geometric means of values, lows and highs."""
    return Bar(*(geomean([c[i] for c in cases]) for i in range(3)), [c[3] for c in cases])


MACHINE_SPREAD = (" Error bars: the geometric mean of each case's lowest and highest, its range over the runs "
                  "where it ran more than once, else one standard deviation of its timing samples within its run; "
                  "each bar says how many runs (documents) its cases come from.")


def short_number(value: float) -> str:
    """A bar's value: 3 digits, or with an SI prefix (18.0 M) for tokens or TFLOP per dollar."""
    return f"{value:.3g}" if value < 1e4 else matplotlib.ticker.EngFormatter(places=1)(value)


HATCHES = ("", "//", "..", "xx", "\\\\", "oo", "++", "--")


def grouped_bars(plot: Plot, ax, groups: list[str], machines: list[Machine], value, legend: dict[str, str],
                 against_one: tuple[str, str] | None = None):
    """Bars per group (mode) and machine with error bars and run counts, and the legend below them.
    `value(group, machine)` gives a Bar or the reason there is none, written where the bar would be.
    With `against_one` (what above and below 1x mean) the colour says which side of 1x a bar is and
    a hatch tells the machines apart; otherwise each machine has its colour."""
    colour = colours([m.label for m in machines])
    width = 0.8 / len(machines)
    at_bottom = matplotlib.transforms.blended_transform_factory(ax.transData, ax.transAxes)
    handles = []
    for j, m in enumerate(machines):
        hatch = HATCHES[j % len(HATCHES)] if against_one else None
        for i, group in enumerate(groups):
            x, bar = i + j * width, value(group, m)
            if isinstance(bar, str):
                ax.text(x, 0.02, bar[:48], transform=at_bottom, rotation=90, ha="center", va="bottom", fontsize=6,
                        color="0.35")
                plot.points.append({"series": m.label, "x": group, "y": None, "case": None, "missing": bar})
                continue
            face = ("tab:green" if bar.value >= 1 else "tab:red") if against_one else colour[m.label]
            ax.bar([x], [bar.value], width, color=face, hatch=hatch, edgecolor="0.2", linewidth=0.5, capsize=2,
                   yerr=[[bar.value - bar.low], [bar.high - bar.value]])
            ax.annotate(f"{short_number(bar.value)}\n{bar.runs_text()}", (x, bar.high), xytext=(0, 2),
                        textcoords="offset points", ha="center", va="bottom", fontsize=6)
            plot.points.append({"series": m.label, "x": group, "y": bar.value, "case": None, "low": bar.low,
                                "high": bar.high, "runs": max(bar.runs), "fewest_runs": min(bar.runs)})
        handles.append(matplotlib.patches.Patch(facecolor="white" if against_one else colour[m.label],
                                                edgecolor="0.2", hatch=hatch, label=legend[m.label]))
    if against_one:
        handles += [matplotlib.patches.Patch(color="tab:green", label=f"1x or more: {against_one[0]}"),
                    matplotlib.patches.Patch(color="tab:red", label=f"below 1x: {against_one[1]}")]
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups)
    ax.set_xlim(-width / 2 - 0.1, len(groups) - 0.2 - width / 2 + 0.1)  # every slot, a missing bar's note too
    ax.margins(y=0.2)  # room above the highest error bar for its label
    legend_below(ax, handles)


def missing_reason(m: Machine, suite: str, mode: str, measured_but: str) -> str:
    """Why a machine has no bar for a mode: its cases' failure or skip, the mode or suite not run, or
    `measured_but` when it ran and still gives no figure for the plot."""
    cases = [c for key, runs in sorted(m.runs.items()) if key[0] == suite and key[3] == mode for c in runs]
    if any(c["status"] == "ok" for c in cases):
        return measured_but
    if cases:
        return f"{'failed' if cases[-1]['status'] == 'error' else cases[-1]['status']}: {cases[-1].get('message', '')}"
    return "not run" if any(key[0] == suite for key in m.runs) else f"{suite} not run"


def steps_of(m: Machine, suite: str) -> list[int]:
    return sorted({s for key, runs in m.runs.items() if key[0] == suite for c in runs
                   if c["status"] == "ok" and isinstance(s := param(c, "steps"), int)})


def machine_legends(machines: list[Machine], suite: str) -> tuple[dict[str, str], str]:
    """Each machine's legend entry, its label with its cores and threads (a CPU's rates follow them),
    and its step counts where the runs compared used different ones, with a caption saying so."""
    steps = {m.label: steps_of(m, suite) for m in machines}
    differ = len({n for counts in steps.values() for n in counts}) > 1
    legends = {}
    for m in machines:
        cpu = m.env.get("cpu") or {}
        parts = [f"{cpu['logical_cores']} logical cores"] if isinstance(cpu.get("logical_cores"), int) else []
        parts += [f"{'/'.join(map(str, sorted(m.threads)))} threads"] if m.threads else []
        parts += [f"{'/'.join(map(str, steps[m.label]))} steps"] if differ and steps[m.label] else []
        legends[m.label] = f"{m.label} ({', '.join(parts)})" if parts else m.label
    caption = (" The runs compared used different step counts (params.steps): " +
               "; ".join(f"{label}: {'/'.join(map(str, n))} steps" for label, n in steps.items() if n) + "."
               if differ else "")
    return legends, caption


def case_spread(m: Machine, key: tuple) -> float:
    ok = [c for c in m.runs.get(key, []) if c["status"] == "ok"]
    return relative_spread(ok[-1]) if ok else 0.0


def ok_speedups(m: Machine, suite: str) -> dict[str, list[tuple[float, float, float, int]]]:
    """(speedup, low, high, runs) of each case per mode: the range over its runs where it ran more
    than once, else its time's and its baseline's spreads within the run combined."""
    out: dict[str, list] = {}
    for key, s in m.speedups().items():
        if key[0] != suite or s["speedup"] <= 0:
            continue
        if s["runs"] > 1:
            low, high = s["low"], s["high"]
        else:
            baseline = (*key[:3], m.speedup_baselines.get(key))
            low, high = within_run(s["speedup"], math.hypot(case_spread(m, key), case_spread(m, baseline)))
        out.setdefault(key[3], []).append((s["speedup"], low, high, s["runs"]))
    return out


def stamps(machines: list[Machine]) -> str:
    return " | ".join(m.stamp() for m in machines)


def plot_speedup_by_machine(machines: list[Machine], suite: str) -> Plot | None:
    per_machine = {m.label: ok_speedups(m, suite) for m in machines}
    if sum(bool(v) for v in per_machine.values()) < 2:
        return None
    modes = sorted({p for v in per_machine.values() for p in v}, key=precision_order)
    legends, steps_caption = machine_legends(machines, suite)
    plot, (ax,) = new_plot(f"machines-speedup-{slug(suite)}", f"Speedup per mode and machine — {suite}",
                           f"Geometric mean over the {suite} cases of each mode's speedup over the baseline "
                           "measured within each run." + MACHINE_SPREAD + steps_caption, stamps(machines),
                           size=(9, 5.5))

    def bar(mode: str, m: Machine):
        cases = per_machine[m.label].get(mode)
        return geomean_bar(cases) if cases else missing_reason(m, suite, mode, "no speedup: its baseline did not run")

    grouped_bars(plot, ax, modes, machines, bar, legends, ("faster than the run's baseline", "slower than it"))
    ax.axhline(1, color="0.3", linewidth=1)
    finish(plot, ax, "mode", "speedup", legend=None)
    note_missing(plot)
    return plot


def note_missing(plot: Plot):
    """The reasons of the bars not drawn, in full, in the caption (the figure holds their start)."""
    missing = [f"{p['series']} {p['x']}: {p['missing']}" for p in plot.points if "missing" in p]
    if missing:
        plot.caption += " No bar: " + "; ".join(missing) + "."


def throughput_metric(machines: list[Machine]) -> tuple[str, str, str] | None:
    """(suite, rate, unit) that the machines are ranked by: tokens/s when a transformer ran."""
    for suite, key, unit in (("transformer", "tokens_per_s", "tokens/s"), ("gemm", "tflops", "TFLOP/s")):
        if sum(any(rate(c, key) for c in m.ok(suite)) for m in machines) >= 2:
            return suite, key, unit
    return None


def cases_with_rate(m: Machine, suite: str, key: str) -> dict[tuple, dict]:
    return {case_key(c): c for c in m.ok(suite) if rate(c, key)}


def find_machine(machines: list[Machine], name: str) -> Machine:
    matches = [m for m in machines if name.lower() in m.label.lower()]
    if len(matches) != 1:
        labels = "; ".join(m.label for m in machines)
        raise ReportError(f"--reference-machine '{name}' matches {len(matches)} machines: "
                          f"give part of exactly one of: {labels}")
    return matches[0]


def plot_normalized(machines: list[Machine], reference: Machine, metric) -> Plot | None:
    suite, key, unit = metric
    ref = cases_with_rate(reference, suite, key)

    def relative(mode: str, m: Machine):
        """Each case's ratio; its range from this machine's low over the reference's high to the reverse."""
        ratios = []
        for k, c in cases_with_rate(m, suite, key).items():
            if k in ref and k[3] == mode:
                (low, high), (ref_low, ref_high) = rate_range(c, key), rate_range(ref[k], key)
                ratios.append((rate(c, key) / rate(ref[k], key), low / ref_high, high / ref_low, c.get("runs", 1)))
        return geomean_bar(ratios) if ratios else missing_reason(m, suite, mode, "no case in common with the reference")

    modes = sorted({k[3] for k in ref}, key=precision_order)
    legends, steps_caption = machine_legends(machines, suite)
    plot, (ax,) = new_plot(f"machines-relative-{slug(key)}", f"{unit} relative to {reference.label}",
                           f"Geometric mean over the {suite} cases both machines ran of {unit} divided by the "
                           f"reference machine's ({reference.label} = 1)." + MACHINE_SPREAD +
                           " A ratio's range runs from this machine's low over the reference's high to the reverse."
                           + steps_caption, stamps(machines), size=(9, 5.5))
    grouped_bars(plot, ax, modes, machines, relative, legends,
                 ("as fast as the reference or faster", "slower than the reference"))
    ax.axhline(1, color="0.3", linewidth=1)
    finish(plot, ax, "mode", f"{unit} / reference", legend=None)
    note_missing(plot)
    return plot


PRICE_NUMBERS = ("price_per_hour", "watts")
PRICE_FIELDS = ("machine", *PRICE_NUMBERS)


def load_prices(path: Path) -> list[dict]:
    """Rows of machine, price_per_hour, watts (either number may be empty) from CSV or JSON; a
    malformed row is refused naming the file, the row and the field."""
    rows = json_price_rows(path) if path.suffix.lower() == ".json" else csv_price_rows(path)
    return [dict(price_row(fields, f"'{path}' at {where}"), where=where) for where, fields in rows]


def json_price_rows(path: Path) -> list[tuple[str, object]]:
    """(where, fields) of a list of rows or of an object of rows by machine."""
    raw = read_json(path)
    if isinstance(raw, list):
        return [(f"$[{i}]", row) for i, row in enumerate(raw)]
    if isinstance(raw, dict):
        return [(f"$[{json.dumps(k)}]", dict(row, machine=k) if isinstance(row, dict) else row)
                for k, row in raw.items()]
    raise ReportError(f"'{path}' at $: a prices file is a list of rows or an object of rows by machine, "
                      f"not {json_type(raw)}")


def csv_price_rows(path: Path) -> list[tuple[str, dict]]:
    text = read_text(path, "CSV").removeprefix("\ufeff")  # the byte-order mark spreadsheets write
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)  # a stray quote is an error, not text
    try:
        header = reader.fieldnames
        if not header:
            raise ReportError(f"'{path}' is empty: it needs the header {','.join(PRICE_FIELDS)}")
        unknown = [name for name in header if name not in PRICE_FIELDS]
        if unknown or "machine" not in header:
            raise ReportError(f"'{path}' at line 1: the header is {','.join(header)}, it must name the columns "
                              f"{','.join(PRICE_FIELDS)} (machine required)")
        return [(f"line {reader.line_num}", row) for row in reader]
    except csv.Error as e:  # a quote left open or followed by text, a cell beyond csv's size limit
        # The underlying reader's count: DictReader's is only updated once a row is complete.
        raise ReportError(f"'{path}' at line {reader.reader.line_num}: not CSV: {e}") from e


def json_type(value) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null"}
    return names.get(type(value), "a number")


def price_row(fields, where: str) -> dict:
    if not isinstance(fields, dict):
        raise ReportError(f"{where}: a row is an object of {', '.join(PRICE_FIELDS)}, not {json_type(fields)}")
    if None in fields:  # csv.DictReader's key for cells beyond the header
        raise ReportError(f"{where}: more cells than the header has columns")
    unknown = sorted(set(fields) - set(PRICE_FIELDS))
    if unknown:
        raise ReportError(f"{where}: unknown field {unknown[0]!r} (the fields are {', '.join(PRICE_FIELDS)})")
    machine = fields.get("machine")
    if not isinstance(machine, str) or not machine.strip():
        raise ReportError(f"{field_at(where, 'machine')}: every row needs a machine, part of a machine label")
    return {"machine": machine.strip(), **{key: price_number(fields.get(key), field_at(where, key))
                                           for key in PRICE_NUMBERS}}


def field_at(row: str, key: str) -> str:
    """A field of a row: a JSON path ($[0].watts) or a CSV line and column."""
    return f"{row}.{key}" if row.endswith("]") else f"{row}, column {key}"


def price_number(value, where: str) -> float | None:
    """A positive, finite number, from JSON's numbers or CSV's (or JSON's) text; None when empty."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ReportError(f"{where}: {json_type(value)} is not a number")
    try:
        number = float(value)
    except ValueError as e:
        raise ReportError(f"{where}: '{value}' is not a number") from e
    if not (math.isfinite(number) and number > 0):
        raise ReportError(f"{where}: {value} is not allowed: it must be a positive, finite number")
    return number


def match_prices(prices: list[dict], machines: list[Machine], path: Path) -> None:
    """Refuses a row that names no machine (a typo would drop a machine from the plots quietly) and
    a machine that two rows name (the same one twice, or "A100" and "SXM4")."""
    labels = "; ".join(m.label for m in machines)
    for p in prices:
        if not any(p["machine"].lower() in m.label.lower() for m in machines):
            raise ReportError(f"'{path}' at {field_at(p['where'], 'machine')}: '{p['machine']}' is part of no "
                              f"machine's label (the machines: {labels})")
    for m in machines:
        rows = [p for p in prices if p["machine"].lower() in m.label.lower()]
        if len(rows) > 1:
            raise ReportError(f"'{path}' at {field_at(rows[1]['where'], 'machine')}: '{rows[1]['machine']}' and "
                              f"'{rows[0]['machine']}' both name {m.label}")


def price_of(prices: list[dict], m: Machine):
    return next((p for p in prices if p["machine"].lower() in m.label.lower()), None)


def best_cases(m: Machine, suite: str, key: str) -> dict[str, dict]:
    """The case of the highest rate per mode."""
    best: dict[str, dict] = {}
    for c in m.ok(suite):
        if rate(c, key) and (c["precision"] not in best or rate(c, key) > rate(best[c["precision"]], key)):
            best[c["precision"]] = c
    return best


def plot_per_cost(machines: list[Machine], prices: list[dict], metric, cost: str, notes: list[str]):
    suite, key, unit = metric
    priced = {m.label: p[cost] for m in machines if (p := price_of(prices, m)) and p[cost]}
    unpriced = [m.label for m in machines if m.label not in priced]
    if unpriced:
        notes.append(f"no {cost} for: {'; '.join(unpriced)}")
    if not priced:
        return None
    per_dollar = cost == "price_per_hour"
    # TFLOP/s * 3600 s/h / ($/h) = TFLOP per dollar; tokens/s * 3600 / ($/h) = tokens per dollar.
    scale, what = (3600, f"{unit.split('/')[0]} per $") if per_dollar else (1, f"{unit} per W")
    drawn = [m for m in machines if m.label in priced]
    best = {m.label: best_cases(m, suite, key) for m in drawn}
    modes = sorted({p for v in best.values() for p in v}, key=precision_order)
    legends, steps_caption = machine_legends(drawn, suite)
    caption = (f"Best {unit} per mode ({suite}) " + ("times 3600 over the price per hour."
               if per_dollar else "over the watts given in the prices file.") +
               " Error bars: the best case's range over its runs where it ran more than once, else one standard "
               "deviation of its timing samples within its run; each bar says how many runs it comes from." +
               steps_caption)
    if unpriced:
        caption += f" Not drawn, no {cost} in the prices file: {'; '.join(unpriced)}."
    plot, (ax,) = new_plot(f"machines-per-{'dollar' if per_dollar else 'watt'}", f"{what} by machine", caption,
                           stamps(machines), size=(9, 5.5))

    def bar(mode: str, m: Machine):
        c = best[m.label].get(mode)
        if c is None:
            return missing_reason(m, suite, mode, f"no {unit} recorded")
        factor = scale / priced[m.label]
        low, high = rate_range(c, key)
        return Bar(rate(c, key) * factor, low * factor, high * factor, [c.get("runs", 1)])

    grouped_bars(plot, ax, modes, sorted(drawn, key=lambda m: m.label), bar, legends)
    ax.yaxis.set_major_formatter(matplotlib.ticker.EngFormatter())
    finish(plot, ax, "mode", what, legend=None)
    note_missing(plot)
    return plot


def machine_plots(machines: list[Machine], reference: Machine | None, prices: list[dict] | None,
                  notes: list[str]):
    if len(machines) < 2:
        return
    for suite in sorted({k[0] for m in machines for k in m.speedup_runs}):
        yield plot_speedup_by_machine(machines, suite)
    metric = throughput_metric(machines)
    if metric is None:
        notes.append("no throughput measured on two machines: no relative or per-cost plots")
        return
    yield plot_normalized(machines, reference or machines[0], metric)
    if prices is not None:
        yield plot_per_cost(machines, prices, metric, "price_per_hour", notes)
        yield plot_per_cost(machines, prices, metric, "watts", notes)


# ----------------------------------------------------------------------------- history

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MPBENCH = ROOT / "build" / "cli" / "mpbench"
# The figures `mpbench history` tracks, in the order it picks a series' one (history/series.cpp).
TRACKED_METRICS = ("speedup", "pct_of_copy", "seconds")
METRIC_AXIS = {"speedup": "speedup over {reference} (x)", "pct_of_copy": "% of the copy", "seconds": "fastest time (s)"}
# Small multiples: more series in one figure would shrink each panel past reading.
SERIES_PER_FIGURE = 12
PANEL_COLUMNS = 3
MAX_RUN_TICKS = 4


def mpbench_binary(given: Path | None) -> Path:
    return given or Path(os.environ.get("MPBENCH_BIN") or DEFAULT_MPBENCH)


def shown_db(db: str) -> str:
    """The history as messages and pages name it: a postgresql:// URL with its password as ***,
    as mpbench names it."""
    parts = urllib.parse.urlsplit(db)
    if parts.scheme not in ("postgresql", "postgres") or parts.password is None:
        return db
    user, _, host = parts.netloc.rpartition("@")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}:***@{host}"))


def export_history(binary: Path, db: str, *options: str) -> dict:
    """`mpbench history export DB --format json OPTIONS`: mpbench computes the figures and change
    points, so the plots show what `history show` and `check` say. DB is a file or a postgresql://
    URL, passed on as given."""
    command = [str(binary), "history", "export", db, "--format", "json", *options]
    shown = " ".join(["history export", shown_db(db), *options])
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    except OSError as e:
        raise ReportError(f"cannot run '{binary}': {e.strerror} (build mpbench, or give --mpbench PATH or "
                          "set MPBENCH_BIN)") from e
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise ReportError(f"'{binary} {shown}' failed (exit {done.returncode}): "
                          f"{said[-1] if said else 'it said nothing'}")
    try:
        return printable_strings(json.loads(done.stdout, parse_constant=refuse_constant))
    except ValueError as e:
        raise ReportError(f"'{binary} {shown}' wrote no JSON: {e}") from e


def latest_documents(binary: Path, db: str, runs: int) -> list[tuple[str, dict]]:
    """The documents of each machine's last `runs` runs in the history (`export --latest`), each
    checked as a result file is and named by its run: what the hardware-selection plots read."""
    documents = []
    for stored in export_history(binary, db, "--latest", str(runs))["documents"]:
        where = f"run {stored['run']} of {shown_db(db)} ({stored['source']})"
        documents.append((where, with_printable_names(check_document(stored["document"], where))))
    return documents


@dataclass
class Series:
    """One case's runs on one machine, as `mpbench history` keys them."""
    machine: str
    label: str  # suite/name/backend/precision
    runs: list = field(default_factory=list)  # exported cases, in run order

    def metric(self) -> str | None:
        ok = [c for c in self.runs if c["status"] == "ok"]
        return next((m for m in TRACKED_METRICS if any(c[m] for c in ok)), None)

    def points(self) -> list[dict]:
        """Its ok runs with a positive tracked figure: those mpbench finds change points among."""
        metric = self.metric()
        return [c for c in self.runs if c["status"] == "ok" and metric and c[metric] and c[metric]["value"] > 0]


def history_series(export: dict) -> dict[str, list[Series]]:
    """Machine -> its series, sorted by case."""
    series: dict[tuple, Series] = {}
    for c in sorted(export["cases"], key=lambda c: c["run"]):
        label = case_label(c)
        series.setdefault((c["machine"], label), Series(c["machine"], label)).runs.append(c)
    machines: dict[str, list[Series]] = {}
    for key in sorted(series):
        machines.setdefault(key[0], []).append(series[key])
    return machines


def short_revision(run: dict) -> str:
    return run["revision"][:7] or "-"


def runs_of(series: list[Series]) -> dict[int, dict]:
    """Every run of the series by number, as one of its exported cases (its date and revision)."""
    runs = {c["run"]: c for s in series for c in s.runs}
    return dict(sorted(runs.items()))


def run_ticks(runs: dict[int, dict]) -> dict[int, str]:
    return {number: f"{number}\n{run['created'][:10]}\n{short_revision(run)}" for number, run in runs.items()}


def thinned(ticks: dict[int, str]) -> dict[int, str]:
    """At most MAX_RUN_TICKS labels, evenly spaced: a date each, more would run into each other."""
    step = math.ceil(len(ticks) / MAX_RUN_TICKS)
    return dict(list(ticks.items())[::step])


def chunks(items: list, most: int) -> list[list]:
    """The items in as few parts of at most `most` as can be, of sizes that differ by one at most."""
    parts = math.ceil(len(items) / most)
    size, extra = divmod(len(items), parts)
    bounds = [i * size + min(i, extra) for i in range(parts + 1)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:])]


def history_caption(part: int, parts: list[list[Series]], lone: list[Series], silent: list[Series]) -> str:
    caption = ("Each panel: one series' tracked figure (the speedup where its runs have one, else the share of "
               "the copy, else the fastest time) per run in the order stored; band: its spread within the run as "
               "mpbench history stores it (the relative standard deviation of the timing samples, for a speedup "
               "both times' combined), value × (1 ± spread). Dashed red lines: change points, E-Divisive means at "
               "alpha 0.01 from mpbench history, between the two runs named, with the relative change of the "
               "median.")
    if len(parts) > 1:
        shares = "; ".join(f"part {i + 1}: {len(p)} ({p[0].label} to {p[-1].label})" for i, p in enumerate(parts))
        caption += f" Part {part + 1} of {len(parts)} of this machine's {sum(map(len, parts))} series ({shares})."
    if part == 0 and lone:
        caption += " One run, no trend: " + ", ".join(s.label for s in lone) + "."
    if part == 0 and silent:
        caption += " No ok run: " + ", ".join(s.label for s in silent) + "."
    return caption


def draw_series(plot: Plot, ax, s: Series, changes: list[dict], runs: dict[int, dict]):
    points, metric = s.points(), s.metric()
    xs = [c["run"] for c in points]
    values = [c[metric]["value"] for c in points]
    spreads = [c[metric]["spread"] or 0.0 for c in points]  # null where mpbench had no spread
    lows, highs = [v * (1 - d) for v, d in zip(values, spreads)], [v * (1 + d) for v, d in zip(values, spreads)]
    ax.fill_between(xs, lows, highs, alpha=0.25, linewidth=0)
    ax.plot(xs, values, "o-", markersize=3, linewidth=1)
    for c, x, y, low, high, spread in zip(points, xs, values, lows, highs, spreads):
        plot.points.append({"series": s.label, "x": x, "y": y, "case": s.label, "metric": metric, "low": low,
                            "high": high, "spread": spread, "created": c["created"], "revision": c["revision"]})
    for change in changes:
        draw_change(plot, ax, s, change, runs)
    ax.set_title(s.label, fontsize=8)
    reference = points[0][metric]["reference"]
    ax.set_ylabel(METRIC_AXIS[metric].format(reference=reference), fontsize=7)
    shown = thinned(run_ticks(runs))
    ax.set_xticks(list(shown), list(shown.values()), fontsize=6)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(True, which="major", alpha=0.3)


def draw_change(plot: Plot, ax, s: Series, change: dict, runs: dict[int, dict]):
    """A line halfway between the last run before the change and the first after it."""
    before, after = change["run_before"], change["run_after"]
    x = (before + after) / 2
    text = (f"{change['relative_change']:+.1%}\nruns {before}→{after}, "
            f"{short_revision(runs[before])}→{short_revision(runs[after])}")
    ax.axvline(x, color="tab:red", linestyle="--", linewidth=1)
    ax.annotate(text, (x, 1), xycoords=("data", "axes fraction"), xytext=(3, -3), textcoords="offset points",
                fontsize=6, color="tab:red", va="top")
    plot.points.append({"series": f"{s.label} change point", "x": x, "y": None, "case": s.label,
                        **{k: change[k] for k in ("metric", "run_before", "run_after", "before", "after",
                                                  "relative_change", "low", "high", "p_value")}})


def history_plot(machine: str, part: int, parts: list[list[Series]], lone: list[Series], silent: list[Series],
                 changes: list[dict]) -> Plot:
    drawn = parts[part]
    runs = runs_of(drawn)
    suffix = f" (part {part + 1} of {len(parts)})" if len(parts) > 1 else ""
    columns = min(PANEL_COLUMNS, len(drawn))
    plot, axes = new_plot(f"history-{slug(machine)}" + (f"-{part + 1}" if len(parts) > 1 else ""),
                          f"History — {machine}{suffix}", history_caption(part, parts, lone, silent),
                          f"{machine} · runs {min(runs)} to {max(runs)}", ncols=columns,
                          nrows=math.ceil(len(drawn) / columns), size=(5, 3.2))
    for ax, s in itertools.zip_longest(axes, drawn):
        if s is None:
            ax.set_visible(False)  # the grid's last row has room to spare
            continue
        draw_series(plot, ax, s, [c for c in changes if c["case"] == s.label], runs)
    plot.figure.supxlabel("run as mpbench history numbers them, its date and revision", fontsize=8)
    return plot


def history_plots(export: dict, notes: list[str]):
    """Per machine, its series of two runs or more in figures of at most SERIES_PER_FIGURE."""
    for machine, series in history_series(export).items():
        trends = [s for s in series if len(s.points()) > 1]
        lone = [s for s in series if len(s.points()) == 1]
        silent = [s for s in series if not s.points()]
        changes = [c for c in export["change_points"] if c["machine"] == machine]
        if not trends:
            notes.append(f"{machine}: no series with two runs or more, no trend plot (one run: "
                         f"{len(lone)} series, no ok run: {len(silent)})")
            continue
        parts = chunks(trends, SERIES_PER_FIGURE)
        for part in range(len(parts)):
            yield machine, history_plot(machine, part, parts, lone, silent, changes)


# ----------------------------------------------------------------------------- output

def save(plot: Plot, out: Path) -> dict:
    plot.figure.tight_layout(rect=(0, 0.03, 1, 1))
    plot.figure.savefig(out / f"{plot.name}.png", dpi=110, metadata={"Software": None})
    plot.figure.savefig(out / f"{plot.name}.svg", metadata={"Date": None, "Creator": None})
    plt.close(plot.figure)
    (out / f"{plot.name}.json").write_text(json.dumps({"title": plot.title, "points": plot.points}, indent=1))
    print(f"report: {plot.name} ({plot.title})")
    return {"name": plot.name, "title": plot.title, "caption": plot.caption}


def peer_pairs(m: Machine) -> list[dict]:
    """mpbench's ok cases that PyTorch measured too, by suite, name and precision: each side's median
    time (the median over its documents), PyTorch's over mpbench's, and each side's speedup over fp32."""
    def torch_time(key):
        times = [c["metrics"]["seconds"]["median"] for c in m.peer_runs.get(key, [])
                 if c["status"] == "ok" and "seconds" in c.get("metrics", {})]
        return median(times) if times else None

    speedups, pairs = m.speedups(), []
    for suite in sorted({k[0] for k in m.runs}):
        for c in m.ok(suite):
            key = (c["suite"], c["name"], c["precision"])
            mine, theirs = c.get("metrics", {}).get("seconds", {}).get("median"), torch_time(key)
            if not mine or not theirs:
                continue
            torch_fp32 = torch_time((c["suite"], c["name"], "fp32")) if c["precision"] != "fp32" else None
            mine_speedup = speedups.get(case_key(c))
            pairs.append({"case": "/".join(key), "precision": c["precision"], "mpbench_s": mine, "torch_s": theirs,
                          "ratio": theirs / mine, "mpbench_speedup": mine_speedup["speedup"] if mine_speedup else None,
                          "torch_speedup": torch_fp32 / theirs if torch_fp32 else None})
    return pairs


def plot_peer(m: Machine) -> Plot | None:
    pairs = peer_pairs(m)
    if not pairs:
        return None
    plot, (ax,) = new_plot(f"peer-{slug(m.label)}", f"mpbench against {m.peer_label} — {m.label}",
                           f"PyTorch's time over mpbench's per case and precision (above 1: mpbench faster), from "
                           f"{m.peer_label}'s documents of this machine (scripts/torch_baseline.py); they are drawn "
                           "here only, never in mpbench's own plots.", m.stamp(), size=(8, 1.5 + 0.3 * len(pairs)))
    colour = colours({p["precision"] for p in pairs})
    for i, p in enumerate(pairs):  # a stem from 1 (on par): a bar on a log axis would start nowhere
        ax.hlines(i, 1, p["ratio"], color=colour[p["precision"]], linewidth=3)
        ax.plot(p["ratio"], i, "o", color=colour[p["precision"]], label=p["precision"])
        ax.annotate(f"{p['ratio']:.2f}x", (p["ratio"], i), xytext=(4, 3), textcoords="offset points", fontsize=7)
        plot.add(p["precision"], p["ratio"], p["case"], p["case"])
    ax.set_yticks(range(len(pairs)), [p["case"] for p in pairs], fontsize=7)
    ax.set_xscale("log")
    ratios = [p["ratio"] for p in pairs] + [1.0]
    ax.set_xlim(min(ratios) / 1.5, max(ratios) * 1.5)
    ax.set_ylim(-0.7, len(pairs) - 0.3)
    ax.axvline(1, color="0.3", linewidth=1)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7)
    ax.set_xlabel("PyTorch's time / mpbench's")
    ax.grid(True, which="major", axis="x", alpha=0.3)
    return plot


def single_machine_plots(m: Machine, notes: list[str]):
    """Figures one at a time, so each is saved and closed before the next is drawn."""
    yield plot_gemm_sizes(m)
    yield plot_fp8_crossover(m, notes)
    yield plot_gemm_shapes(m)
    yield plot_alignment(m)
    yield plot_roofline(m, notes)
    yield plot_bandwidth(m)
    yield plot_casts(m)
    yield from transformer_plots(m)
    yield plot_peer(m)


def machine_figures(m: Machine, notes: list[str]):
    """(heading, plot) of one machine; a function, so each machine's plots carry its own label."""
    for plot in single_machine_plots(m, notes):
        yield m.label, plot


def format_seconds(s) -> str:
    if not isinstance(s, (int, float)):
        return ""
    for unit, factor in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if s >= factor:
            return f"{s / factor:.3g} {unit}"
    return f"{s * 1e9:.3g} ns"


def format_rates(case: dict) -> str:
    units = {"tflops": "TFLOP/s", "gbps": "GB/s", "tokens_per_s": "tokens/s", "pct_of_peak": "% of peak",
             "pct_of_copy": "% of copy"}
    parts = [f"{rate(case, k):.4g} {u}" for k, u in units.items() if rate(case, k) is not None]
    return ", ".join(parts)


def table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def machines_table(machines: list[Machine]) -> str:
    rows = []
    for m in machines:
        gpu = (m.env.get("gpus") or [{}])[0]
        rows.append([m.label, m.key, m.cuda or "-", gpu.get("driver_version") or "-",
                     ", ".join(sorted({d[:10] for d in m.dates})), ", ".join(m.sources)])
    return table(["machine", "identity (CPU model, ISA flags, ISA limit; or GPU, CUDA)", "CUDA", "driver", "date",
                  "documents"], rows)


def format_spread(case: dict) -> str:
    """The range of the median time over a case's repetitions."""
    times = [c["metrics"]["seconds"]["median"] for c in case.get("repetitions", [])]
    return f"{format_seconds(min(times))} to {format_seconds(max(times))}" if len(times) > 1 else ""


def cases_table(m: Machine) -> str:
    rows = []
    speedups = m.speedups()
    for key, runs in sorted(m.runs.items()):
        ok = [c for c in runs if c["status"] == "ok"]
        c = merge_runs(ok)
        if c is None:
            continue
        c["repetitions"] = [r for r in ok if "seconds" in r.get("metrics", {})]
        s = speedups.get(key)
        rows.append([c["suite"], c["name"], c["backend"], c["precision"], str(len(ok)),
                     format_seconds(c.get("metrics", {}).get("seconds", {}).get("median")), format_spread(c),
                     format_rates(c), f"{s['speedup']:.2f}x" if s else ""])
    return table(["suite", "case", "backend", "precision", "runs", "median time (median of runs)", "range over runs",
                  "rates", "speedup"], rows)


def peer_table(m: Machine) -> str:
    def times(v):
        return f"{v:.2f}x" if v else ""

    rows = [[p["case"], format_seconds(p["mpbench_s"]), format_seconds(p["torch_s"]), times(p["ratio"]),
             times(p["mpbench_speedup"]), times(p["torch_speedup"])] for p in peer_pairs(m)]
    if not rows:
        return f"<p>No case of mpbench's pairs with one of {html.escape(m.peer_label)}'s.</p>"
    return table(["case", "mpbench median time", f"{m.peer_label} median time",
                  "mpbench vs PyTorch (PyTorch's time / mpbench's)", "mpbench speedup over fp32",
                  "PyTorch speedup over fp32"], rows)


def not_ok_table(machines: list[Machine]) -> str:
    rows = [[m.label, case_label(c), c["status"], c.get("message", ""), c.get("source", "")]
            for m in machines for c in m.not_ok()]
    if not rows:
        return "<p>Every case ran.</p>"
    return table(["machine", "case", "status", "message", "document"], rows)


STYLE = """body{font-family:sans-serif;margin:2em;max-width:1200px}
figure{margin:1.5em 0}img{max-width:100%;border:1px solid #ddd}
table{border-collapse:collapse;font-size:0.85em;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px}
th{background:#f2f2f2}figcaption{font-size:0.9em;color:#333}"""


def write_html(out: Path, machines: list[Machine], figures: list[dict], notes: list[str], ignored: list[Path]):
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mpbench report</title>"
             f"<style>{STYLE}</style></head><body><h1>mpbench report</h1>", "<h2>Machines</h2>",
             machines_table(machines), "<h2>Plots</h2>"]
    parts += figures_html(figures, "No case had data to plot.")
    parts += ["<h2>Cases not drawn (status not ok)</h2>", not_ok_table(machines)]
    for m in machines:
        parts += [f"<h2>Cases — {html.escape(m.label)}</h2>", cases_table(m)]
        if m.peer_sources:
            parts += [f"<h2>mpbench against {html.escape(m.peer_label)} — {html.escape(m.label)}</h2>",
                      f"<p>From {html.escape(', '.join(m.peer_sources))}.</p>", peer_table(m)]
    parts += notes_html(notes + [f"ignored (not an mpbench result): {p}" for p in ignored])
    parts.append("</body></html>\n")
    (out / "index.html").write_text("\n".join(parts), encoding="utf-8")


def figures_html(figures: list[dict], none: str) -> list[str]:
    """The figures under a heading per group, or `none` said when there is none."""
    parts = [] if figures else [f"<p>{html.escape(none)}</p>"]
    for i, f in enumerate(figures):
        if i == 0 or figures[i - 1]["group"] != f["group"]:
            parts.append(f"<h3>{html.escape(f['group'])}</h3>")
        name = html.escape(f["name"])
        parts.append(f"<figure id='{name}'><img src='{name}.svg' alt='{html.escape(f['title'])}'>"
                     f"<figcaption>{html.escape(f['caption'])} <a href='{name}.png'>PNG</a> · "
                     f"<a href='{name}.json'>data</a></figcaption></figure>")
    return parts


def notes_html(notes: list[str]) -> list[str]:
    return ["<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"] if notes else []


def write_history_html(out: Path, db: str, figures: list[dict], machines: list[Machine], latest: str,
                       notes: list[str]):
    trends = [f for f in figures if f["name"].startswith("history-")]
    hardware = [f for f in figures if not f["name"].startswith("history-")]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>mpbench history</title>"
             f"<style>{STYLE}</style></head><body><h1>mpbench history: {html.escape(shown_db(db))}</h1>",
             "<h2>Trends per machine</h2>", *figures_html(trends, "No series has two runs or more."),
             f"<h2>Hardware selection: the {html.escape(latest)}</h2>", machines_table(machines),
             *figures_html(hardware, "Fewer than two machines: nothing to set side by side."),
             *notes_html(notes), "</body></html>\n"]
    (out / "index.html").write_text("\n".join(parts), encoding="utf-8")


def machines_of(documents: list[tuple], args, notes: list[str]):
    """The documents grouped by machine, PyTorch's beside mpbench's, with the reference machine and
    the prices the arguments name."""
    machines = group_by_machine([d for d in documents if not is_torch_document(d[1])])
    attach_peers(machines, [d for d in documents if is_torch_document(d[1])], notes)
    reference = find_machine(machines, args.reference_machine) if args.reference_machine else None
    prices = load_prices(args.prices) if args.prices else None
    if prices is not None:
        match_prices(prices, machines, args.prices)
    return machines, reference, prices


def build_report(args) -> Path:
    documents, ignored = load_documents(args.results)
    notes: list[str] = []
    machines, reference, prices = machines_of(documents, args, notes)

    def write(staging: Path) -> list[dict]:
        plots = itertools.chain(*(machine_figures(m, notes) for m in machines),
                                (("Several machines", p) for p in machine_plots(machines, reference, prices, notes)))
        figures = [dict(save(p, staging), group=group) for group, p in with_file_names(plots)]
        write_html(staging, machines, figures, notes, ignored)
        return figures

    figures = write_atomically(args.out, write)
    print(f"report: {args.out / 'index.html'} ({len(figures)} plots, {len(machines)} machines)")
    return args.out / "index.html"


def build_history_report(args) -> Path:
    binary = mpbench_binary(args.mpbench)
    export = export_history(binary, args.history)
    notes: list[str] = []
    machines, reference, prices = machines_of(latest_documents(binary, args.history, args.history_runs), args, notes)
    if len(machines) < 2:
        notes.append(f"{len(machines)} machine in the history: no hardware-selection plots (they need two)")
    latest = f"latest run{'s' if args.history_runs > 1 else ''} of each machine"

    def write(staging: Path) -> list[dict]:
        plots = itertools.chain(history_plots(export, notes),
                                ((f"Several machines ({latest})", p)
                                 for p in machine_plots(machines, reference, prices, notes)))
        figures = [dict(save(p, staging), group=group) for group, p in with_file_names(plots)]
        write_history_html(staging, args.history, figures, machines, latest, notes)
        return figures

    figures = write_atomically(args.out, write)
    trends = sum(1 for f in figures if f["name"].startswith("history-"))
    print(f"report: {args.out / 'index.html'} ({trends} trend plots, {len(figures) - trends} hardware-selection "
          f"plots from the {latest}, {len(machines)} machines)")
    return args.out / "index.html"


def write_atomically(out: Path, write):
    """`write(folder)`'s result, its files written into a staging folder and moved into `out` only
    once all of them are there."""
    with signals_held():  # the handler removes the folder from the moment it exists
        staging = make_staging_folder(out)
        IN_FLIGHT.append(staging)
    try:
        written = write(staging)
        with signals_held():  # the folder holds the old report or the new one, never a mix
            move_into(staging, out)
            shutil.rmtree(staging, ignore_errors=True)
            IN_FLIGHT.remove(staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if staging in IN_FLIGHT:
            IN_FLIGHT.remove(staging)
    return written


# File names stay well under the 255 bytes file systems allow, with room for the suffix.
MAX_FILE_STEM = 120


def with_file_names(plots):
    """The plots drawn, each named for a file of its own: two machine labels or configurations
    may make one slug ("A100 x" and "a100-X"), and a long one would pass the file system's limit."""
    taken: set[str] = set()
    for group, plot in plots:
        if plot is not None:
            plot.name = unique_file_stem(plot.name, taken)
            yield group, plot


def unique_file_stem(name: str, taken: set[str]) -> str:
    """The name cut to MAX_FILE_STEM with a hash of the whole (so cut names stay apart), then
    numbered -2, -3 ... if an earlier plot has it: plots come in a fixed order, so reports stay
    reproducible."""
    if len(name) > MAX_FILE_STEM:
        name = f"{name[:MAX_FILE_STEM - 9]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    stem, number = name, 2
    while stem in taken:
        stem, number = f"{name}-{number}", number + 1
    taken.add(stem)
    return stem


def make_staging_folder(out: Path) -> Path:
    """A temporary folder beside `out`, on its file system, so that its files move by renaming. Its
    name holds this process's id: one left by a report.py that was killed (SIGKILL, a power cut) is
    removed by the next run that writes there."""
    if out.exists() and not out.is_dir():
        raise ReportError(f"cannot write the report into '{out}': it is not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_staging_folders(out)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", dir=out.parent))
    except OSError as e:
        raise ReportError(f"cannot create '{out}': {e.strerror}") from e


def remove_stale_staging_folders(out: Path) -> None:
    pattern = re.compile(re.escape(f".{out.name}.") + r"(\d+)\.[^/]+")
    for candidate in out.parent.iterdir():
        found = pattern.fullmatch(candidate.name)
        if found and candidate.is_dir() and not candidate.is_symlink() and not process_runs(int(found.group(1))):
            shutil.rmtree(candidate, ignore_errors=True)


def process_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # no such process; a number no pid can be
        return False
    except PermissionError:  # another user's process
        return True
    return True


# The staging folder of the report being drawn, for the signal handler to remove.
IN_FLIGHT: list[Path] = []
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def signals_held():
    """Ctrl-C, SIGTERM and SIGHUP wait until the block is done."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def stop_on_signal(signum, _frame):
    """Ctrl-C, SIGTERM, SIGHUP: remove the staging folder and exit 128 + the signal. Done here rather
    than by raising: an exception raised inside a library's import or C code can come out as
    another exception (matplotlib's ImportError) that skips nothing but says the wrong thing."""
    written = "the report was not written, the folder is as it was" if IN_FLIGHT else "the report was written"
    for folder in IN_FLIGHT:
        shutil.rmtree(folder, ignore_errors=True)
    os.write(2, f"report.py: interrupted ({signal.Signals(signum).name}): {written}\n".encode())
    os._exit(128 + signum)


def move_into(staging: Path, out: Path) -> None:
    try:
        out.mkdir(exist_ok=True)
        for file in sorted(staging.iterdir()):
            os.replace(file, out / file.name)
    except OSError as e:
        raise ReportError(f"cannot write the report into '{out}': {e.strerror}") from e


def positive_count(text: str) -> int:
    if not re.fullmatch(r"[0-9]{1,6}", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a count from 1 to 999999")
    return int(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Plots (PNG, SVG) and an HTML page from mpbench results.")
    parser.add_argument("results", nargs="*", type=Path, help="result documents or folders of them")
    parser.add_argument("-o", "--out", type=Path, required=True, help="folder for the plots and index.html")
    parser.add_argument("--reference-machine", help="part of the machine label that throughput is relative to "
                                                    "(default: the first machine)")
    parser.add_argument("--prices", type=Path, help="CSV or JSON of machine,price_per_hour,watts")
    parser.add_argument("--history", help="an mpbench history (a file, or a postgresql:// URL): its trend plots, and "
                        "the hardware-selection plots from each machine's latest runs, instead of RESULTS")
    parser.add_argument("--history-runs", type=positive_count, default=1, metavar="N",
                        help="with --history: the hardware-selection plots read each machine's last N runs "
                             "(default 1; repeated runs of one job are drawn as their median)")
    parser.add_argument("--mpbench", type=Path, help=f"the mpbench that exports --history (default: $MPBENCH_BIN, "
                                                     f"else {DEFAULT_MPBENCH.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    if args.history is None and not args.results:
        parser.error("the following arguments are required: results")
    if args.history is not None and args.results:
        parser.error("--history reads its runs from the history alone: RESULTS do not apply")
    if args.history is None and (args.mpbench is not None or args.history_runs != 1):
        parser.error("--mpbench and --history-runs are for --history: give --history too")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    previous = {signum: signal.signal(signum, stop_on_signal) for signum in STOP_SIGNALS}
    try:
        build_history_report(args) if args.history is not None else build_report(args)
    except ReportError as e:
        print(f"report.py: error: {e}", file=sys.stderr)
        return 2
    finally:  # a caller's own handlers come back (the tests call main in their process)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0


if __name__ == "__main__":
    sys.exit(main())
