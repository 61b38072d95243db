"""One table of name rules (``_kernel/names.py``): the validators and the HTTP/MCP schemas agree."""

from __future__ import annotations

import re

import pytest

from orcamem import InvalidInputError, InvalidSpaceError, Memory
from orcamem._kernel.model import validate_space
from orcamem._kernel.names import RULES, SPACE
from orcamem.bank import validate_profile
from orcamem.engine.automations import validate_automation_id
from orcamem.interfaces.http import create_app
from orcamem.interfaces.http.api import install

GOOD = {
    "space": ["user_alice", "project:ab12", "a@b.c-d", "x" * 128],
    "profile": ["researcher", "a.b-c_d", "x" * 64],
    "automation_id": ["auto-7f3a", "nightly:digest@host"],
    "memory_id": ["mem-0123abcd"],
    "key_id": ["key-0123abcd"],
    "meta_key": ["source", "app.version", "x" * 64],
    "object_key": ["memory/researcher/mem-0123abcd.json", "a/b@c:d"],
}
BAD = {
    "space": ["", ".", "..", "a/b", "a b", "x" * 129, "tab\there", None, 12],
    "profile": ["", ".", "..", "a:b", "x" * 65, "é"],
    "automation_id": ["", "..", "a/b", "x" * 129],
    "memory_id": ["mem-0123ABCD", "mem-123", "key-0123abcd"],
    "key_id": ["key-xyz", "mem-0123abcd"],
    "meta_key": ["", "a b", "$.x", 'a"b', "x" * 65, None],
    "object_key": ["/abs", "a//b", "a/../b", "a/./b", "trailing/", "x" * 1025, "a b"],
}


@pytest.mark.parametrize("kind", sorted(RULES))
def test_each_rule_accepts_its_names_and_refuses_the_rest_with_the_rule_in_words(kind: str) -> None:
    rule = RULES[kind]
    for name in GOOD[kind]:
        assert rule.validate(name) == name
        assert re.fullmatch(rule.pattern, name)
    for name in BAD[kind]:
        assert not rule.ok(name)
        with pytest.raises(InvalidInputError, match=re.escape(rule.rule)):
            rule.validate(name)


def test_the_validators_of_each_system_are_the_table() -> None:
    with pytest.raises(InvalidSpaceError, match=r"invalid space name '\.\.'"):
        validate_space("..")
    with pytest.raises(InvalidInputError, match="1-64 characters"):
        validate_profile("a:b")
    with pytest.raises(InvalidInputError, match="invalid automation id"):
        validate_automation_id("a/b")


def test_the_http_schema_patterns_are_the_table(tmp_path) -> None:
    with Memory(tmp_path / "m.db") as memory:
        app = create_app(memory)
        install(app)
        schema = app.openapi()
    patterns = {
        param["name"]: param["schema"].get("pattern")
        for path in schema["paths"].values()
        for operation in path.values()
        for param in operation.get("parameters", [])
        if param.get("in") == "path"
    }
    assert patterns["space"] == SPACE.pattern
    assert patterns["name"] == RULES["profile"].pattern  # /api/bank/profiles/{name}
    assert patterns["memory_id"] == RULES["memory_id"].pattern
    assert patterns["key_id"] == RULES["key_id"].pattern
    assert patterns["automation_id"] == RULES["automation_id"].pattern
