"""The TypeScript client's layout and its docs example (its own tests, ``npm test`` in
``clients/typescript``, run against a real ``orcamem serve`` from ``.ci/run``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients" / "typescript"


def test_the_docs_example_is_the_file_the_client_tests_run() -> None:
    docs = (ROOT / "docs" / "integrations.md").read_text(encoding="utf-8")
    [block] = re.findall(r"```ts\n(.*?)```", docs, re.S)
    assert block == (CLIENT / "examples" / "quickstart.ts").read_text(encoding="utf-8")


def test_the_client_is_typed_by_the_servers_openapi_document() -> None:
    document = json.loads((CLIENT / "openapi.json").read_text(encoding="utf-8"))
    schema = (CLIENT / "src" / "schema.ts").read_text(encoding="utf-8")
    for path in ("/api/episodes", "/api/search", "/api/context", "/api/memories"):
        assert path in document["paths"] and f'"{path}"' in schema
    package = json.loads((CLIENT / "package.json").read_text(encoding="utf-8"))
    assert "dependencies" not in package  # built-in fetch: nothing to install at run time
    assert (CLIENT / "package-lock.json").exists()  # `npm ci` in .ci/run
    assert "clients/typescript" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_committed_openapi_document_is_the_one_the_server_publishes() -> None:
    # a route added or changed on the server must reach the client's types in the same commit;
    # .ci/run then regenerates src/schema.ts from this file and fails if it differs
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "openapi.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
