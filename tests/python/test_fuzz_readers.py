"""A mutation fuzzer for every file mpbench reads: result documents (explain, compare), a
checkpoint's config.json, batch.json and model.safetensors, and token files. Each run draws a fresh
seed (MPBENCH_FUZZ_SEED replays one) and spends MPBENCH_FUZZ_SECONDS (default 60) mutating valid
files, and always tries the classes that once got through: metrics of a result document that
contradict themselves (min above median, a samples count other than the values', a negative time
or rate), and config.json sizes of unknown configs at and beyond every bound. It fails on a crash
(a signal), a hang (the time limit), an exit status other than 0 or 2 (for compare on a
well-formed pair, also 1 and 3), exit 1 or 3 from compare on a malformed document, inconsistent
metrics accepted, and an error that is not one line naming the file and, for a result document,
the field. Text that is not JSON (NaN or Infinity for a number, bytes after the document, a
character taken out) must be refused naming the line, column and byte, and the field of a NaN."""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("MPBENCH_BIN", ROOT / "build" / "cli" / "mpbench"))
FIXTURES = ROOT / "tests" / "cli" / "fixtures"
BUDGET_S = float(os.environ.get("MPBENCH_FUZZ_SECONDS", "60"))
TIMEOUT_S = 30

pytestmark = pytest.mark.skipif(not BINARY.exists(), reason=f"mpbench is not built at {BINARY}")

# Where a malformed result document's error says the fault is.
FIELD = re.compile(r"the document|cases\[\d+\]|speedups\[\d+\]|not valid JSON|NUL byte at byte \d+|deeper than|"
                   r"no \"schema\" field|"
                   r"has schema|is (a folder|missing|a FIFO|a device)")


