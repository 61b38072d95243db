"""The OpenAI Agents SDK's session memory over orcamem
(``orcamem.integrations.agents.OrcamemSession``), driven by the SDK's own ``Runner``.

The model is a fake written against the SDK's ``Model`` interface: it records the input the
runner hands it (so a test sees the history the session replayed) and answers from a script
(a message, or a function call the runner then executes with a real ``function_tool``). The
session's items live in a real SQLite file, reopened between runs.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.errors import InvalidInputError
from orcamem.integrations.agents import OrcamemSession

NO_TRACING = RunConfig(tracing_disabled=True)


def _say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1", type="message", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )  # fmt: skip


def _call(name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id="call_1", name=name, arguments=arguments, id="fc_1",
        status="completed",
    )  # fmt: skip


class ScriptedModel(Model):
    """Answers each call with the next output of ``script``; ``inputs`` holds what it got."""

    def __init__(self, script: list[Any]) -> None:
        self.script = iter(script)
        self.inputs: list[list[Any]] = []

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        self.inputs.append(list(input) if isinstance(input, list) else [input])
        return ModelResponse(output=[next(self.script)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("these tests run the SDK without streaming")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agents.db"


@pytest.fixture
def memory(db: Path) -> Iterator[Memory]:
    with Memory(db, clock=FrozenClock("2026-11-01T10:00:00Z")) as mem:
        yield mem


def _texts(items: list[Any]) -> list[tuple[str, str]]:
    found = []
    for item in items:
        content = item.get("content")
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
        found.append((item["role"], text))
    return found


def test_the_runner_replays_the_sessions_history_across_a_reopen(db: Path, memory: Memory) -> None:
    model = ScriptedModel([_say("Nice to meet you, Ana."), _say("You live in Porto.")])
    agent = Agent(name="helper", instructions="Be brief.", model=model)
    session = OrcamemSession("chat-1", memory, space="ana")
    first = Runner.run_sync(
        agent, "Hi, I'm Ana and I live in Porto.", session=session, run_config=NO_TRACING
    )
    assert first.final_output == "Nice to meet you, Ana."
    memory.close()
    with Memory(db) as reopened:  # another process, the same file
        session = OrcamemSession("chat-1", reopened, space="ana")
        second = Runner.run_sync(agent, "Where do I live?", session=session, run_config=NO_TRACING)
        assert second.final_output == "You live in Porto."
        assert _texts(model.inputs[1]) == [
            ("user", "Hi, I'm Ana and I live in Porto."),
            ("assistant", "Nice to meet you, Ana."),
            ("user", "Where do I live?"),
        ]
        turns = [(e.role, e.text, e.session_id) for e in reopened.iter_episodes(space="ana")]
        assert turns[0] == ("user", "Hi, I'm Ana and I live in Porto.", "chat-1")
        assert len(turns) == 4
        assert "Porto" in reopened.recall("Which city is Ana in?", space="ana")


def test_tool_calls_and_outputs_round_trip_exactly(memory: Memory) -> None:
    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    model = ScriptedModel([_call("get_weather", '{"city":"Lyon"}'), _say("It is sunny."),
                           _say("Still sunny.")])  # fmt: skip
    agent = Agent(name="w", model=model, tools=[get_weather])
    session = OrcamemSession("chat-w", memory, space="w")
    Runner.run_sync(agent, "Weather in Lyon?", session=session, run_config=NO_TRACING)
    stored = asyncio.run(session.get_items())
    assert [item.get("type", "message") for item in stored] == [
        "message", "function_call", "function_call_output", "message",
    ]  # fmt: skip
    Runner.run_sync(agent, "And now?", session=session, run_config=NO_TRACING)
    replayed = model.inputs[2]
    assert replayed[: len(stored)] == stored  # the SDK gets back exactly what it wrote
    kinds = [(e.kind, e.text) for e in memory.iter_episodes(space="w")][:3]
    assert kinds == [
        ("turn", "Weather in Lyon?"),
        ("tool", 'function_call get_weather {"city":"Lyon"}'),
        ("tool", "function_call_output sunny in Lyon"),
    ]


def test_a_coloured_tool_output_and_a_huge_message_are_kept_and_the_run_ends(
    memory: Memory,
) -> None:
    """A shell tool's output holds ESC (colours) and a pasted log may pass 1 MiB: the run
    failed after the model and the tool had run, and the session lost the exchange."""

    @function_tool
    def run_tests() -> str:
        """Run the test suite."""
        return "\x1b[32m3 passed\x1b[0m in 0.1s"

    model = ScriptedModel([_call("run_tests", "{}"), _say("All 3 tests pass.")])
    agent = Agent(name="dev", model=model, tools=[run_tests])
    session = OrcamemSession("chat-t", memory, space="t")
    done = Runner.run_sync(agent, "Do the tests pass?", session=session, run_config=NO_TRACING)
    assert done.final_output == "All 3 tests pass."
    stored = asyncio.run(session.get_items())
    assert stored[2]["output"] == "\x1b[32m3 passed\x1b[0m in 0.1s"  # the item as the SDK gave it
    pasted = {"role": "user", "content": "my log:\x00 " + "x" * 1_100_000}
    asyncio.run(session.add_items([pasted]))
    assert asyncio.run(session.get_items(limit=1)) == [pasted]
    texts = [e.text for e in memory.iter_episodes(space="t")]
    assert texts[2] == "function_call_output [32m3 passed[0m in 0.1s"  # searchable, ESC dropped
    assert texts[-1].startswith("my log: xxx") and len(texts[-1].encode()) <= 1 << 20


def test_limit_pop_clear_and_sessions_apart(memory: Memory) -> None:
    one = OrcamemSession("one", memory, space="s")
    two = OrcamemSession("two", memory, space="s")

    async def run() -> None:
        assert await one.get_items() == [] and await one.pop_item() is None
        await one.add_items([{"role": "user", "content": f"message {i}"} for i in range(4)])
        await two.add_items([{"role": "user", "content": "other chat"}])
        assert [i["content"] for i in await one.get_items(limit=2)] == ["message 2", "message 3"]
        assert (await one.pop_item()) == {"role": "user", "content": "message 3"}
        assert len(await one.get_items()) == 3
        await one.clear_session()
        assert await one.get_items() == []
        assert await two.get_items() == [{"role": "user", "content": "other chat"}]

    asyncio.run(run())


def test_bad_input_is_refused_before_anything_is_written(memory: Memory) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        OrcamemSession("", memory)
    with pytest.raises(InvalidInputError, match="Memory"):
        OrcamemSession("x", "memory.db")  # type: ignore[arg-type]
    session = OrcamemSession("x", memory, space="s")
    with pytest.raises(InvalidInputError, match="dict"):
        asyncio.run(session.add_items([{"role": "user", "content": "ok"}, "not an item"]))
    assert asyncio.run(session.get_items()) == []


def test_the_docs_runner_snippet_runs_against_a_chat_completions_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/integrations.md's Runner example, its Ollama URL pointed at a stub server."""
    answer = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "Porto is lovely."}}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}  # fmt: skip
    body = json.dumps(answer).encode()

    class Chat(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["content-length"]))
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    text = (Path(__file__).resolve().parents[1] / "docs" / "integrations.md").read_text("utf-8")
    [snippet] = [c for c in re.findall(r"```py\n(.*?)```", text, re.S) if "Runner" in c]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    monkeypatch.chdir(tmp_path)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = StringIO()
        with redirect_stdout(out):
            exec(compile(snippet.replace("http://localhost:11434/v1", url), "doc", "exec"), {})
    finally:
        server.shutdown()
        server.server_close()
    assert out.getvalue().strip() == "Porto is lovely."
    with Memory(tmp_path / "agents.db") as mem:
        turns = [(e.role, e.text) for e in mem.iter_episodes(space="user_alice")]
    assert turns == [("user", "I live in Porto."), ("assistant", "Porto is lovely.")]
