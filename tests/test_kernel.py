"""The kernel's shared helpers, each the one place its concept lives: NOTHING and schema checks
(``_kernel.llm``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orcamem import InvalidInputError
from orcamem._kernel import llm
from orcamem._kernel.jobs import queue
from orcamem._kernel.llm import NOTHING, is_nothing, schema_errors

# -- NOTHING ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["NOTHING", " nothing\n", '"NOTHING"', "`Nothing`", "“nothing”"])
def test_nothing_in_any_case_and_quoting_is_nothing(value: str) -> None:
    assert is_nothing(value)


@pytest.mark.parametrize("value", ["NOTHING.", "nothing to report", "", None, [], {}, 0])
def test_anything_else_is_not_nothing(value: object) -> None:
    assert not is_nothing(value)


def test_the_job_queue_publishes_the_models_nothing() -> None:
    assert queue.NOTHING is NOTHING


def test_the_package_names_load_on_use_and_nothing_loads_light() -> None:
    code = (
        "import sys, orcamem._kernel.jobs.queue; "
        "print(sorted(m for m in ('httpx', 'jsonschema') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    for name in llm.__all__:
        assert getattr(llm, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'Missing'"):
        _ = llm.Missing  # type: ignore[attr-defined]


# -- schema checks --------------------------------------------------------------------------------


def test_schema_errors_cut_a_long_value_short() -> None:
    [line] = schema_errors(
        {"tags": ["x" * 500]}, {"properties": {"tags": {"items": {"type": "integer"}}}}
    )
    assert line.startswith("$.tags[0]: 'xxx") and line.endswith("… is not of type 'integer'")
    assert len(line) < 120


def test_schema_errors_follow_references() -> None:
    schema = {
        "$defs": {"name": {"type": "string", "minLength": 2}},
        "type": "object",
        "properties": {"who": {"$ref": "#/$defs/name"}},
    }
    assert schema_errors({"who": "A"}, schema) == ["$.who: 1 characters, at least 2 allowed"]
    assert schema_errors({"who": "Ann"}, schema) == []


def test_a_broken_schema_is_the_callers_error() -> None:
    with pytest.raises(InvalidInputError, match=r"not a valid JSON Schema \(\$\.type: "):
        schema_errors("x", {"type": "text"})