def run(args, cwd):
    try:
        done = subprocess.run([str(BINARY), *args], capture_output=True, text=True, errors="replace",
                              timeout=TIMEOUT_S, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None
    return done


# Nesting too deep for Python's own json module: put into the text after json.dumps.
DEEP = "__mpbench_fuzz_deep__"
DEEP_TEXT = "[" * 5000 + "]" * 5000


def values_like(rng):
    """A replacement for a JSON value: another type, an edge number, a hostile string, deep nesting."""
    choices = [None, True, 0, -1, 2 ** 63, -2 ** 63, 1e308, -1e-308, 0.5, "", "x", "\x1b[2J\n", [], {},
               [1, "a"], {"k": []}, "nan", "Infinity", 2 ** 31, -2 ** 31 - 1]
    return DEEP if rng.random() < 0.05 else rng.choice(choices)


def paths_of(node, path=()):
    yield path
    if isinstance(node, dict):
        for key, child in node.items():
            yield from paths_of(child, path + (key,))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from paths_of(child, path + (index,))


def mutate_json(document, rng):
    doc = json.loads(json.dumps(document))
    paths = [p for p in paths_of(doc) if p]
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        last = path[-1]
        action = rng.random()
        try:
            if action < 0.6:
                parent[last] = values_like(rng)
            elif action < 0.8:
                del parent[last]
            elif isinstance(parent, list):
                parent.append(json.loads(json.dumps(parent[last])))  # a duplicate
            else:
                parent[last + "_extra" if isinstance(last, str) else last] = values_like(rng)
        except (KeyError, IndexError, TypeError):
            pass
        paths = [p for p in paths_of(doc) if p and DEEP not in p] or [()]
    return json.dumps(doc).replace(json.dumps(DEEP), DEEP_TEXT)


def mutate_bytes(data, rng):
    data = bytearray(data)
    action = rng.random()
    if action < 0.3 and data:
        del data[rng.randrange(len(data)):]  # truncated
    elif action < 0.6 and data:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif action < 0.8:
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    else:
        data += bytes(data)  # two documents in one file
    return bytes(data)


# Ways a summary of times can contradict itself or its samples, and a rate go negative: each must
# be refused (exit 2, naming the field) by every reader, never drawn into a verdict.
def break_metrics(document, rng):
    doc = json.loads(json.dumps(document))
    case = rng.choice([c for c in doc["cases"] if c["status"] == "ok"])
    stats = case["metrics"]["seconds"]
    factor = rng.uniform(1.01, 100)
    breaks = [
        ("max", lambda: stats.update(min=stats["max"] * factor)),  # a min above the max: named at max
        ("median", lambda: stats.update(median=stats["max"] * factor)),
        ("median", lambda: stats.update(median=stats["min"] / factor)),
        ("mean", lambda: stats.update(mean=stats["max"] * factor)),
        ("max", lambda: stats.update(max=stats["min"] / factor)),
        ("samples", lambda: stats.update(samples=len(stats["values"]) + rng.randint(1, 50))),
        ("samples", lambda: stats.update(samples=0)),
        ("values", lambda: stats["values"].__setitem__(rng.randrange(len(stats["values"])), stats["max"] * factor)),
        ("stddev", lambda: stats.update(stddev=-stats["stddev"] - 1e-9)),
        ("min", lambda: stats.update(min=-stats["min"])),
        ("rates", lambda: case["rates"].update({rng.choice(list(case["rates"]) or ["tflops"]): -factor})),
    ]
    field, apply = rng.choice(breaks)
    apply()
    return json.dumps(doc), field


# A JSON error's place: line, column and byte, in mpbench's words (never the library's text).
SYNTAX_POSITION = re.compile(r"is not valid JSON at line \d+, column \d+ \(byte \d+\)")


def strictly_json(text):
    """Whether text is one JSON value as the standard has it (Python's json takes NaN and Infinity)."""
    def no_constants(name):
        raise ValueError(name)
    try:
        json.loads(text, parse_constant=no_constants)
    except ValueError:
        return False
    return True


def break_syntax(document, rng):
    """The document's text made not JSON: NaN or Infinity for one of its numbers (which must be
    named with its field), bytes after it, or one structural character taken out."""
    text = json.dumps(document, indent=rng.choice([None, 1]))
    kind = rng.choice(["NaN", "Infinity", "-Infinity", "trailing", "cut"])
    if kind in ("NaN", "Infinity", "-Infinity"):
        number = rng.choice(list(re.finditer(r'(?<=": )-?\d+(\.\d+)?([eE][-+]?\d+)?', text)))
        return text[:number.start()] + kind + text[number.end():], True
    if kind == "trailing":
        return text + rng.choice(["x", "{}", "\n" + text, " 1", ",", "\x01"]), False
    structural = [i for i, ch in enumerate(text) if ch in ',:[]{}"']
    at = rng.choice(structural)
    return text[:at] + text[at + 1:], False


# Sizes for a config.json of a config mpbench does not know: at and beyond every bound, up to 2^64.
HUGE = [2 ** 16, 2 ** 20 + 1, 2 ** 24, 2 ** 24 + 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 40, 2 ** 53 + 1, 2 ** 63 - 1,
        2 ** 64 - 1, -1, -2 ** 63, 0, 1.5, 1e300]


def huge_config(original, rng):
    config = json.loads(original)
    name = rng.choice([None, "", "custom", "gpt2-xxl", "tiny2", "\x1b[31mred", "x" * 300])
    if name is None:
        config.pop("mpbench", None)
    else:
        config.setdefault("mpbench", {})["config"] = name
    for field in rng.sample(["vocab_size", "n_positions", "n_embd", "n_layer", "n_head"], rng.randint(1, 5)):
        config[field] = rng.choice(HUGE)
    if rng.random() < 0.3:
        config.setdefault("mpbench", {})["vocab_pad"] = rng.choice(HUGE)
    return json.dumps(config).encode()


class Findings:
    def __init__(self, seed, keep):
        self.seed, self.keep, self.problems, self.tried = seed, keep, [], 0

    def check(self, what, mutated, done, allowed, file_named, field_named=False):
        self.tried += 1
        problem = None
        if done is None:
            problem = f"hung for {TIMEOUT_S} s"
        elif done.returncode < 0:
            problem = f"killed by signal {-done.returncode}"
        elif done.returncode not in allowed:
            problem = f"exit {done.returncode}: {done.stderr[-400:]}"
        elif done.returncode == 2:
            lines = done.stderr.strip().splitlines()
            if len(lines) != 1 or not lines[0].startswith("mpbench: error: "):
                problem = f"not one error line: {done.stderr[-400:]}"
            elif not lines[0].isprintable() or not lines[0].isascii():
                problem = f"the error quotes unprintable bytes: {lines[0]!r}"
            elif file_named not in lines[0]:
                problem = f"the error does not name {file_named}: {lines[0]}"
            elif field_named and not FIELD.search(lines[0]):
                problem = f"the error names no field: {lines[0]}"
        if problem:
            kept = self.keep / f"{len(self.problems)}-{Path(what).name}"
            kept.write_bytes(mutated)
            self.problems.append(f"{what}: {problem} (input kept in {kept})")

    def report(self):
        assert not self.problems, f"seed {self.seed}, {self.tried} inputs:\n" + "\n".join(self.problems[:20])


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz-checkpoint")
    done = run(["run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "2",
                "--precision", "fp32", "--checkpoint-out", str(folder / "ckpt"), "--out", str(folder / "r.json")],
               folder)
    assert done is not None and done.returncode == 0, done.stderr if done else "hung"
    return folder / "ckpt" / "fp32"


def seed_and_rng():
    seed = int(os.environ.get("MPBENCH_FUZZ_SEED", random.SystemRandom().randrange(2 ** 32)))
    print(f"fuzz seed {seed} (MPBENCH_FUZZ_SEED={seed} replays it)")
    return seed, random.Random(seed)


def test_readers_survive_mutated_files(tmp_path, checkpoint):
    seed, rng = seed_and_rng()
    keep = tmp_path / "kept"
    keep.mkdir()
    findings = Findings(seed, keep)
    base = FIXTURES / "gemm_base.json"
    documents = [json.loads(p.read_text()) for p in (base, FIXTURES / "bandwidth_base.json")]
    tokens = struct.pack("<64H", *[rng.randrange(60) for _ in range(64)])
    deadline = time.monotonic() + BUDGET_S
    round_ = 0
    while time.monotonic() < deadline:
        round_ += 1
        # A result document, for explain and compare.
        mutated = (mutate_json(rng.choice(documents), rng) if rng.random() < 0.7
                   else mutate_bytes(json.dumps(rng.choice(documents)).encode(), rng).decode("latin-1"))
        doc = tmp_path / "doc.json"
        doc.write_text(mutated, encoding="latin-1")
        explained = run(["explain", str(doc)], tmp_path)
        # Malformed: refused when read. (A well-formed document without a case in the baseline
        # precision is refused by explain too, and compare may still read it.)
        malformed = (explained is not None and explained.returncode == 2 and str(doc) in explained.stderr and
                     "baseline precision" not in explained.stderr)
        findings.check("explain doc.json", doc.read_bytes(), explained, {0, 2}, str(doc), field_named=malformed)
        compared = run(["compare", str(base), str(doc)], tmp_path)
        findings.check("compare gemm_base.json doc.json", doc.read_bytes(), compared, {2} if malformed else {0, 1, 2, 3},
                       str(doc), field_named=malformed)
        # A well-formed document whose metrics contradict themselves: refused, naming the field.
        broken, field = break_metrics(rng.choice(documents), rng)
        doc.write_text(broken)
        for command in (["explain", str(doc)], ["compare", str(base), str(doc)]):
            done = run(command, tmp_path)
            findings.check(f"{command[0]} with inconsistent {field}", doc.read_bytes(), done, {2}, str(doc),
                           field_named=True)
            if done is not None and done.returncode == 2 and f".{field}" not in done.stderr:
                findings.problems.append(f"{command[0]}: inconsistent {field} named otherwise: {done.stderr.strip()}")
        # Not JSON at all: refused, naming the position (and, for a NaN or Infinity, the field).
        text, names_field = break_syntax(rng.choice(documents), rng)
        if not strictly_json(text):
            doc.write_text(text, encoding="latin-1")
            for command in (["explain", str(doc)], ["compare", str(base), str(doc)]):
                done = run(command, tmp_path)
                findings.check(f"{command[0]} of text that is not JSON", doc.read_bytes(), done, {2}, str(doc))
                if done is None or done.returncode != 2:
                    continue
                if not SYNTAX_POSITION.search(done.stderr) or "json.exception" in done.stderr:
                    findings.problems.append(f"{command[0]}: no position in mpbench's words: {done.stderr.strip()}")
                elif names_field and ", in field " not in done.stderr:
                    findings.problems.append(f"{command[0]}: a NaN or Infinity without its field: {done.stderr.strip()}")
        # A checkpoint's files and a token file, every few rounds (each is a short training run).
        if round_ % 4 == 0:
            target = rng.choice(["config.json", "config.json (huge)", "batch.json", "model.safetensors"])
            trial = tmp_path / f"ckpt-{round_}"
            shutil.copytree(checkpoint, trial)
            huge = target.endswith("(huge)")
            target = target.split()[0]
            original = (trial / target).read_bytes()
            if huge:
                changed = huge_config(original, rng)
            elif target.endswith(".json") and rng.random() < 0.7:
                changed = mutate_json(json.loads(original), rng).encode()
            elif target == "model.safetensors" and rng.random() < 0.7:
                length = struct.unpack("<Q", original[:8])[0]
                header = mutate_json(json.loads(original[8:8 + length]), rng).encode()
                changed = struct.pack("<Q", len(header)) + header + original[8 + length:]
            else:
                changed = mutate_bytes(original, rng)
            (trial / target).write_bytes(changed)
            done = run(["run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "2",
                        "--precision", "fp32", "--checkpoint-in", str(trial), "--out", str(tmp_path / "r.json")],
                       tmp_path)
            findings.check(f"checkpoint {target}", changed, done, {0, 2}, str(trial))
            shutil.rmtree(trial)
            data = tmp_path / "tokens.bin"
            data.write_bytes(mutate_bytes(tokens, rng))
            done = run(["run", "--suite", "transformer", "--device", "cpu", "--config", "tiny", "--steps", "2",
                        "--precision", "fp32", "--data", str(data), "--out", str(tmp_path / "r.json")], tmp_path)
            findings.check("token file", data.read_bytes(), done, {0, 2}, str(data))
    print(f"fuzzed {findings.tried} inputs in {BUDGET_S:.0f} s")
    findings.report()
