"""Every code block the docs show runs, or says why it cannot run here.

``tests/test_docs.py`` runs each ```python block; ``tests/test_proxy.py`` runs proxy.md's
client snippets against a proxy over a stub model (``RUN_ELSEWHERE``). This file runs each other
```bash and ```console block of README.md and docs/*.md in a real shell: ``orcamem`` is the CLI
under test, the home (``ORCA_HOME``) and working directory are temporary, servers the docs start
listen on a free loopback port (``:8080`` in a block becomes that port), and an upstream
embedder is a loopback fake. A line that cannot run here is listed in ``NOT_RUNNABLE`` with the
reason. The enumeration fails for a block that none of these runs, and for a listed line the docs
no longer show. A line ending in ``# exit N`` must exit N; every other line must succeed, and no
command may print a bare ``null`` (a jq filter naming a field the answer lacks).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from servers import ORCAMEM_SOURCE, free_port, serve

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SHELL = ("bash", "console")
RUN_HERE = (
    "README.md", "api.md", "capability.md", "cli.md", "configuration.md", "local-memory.md",
    "mcp.md", "memory-bank.md",
)  # fmt: skip
RUN_ELSEWHERE = {
    "from openai import OpenAI": "test_proxy.py::test_the_docs_openai_snippets_run",
    "from langchain_openai import ChatOpenAI": "test_proxy.py::test_the_docs_langchain_snippet_runs",
    "curl http://localhost:8080/v1/chat/completions": "test_proxy.py::test_the_docs_curl_snippet_runs",
    "import anthropic": "test_proxy_dialects.py::test_the_docs_responses_and_anthropic_snippets_run",
    "from agents import Agent": "test_integrations_agents.py::"
    "test_the_docs_runner_snippet_runs_against_a_chat_completions_server",
    # the file clients/typescript's own tests run (npm test, in .ci/run)
    'import { OrcamemClient } from "@orcamem/client";': "test_integrations_typescript.py::"
    "test_the_docs_example_is_the_file_the_client_tests_run",
    "$ orcamem hooks install": "test_hooks_docs.py::test_the_hooks_docs_blocks_run",
    '$ echo \'{"session_id"': "test_hooks_docs.py::test_the_hooks_docs_blocks_run",
}
"""A block that starts so is run by that test (proxy.md's clients, against a stubbed model)."""
NOT_CODE = {"", "text", "json", "toml", "markdown"}  # outputs, formats and file contents

NOT_RUNNABLE = {
    "scripts/up": "sets up the project's own environment (the machine's venv is shared)",
    "scripts/test": "runs the whole suite, this test among it",
    "orcamem bench latency --records 2000 10000 100000": "a benchmark over 100,000 records "
    "(minutes); test_cli.py::test_bench_latency_json runs it small, README.md quotes its numbers",
    "orcamem bench locomo --data ../shared/data/locomo/locomo-dev.json": "needs the LoCoMo data "
    "outside the repository; test_bench.py::test_locomo_reports_overall_and_by_category runs "
    "the benchmark on a small file",
    "orcamem bench context --data ../shared/data/locomo/locomo-dev.json --proxy-loop 50": "needs "
    "the LoCoMo data outside the repository (minutes); test_bench.py::test_context_bench_report "
    "runs it on a small file",
    "orcamem bench mcp --records 10000 --calls 200": "a benchmark (minutes); "
    "test_mcp.py::test_recall_latency_bench_reports_stdio_percentiles runs it small",
    "orcamem bench proxy --records 10000 --requests 200": "a benchmark (minutes); "
    "test_proxy.py::test_proxy_latency_bench_reports_its_numbers runs it small",
    "orcamem up --host 0.0.0.0 --require-keys --allowed-host memory.lan": "binds every "
    "interface and opens a browser; test_up.py runs `up` on loopback",
    "orcamem mcp --http --host 0.0.0.0 --port 8080 --require-keys": "binds every interface on a "
    "fixed port; test_mcp.py serves the same app over HTTP",
    "orcamem mcp --http --port 8080": "a server on a fixed port; test_mcp_bank.py serves it",
    "orcamem proxy --model llama3.2:3b": "a server on a fixed port in front of a local Ollama; "
    "test_proxy.py runs the app and proxy.md's clients against a stub model",
    'orcamem proxy --upstream http://127.0.0.1:9931 --model "Qwen/Qwen2.5-3B-Instruct-GGUF:Q4_K_M"': "a server on a fixed port in front of llama-server; test_proxy.py runs the app",
    'orcamem up --upstream http://127.0.0.1:9931 --model "Qwen/Qwen2.5-3B-Instruct-GGUF:Q4_K_M"': "needs llama-server and a browser; test_up.py runs `up` against a fake upstream",
    "claude mcp add orcamem -- orcamem mcp": "needs Claude Code",
    "claude mcp add orcamem -- orcamem mcp --profile researcher": "needs Claude Code",
    'claude mcp add --transport http orcamem http://127.0.0.1:8080/mcp --header "Authorization: '
    'Bearer $ORCAMEM_KEY"': "needs Claude Code",
    'claude mcp add --transport http orcamem "http://127.0.0.1:8080/mcp?profile=researcher" '
    '--header "Authorization: Bearer $ORCAMEM_KEY"': "needs Claude Code",
    "orcamem memory forget cand-1a2b3c4d5e6f7a8b --revision 7": "an example id and revision; "
    "test_local_memory_cli.py forgets real ones",
    "orcamem memory forget --all --revision 8": "an example revision; "
    "test_local_memory_cli.py forgets at the real one",
    "orcamem serve": "a server: run here on a free port for api.md's curl blocks",
    "pip install 'orcamem[pg]'": "installs into the shared environment; scripts/test installs "
    "the pg extra",
    'psql "postgresql://postgres@db.internal:5432/orcamem" -c \'CREATE EXTENSION IF NOT EXISTS '
    "vector'": "an example database server; tests/pg_server.py creates the extension in a real one",
    "export ORCAMEM_DB='postgresql://orca:secret@db.internal:5432/orcamem'": "an example "
    "database server; test_postgres_store.py opens real PostgreSQL URLs by --db and Memory()",
    "orcamem serve --host 0.0.0.0 --port 8080 --require-keys": "a replica on an example "
    "database; test_postgres_replicas.py runs two `orcamem serve` on a real one",
    "orcamem serve --host 0.0.0.0 --port 8081 --require-keys": "the second replica; "
    "test_postgres_replicas.py runs two `orcamem serve` on a real PostgreSQL",
    "orcamem keys create --admin --name replicas": "on the example database above; "
    "test_postgres_replicas.py makes keys in a real one that both replicas honour",
    'export ORCAMEM_DB="$(python scripts/pg_bench_server.py start)"': "starts a PostgreSQL "
    "server that outlives the block; tests/pg_server.py (the same server) runs the suite's",
    'orcamem serve --db "$ORCAMEM_DB" --port 8080': "a server on the bench database; "
    "test_postgres_replicas.py runs `orcamem serve` on a real PostgreSQL",
    'orcamem serve --db "$ORCAMEM_DB" --port 8080 --workers 2': "workers on the bench "
    "database; test_serve_workers.py runs two workers on one database",
    'orcamem serve --db "$ORCAMEM_DB" --port 8081': "the second replica; "
    "test_postgres_replicas.py runs two `orcamem serve` on a real PostgreSQL",
    'orcamem bench load --db "$ORCAMEM_DB" --replicas 1 --clients 1 8 32 --seconds 10': "a "
    "benchmark (minutes); test_up.py runs bench load on a real PostgreSQL",
    'orcamem bench load --db "$ORCAMEM_DB" --replicas 2 --clients 1 8 32 --seconds 10': "a "
    "benchmark (minutes); test_up.py runs two replicas on a real PostgreSQL",
    'orcamem bench load --db "$ORCAMEM_DB" --workers 2 --clients 1 8 32 --seconds 10': "a "
    "benchmark (minutes); test_serve_workers.py runs two workers on one database",
    "python scripts/pg_bench_server.py stop": "stops the server the block started",
    "orcamem serve --host 0.0.0.0 --require-keys": "binds every interface: run here on loopback "
    "with --require-keys for the key block",
}
SETUP = {"docs/handbook.md": "# Handbook\n\nWe deploy with Helm on Fridays.\n"}
"""Files an example reads that a reader already has (``orcamem add docs/handbook.md``)."""
PLACEHOLDERS = {
    "mem-1a2b3c4d": "$(orcamem facts --json | jq -r '.[0].id')",
    "http://127.0.0.1:11434/v1": "{upstream}/v1",  # an Ollama: the fake answers /embeddings
}
"""Example values a reader replaces with their own; here, with real ones."""


def blocks(path: Path) -> list[tuple[str, str]]:
    return [(lang, body) for lang, body in FENCE.findall(path.read_text(encoding="utf-8"))]


def lines(body: str) -> list[str]:
    """The block's lines: continuations joined, ``$`` prompts dropped, blanks left out."""
    joined = re.sub(r"\\\n\s*", "", body)
    stripped = [line.removeprefix("$ ").strip() for line in joined.splitlines()]
    return [line for line in stripped if line]


def bare(line: str) -> str:
    return re.sub(r"\s{2,}#.*$", "", line).strip()


def shell_blocks(doc: str) -> list[str]:
    path = next(p for p in DOCS if p.name == doc)
    return [body for lang, body in blocks(path) if lang in ("bash", "console")]


# -- the enumeration -------------------------------------------------------------------------


def test_every_code_block_runs_or_says_why_not() -> None:
    unrun, shown = [], set()
    for path in DOCS:
        for lang, body in blocks(path):
            if lang in NOT_CODE or lang == "python":  # python: test_docs.py runs every one
                continue
            commands = [bare(line) for line in lines(body) if not line.startswith("#")]
            shown.update(commands)
            if any(body.startswith(start) for start in RUN_ELSEWHERE):
                continue
            if lang in SHELL and (path.name in RUN_HERE or set(commands) <= set(NOT_RUNNABLE)):
                continue
            unrun.append(f"{path.name}: ```{lang} {body.splitlines()[0]!r}")
    assert not unrun, f"run these blocks, or list their lines in NOT_RUNNABLE: {unrun}"
    assert set(NOT_RUNNABLE) <= shown, f"no doc shows: {set(NOT_RUNNABLE) - shown}"
    assert all(len(reason) > 10 for reason in NOT_RUNNABLE.values())
    for test in RUN_ELSEWHERE.values():
        module, name = test.split("::")
        assert f"def {name}(" in (ROOT / "tests" / module).read_text(encoding="utf-8"), test


# -- running them ----------------------------------------------------------------------------


async def _embeddings(request: Request) -> JSONResponse:
    texts = (await request.json())["input"]
    data = [
        {"index": i, "embedding": [float(len(t) % 7 + 1), 1.0, float(i + 1), 0.5]}
        for i, t in enumerate(texts)
    ]
    return JSONResponse({"object": "list", "data": data, "model": "fake"})


FAKE = Starlette(
    routes=[
        Route("/v1/embeddings", _embeddings, methods=["POST"]),
    ]
)
"""An OpenAI-compatible embeddings server on loopback (``orcamem reembed --embedder openai:…``)."""


@dataclass(frozen=True)
class Shell:
    """Where a block runs: a temporary working directory, ``orcamem`` on PATH."""

    cwd: Path
    env: dict[str, str]

    def but(self, **extra: str) -> Shell:
        return Shell(self.cwd, {**self.env, **extra})


@pytest.fixture
def shell(tmp_path: Path) -> Shell:
    """``orcamem`` on PATH is this checkout's CLI; ORCA_HOME is conftest's temporary one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "orcamem"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m orcamem "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    work = tmp_path / "work"
    for name, text in SETUP.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text, encoding="utf-8")
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    return Shell(work, {**os.environ, "PATH": path, "PYTHONPATH": ORCAMEM_SOURCE})


def run_block(body: str, shell: Shell, **values: str) -> str:
    """Run the block's runnable lines in one bash; return what it printed."""
    script = ["set -o pipefail"]
    for line in lines(body):
        if line.startswith("#") or bare(line) in NOT_RUNNABLE:
            continue
        for example, real in PLACEHOLDERS.items():
            if example in line:
                line = line.replace(example, real.format(**values))
        if "port" in values:
            line = re.sub(r"(127\.0\.0\.1|localhost):8080", f"127.0.0.1:{values['port']}", line)
        wanted = re.search(r"#\s*exit (\d+)", line)
        code = wanted.group(1) if wanted else "0"
        command = bare(line)
        script.append(
            f"{command}\nrc=$?; if [ $rc -ne {code} ]; then "
            f"echo 'exit '$rc', wanted {code}: '{_quote(command)} >&2; exit 97; fi"
        )
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)], cwd=shell.cwd, env=shell.env,
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stderr}\n--- stdout:\n{done.stdout}"
    assert "null" not in done.stdout.splitlines(), done.stdout
    return done.stdout


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def _server(shell: Shell, *args: str) -> tuple[int, subprocess.Popen[bytes]]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "orcamem", *args, "--port", str(port)],
        cwd=shell.cwd, env=shell.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    _listening(port, process)
    return port, process


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(20)


