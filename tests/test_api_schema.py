"""The published OpenAPI is the contract: schemathesis generates requests from it (valid and
invalid) against the in-process app and checks that no response is a 5xx, every response
conforms to the schema (status, content type, headers, body), invalid input is rejected, and
every 4xx carries the JSON error body that says what was wrong.

Bounded for CI: a fixed number of examples per operation, derandomized (same requests every
run), no deadline.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from orcamem import Config, Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.bank.bank import MemoryBank
from orcamem.engine import PackConfig
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http.api import install
from orcamem.local import JsonlTranscript, LocalMemory

EXAMPLES = 25

# 413 (body over the limit) is a correct rejection of schema-violating data too. Positive data
# is not required to be accepted: the schema cannot say everything the SDK refuses with a 400
# (blank text, control characters, times that are not ISO-8601).
REJECTED = [
    "400",
    "401",
    "403",
    "404",
    "405",
    "406",
    "409",
    "413",
    "415",
    "422",
    "428",
    "429",
    "5xx",
]
CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {"enabled": False},
            "negative_data_rejection": {"expected-statuses": REJECTED},
        }
    }
)

# the import body is the JSON lines of an export: send generated strings as they are
schemathesis.serializer.alias("application/x-ndjson", "text/plain")


def _app():
    memory = Memory(
        ":memory:",
        clock=FrozenClock("2026-11-01T10:00:00Z"),
        config=Config(pack=PackConfig(log_blocks=True)),  # GET /api/blocks has entries
    )
    memory.add("I live in Pune and I work as a backend engineer.")
    memory.remember("The user prefers tea over coffee.", category="preference")
    memory.forbid("Never schedule meetings on Fridays.")
    memory.context([{"role": "user", "content": "Where do I live?"}])  # one logged block
    # a real folder: the settings routes write its config.json (PUT/DELETE /api/capability/…)
    workspace = tempfile.mkdtemp(prefix="orcamem-schema-workspace-")
    local = _local_memory(Path(workspace))
    # schemathesis' ASGI client sends `Host: testserver`: allowed here, by name, as a deployer
    # would allow a reverse proxy's name (`--allowed-host`)
    settings = ServerSettings(
        max_body_bytes=256 * 1024,
        workspace=workspace,
        allowed_hosts=("testserver",),
        local_memory_dir=str(local),
    )
    app = create_app(memory, settings)
    install(app)
    app.state.test_memory = memory
    # the Memory Bank's routes answer 503 without a bank: wire one (issue 5)
    app.state.bank = MemoryBank(
        profiles={"researcher": ["@memory"]}, clock=FrozenClock("2026-11-01T10:00:00Z")
    )
    app.state.bank.save("researcher", content="The user is allergic to peanuts.", category="fact")
    return app


def _local_memory(workspace: Path) -> Path:
    """A local-memory root with one project: explicit facts and a ledger from a real job run
    (``/api/local``); kept under the workspace folder, removed with it."""
    root, project = workspace / "local-memory", workspace / "project"
    project.mkdir()
    transcript = JsonlTranscript(workspace / "transcript.jsonl")
    transcript.message("s1", "t1", "user", "I prefer pytest. Never commit directly to main.")
    transcript.message("s1", "t1", "assistant", "Understood.")
    transcript.complete("s1", "t1", status="succeeded", verifier="passed", kind="root")
    with LocalMemory(
        project, root=root, session_id="s1", transcript=transcript, start=False
    ) as memory:
        memory.remember("project: We deploy with Helm.")
        memory.finish_turn("t1")
        memory.run_jobs()
    return root


APP = _app()
schema = schemathesis.openapi.from_asgi("/openapi.json", APP, config=CONFIG).include(
    path_regex="^/api/"
)


@pytest.fixture(scope="module", autouse=True)
def close_memory() -> Iterator[None]:
    yield
    APP.state.test_memory.close()
    APP.state.bank.close()
    shutil.rmtree(APP.state.capability_workspace, ignore_errors=True)


@schemathesis.check
def json_error_body(ctx, response, case) -> None:
    """Every 4xx has ``{"error": {"type", "message", "status"}}`` saying what was wrong."""
    if not 400 <= response.status_code < 500:
        return
    assert response.headers.get("content-type", [""])[0].startswith("application/json"), (
        f"{response.status_code} without a JSON body"
    )
    error = response.json()["error"]
    assert set(error) == {"type", "message", "status"}, error
    assert error["status"] == response.status_code, error
    assert isinstance(error["message"], str) and error["message"].strip(), error


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_conforms_to_its_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()


def test_every_error_status_is_documented_with_the_error_shape() -> None:
    spec = schema.raw_schema
    for path, operations in spec["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method, operation in operations.items():
            codes = {code for code in operation["responses"] if code.startswith("4")}
            assert {"401", "403"} <= codes, (method, path)
            for code in codes:
                content = operation["responses"][code]["content"]["application/json"]
                assert content["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
