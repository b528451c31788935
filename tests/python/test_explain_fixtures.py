"""explain's thread fixtures (tests/profiler/fixtures/threads/) are result documents as mpbench
writes them: each validates against the schema, is small, and names the public thread it is built
from."""
import json
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "results" / "schema" / "result-1.schema.json").read_text())
FIXTURES = sorted((ROOT / "tests" / "profiler" / "fixtures" / "threads").glob("*.json"))


def test_there_are_at_least_fifteen_and_two_noisy():
    assert len([f for f in FIXTURES if not f.name.startswith("noisy_")]) >= 15
    assert len([f for f in FIXTURES if f.name.startswith("noisy_")]) >= 2


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_fixture_validates_is_small_and_names_its_thread(path):
    document = json.loads(path.read_text())
    jsonschema.validate(document, SCHEMA)
    assert path.stat().st_size < 8192
    thread = document["run"]["thread"]
    assert thread["url"] and thread["says"]
    assert len(document["cases"]) >= 2