@pytest.mark.parametrize("doc", [doc for doc in RUN_HERE if doc != "api.md"])
def test_a_docs_cli_blocks_run(doc: str, shell: Shell) -> None:
    with serve(FAKE) as upstream:
        for body in shell_blocks(doc):
            run_block(body, shell, upstream=upstream)


def test_the_rest_api_blocks_run_against_orcamem_serve(shell: Shell) -> None:
    """In order, as a reader would: the loopback blocks against ``orcamem serve``, the key
    block against ``orcamem serve --require-keys`` with the admin key ``keys create`` printed."""
    open_port, open_server = _server(shell, "serve")
    keyed_port, keyed_server, admin = None, None, ""
    try:
        for body in shell_blocks("api.md"):
            if body.startswith("$ orcamem keys create --admin"):
                admin = run_block(body, shell).split()[0]  # the secret comes first
                keyed_port, keyed_server = _server(shell, "serve", "--require-keys")
            elif "$ADMIN_KEY" in body:
                assert keyed_port, "the key block comes after `orcamem keys create --admin`"
                run_block(body, shell.but(ADMIN_KEY=admin), port=str(keyed_port))
            else:
                run_block(body, shell, port=str(open_port))
        assert admin.startswith("om_")
    finally:
        for server in (open_server, keyed_server):
            if server is not None:
                _stop(server)
