"""Chat model clients: reply parsing, schemas, deadlines, errors, and real servers.

The OpenAI-compatible client runs against a real llama.cpp server (llama-cpp-python serving
SmolLM2-135M, see ``llm_server.py``; marked ``slow``). The Anthropic API cannot be reached from
here (no network but package registries), so the Anthropic client runs against a loopback
``http.server`` that speaks the Messages API's request and reply shapes; the same server plays
OpenAI-compatible servers whose behaviour llama.cpp cannot show (one that ignores the schema,
one that trickles its answer).
"""

from __future__ import annotations

import json
import socket
import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from orcamem import ClosedError, InvalidInputError, ModelError, ModelOutputError, ModelTimeoutError
from orcamem._kernel.env import (
    DEFAULT_ANTHROPIC_BASE_URL,
    DEFAULT_ANTHROPIC_MODEL,
    anthropic_api_key,
    anthropic_base_url,
    anthropic_model,
)
from orcamem._kernel.llm import (
    NOTHING,
    AnthropicChat,
    ChatModel,
    OpenAIChat,
    bounded,
    make_chat_model,
    or_nothing,
    parse_json_reply,
    schema_errors,
    schema_prompt,
)

pytest_plugins = ["llm_server"]  # the session's one llama.cpp server: fixture `llama_server`

ITEMS = bounded(
    {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"value": {"type": "string"}},
                    "required": ["value"],
                },
            }
        },
        "required": ["items"],
    },
    max_string=40,
    max_items=3,
)
SYSTEM = (
    "List the cities the user mentions as items. Answer NOTHING only when no city is mentioned."
)
USER = "I moved from Paris to Pune last week."


def _fits(value: Any) -> bool:
    """An answer a caller can use: NOTHING, or JSON that fits ITEMS."""
    return value is NOTHING or schema_errors(value, ITEMS) == []


def _dead_url() -> str:
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


# -- parse_json_reply ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"items": []}', {"items": []}),
        ("  [1, 2, 3]\n", [1, 2, 3]),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        (
            'Here you go:\n```json\n{"a": [1, {"b": "}"}]}\n```\nAnything else?',
            {"a": [1, {"b": "}"}]},
        ),
        ('Sure! The answer is {"city": "Pune"} as requested.', {"city": "Pune"}),
        ('Facts: [{"v": "x"}] and then {"ignored": true}', [{"v": "x"}]),
        ('I think {not json} but {"ok": 1} is', {"ok": 1}),
        ('```json\n{"a": 1}', {"a": 1}),  # cut before the closing fence
        ('"just a string"', "just a string"),
        ("42", 42),
    ],
    ids=[
        "object",
        "array",
        "json-fence",
        "bare-fence",
        "fence-in-prose",
        "prose-around",
        "first-of-two",
        "skips-broken-braces",
        "unclosed-fence",
        "json-string",
        "number",
    ],
)
def test_parse_json_reply_finds_the_json(reply: str, expected: Any) -> None:
    assert parse_json_reply(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "NOTHING",
        "nothing",
        " Nothing \n",
        '"NOTHING"',
        "'nothing'",
        "`NOTHING`",
        "```\nNOTHING\n```",
        "“NOTHING”",
        '```json\n"NOTHING"\n```',
    ],
)
def test_parse_json_reply_accepts_nothing(reply: str) -> None:
    assert parse_json_reply(reply) is NOTHING


@pytest.mark.parametrize(
    "reply",
    ["NOTHING.", "Nothing to report", "nothing worth keeping", "NOTHINGNESS"],
)
def test_only_exactly_nothing_is_nothing(reply: str) -> None:
    with pytest.raises(ModelOutputError):
        parse_json_reply(reply)


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        ("", "empty"),
        ("   \n ", "empty"),
        (None, "empty"),
        ("I am sorry, I cannot help with that.", r'no complete JSON value: "I am sorry, I cannot'),
        ('{"items": [{"value": "Pa', "no complete JSON value"),
        ("{" * 500, "no complete JSON value"),
    ],
    ids=["empty", "blank", "none", "prose", "truncated", "braces"],
)
def test_garbage_is_a_model_output_error(reply: str | None, match: str) -> None:
    with pytest.raises(ModelOutputError, match=match):
        parse_json_reply(reply)


def test_output_error_quotes_only_a_short_excerpt() -> None:
    with pytest.raises(ModelOutputError) as info:
        parse_json_reply("blah " * 1000)
    assert len(str(info.value)) < 500 and "blah blah" in str(info.value)
    assert isinstance(info.value, ModelError) and info.value.status == 502


# -- schemas ------------------------------------------------------------------------------------


def test_bounded_fills_missing_bounds_and_keeps_given_ones() -> None:
    schema = {
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "name": {"type": "string", "maxLength": 10},
            "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    }
    out = bounded(schema, max_string=50, max_items=4)
    assert out["additionalProperties"] is False
    assert out["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string", "maxLength": 50},
        "maxItems": 4,
    }
    assert out["properties"]["name"]["maxLength"] == 10  # kept
    assert out["properties"]["when"]["anyOf"][0]["maxLength"] == 50
    assert "maxItems" not in schema["properties"]["tags"]  # the input is not changed
    assert "additionalProperties" not in bounded(schema, closed=False)
    with pytest.raises(InvalidInputError):
        bounded(schema, max_items=0)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"items": [{"value": "Pune"}]}, None),
        ({"items": []}, None),
        ({}, "$: 'items' is a required property"),
        ({"items": "Pune"}, "$.items: 'Pune' is not of type 'array'"),
        ({"items": [{"value": 3}]}, "$.items[0].value: 3 is not of type 'string'"),
        ({"items": [{"value": "x" * 41}]}, "$.items[0].value: 41 characters, at most 40 allowed"),
        ({"items": [{"value": "a"}] * 4}, "$.items: 4 items, at most 3 allowed"),
        (
            {"items": [], "extra": 1},
            "$: Additional properties are not allowed ('extra' was unexpected)",
        ),
        (
            {"items": [{"value": "a", "why": "b"}]},
            "$.items[0]: Additional properties are not allowed ('why' was unexpected)",
        ),
        (["Pune"], "$: ['Pune'] is not of type 'object'"),
    ],
)
def test_schema_errors_name_the_path(value: Any, problem: str | None) -> None:
    errors = schema_errors(value, ITEMS)
    assert errors == ([] if problem is None else [problem])


def test_schema_errors_types_enum_and_numbers() -> None:
    assert schema_errors(True, {"type": "integer"}) == ["$: True is not of type 'integer'"]
    assert schema_errors(3.0, {"type": "integer"}) == []
    assert schema_errors(None, {"type": ["string", "null"]}) == []
    assert schema_errors("maybe", {"enum": ["yes", "no"]}) == [
        "$: 'maybe' is not one of ['yes', 'no']"
    ]
    assert schema_errors(1.5, {"type": "number", "maximum": 1}) == [
        "$: 1.5 is greater than the maximum of 1"
    ]
    assert schema_errors(3, {"anyOf": [{"type": "string"}, {"type": "null"}]}) == [
        "$: fits none of anyOf ($: 3 is not of type 'string')"
    ]


def test_schema_prompt_carries_the_schema() -> None:
    prompt = schema_prompt("Extract facts.", ITEMS)
    assert prompt.startswith("Extract facts.\n\n")
    assert json.loads(prompt.rsplit("\n", 1)[1]) == ITEMS


# -- a real llama.cpp server --------------------------------------------------------------------


@pytest.mark.slow
def test_json_object_mode_against_llama_cpp(llama_server: str) -> None:
    with OpenAIChat("smollm2", llama_server, structured="json_object") as model:
        assert isinstance(model, ChatModel)
        assert model.id == f"openai:smollm2@{llama_server}"
        value = model.complete_json(SYSTEM, USER, ITEMS, deadline_s=30, max_tokens=128)
    # At temperature 0 SmolLM2 answers this line with items (which cities is its business).
    assert isinstance(value, dict) and schema_errors(value, ITEMS) == []
    assert 1 <= len(value["items"]) <= 3


@pytest.mark.slow
def test_auto_mode_settles_on_what_llama_cpp_takes(llama_server: str) -> None:
    model = make_chat_model(llama_server, "smollm2")
    assert isinstance(model, OpenAIChat) and model.structured == "auto"
    first = model.complete_json(SYSTEM, USER, ITEMS, deadline_s=30, max_tokens=128)
    # llama-cpp-python's server refuses json_schema (with a 500 naming response_format)
    assert model.structured == "json_object"
    second = model.complete_json(SYSTEM, "My sister lives in Oslo.", ITEMS, deadline_s=30)
    assert _fits(first) and _fits(second)
    model.close()
    model.close()  # idempotent
    with pytest.raises(ClosedError, match="make a new client"):
        model.complete_json(SYSTEM, USER, ITEMS)


@pytest.mark.slow
def test_a_constrained_model_can_still_say_nothing(llama_server: str) -> None:
    """Under llama.cpp's grammar only what the schema allows can be said: the client sends the
    schema with the NOTHING alternative, so an explicit empty answer stays possible."""
    with OpenAIChat("smollm2", llama_server) as model:
        answer = model.complete_json("Always answer NOTHING.", "hi", ITEMS, deadline_s=30)
    assert answer is NOTHING


@pytest.mark.slow
def test_forced_json_schema_on_llama_cpp_says_what_to_use(llama_server: str) -> None:
    with (
        OpenAIChat("smollm2", llama_server, structured="json_schema") as model,
        pytest.raises(ModelError, match=r"answered 500: .*use structured='json_object' or 'auto'"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=30)


@pytest.mark.slow
def test_one_client_serves_many_threads(llama_server: str) -> None:
    with OpenAIChat("smollm2", llama_server) as model:
        texts = ["I live in Lima.", "We met in Rome and Kyoto.", "Nothing about places here."]
        with ThreadPoolExecutor(max_workers=3) as pool:
            values = list(
                pool.map(lambda t: model.complete_json(SYSTEM, t, ITEMS, deadline_s=60), texts)
            )
    assert all(_fits(value) for value in values)


@pytest.mark.slow
def test_tiny_deadline_against_llama_cpp_times_out_quickly(llama_server: str) -> None:
    with (
        OpenAIChat("smollm2", llama_server, structured="json_object") as model,
        pytest.raises(ModelTimeoutError, match=r"within the 0.05 s deadline") as info,
    ):
        model.complete_json(SYSTEM, USER * 20, ITEMS, deadline_s=0.05, max_tokens=256)
    assert isinstance(info.value, TimeoutError) and info.value.status == 504


def test_unreachable_server_is_a_model_error_naming_the_url() -> None:
    url = _dead_url()
    with (
        OpenAIChat("smollm2", url) as model,
        pytest.raises(ModelError, match=r"is unreachable .*start it, or fix the URL") as info,
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=5)
    assert f"{url}/chat/completions" in str(info.value)
    assert not isinstance(info.value, ModelTimeoutError)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"deadline_s": 0}, "deadline_s"),
        ({"deadline_s": -1}, "deadline_s"),
        ({"max_tokens": 0}, "max_tokens"),
    ],
)
def test_bad_call_arguments_are_refused_before_any_request(
    kwargs: dict[str, Any], match: str
) -> None:
    with OpenAIChat("m", _dead_url()) as model, pytest.raises(InvalidInputError, match=match):
        model.complete_json(SYSTEM, USER, ITEMS, **kwargs)


def test_bad_constructor_arguments() -> None:
    with pytest.raises(InvalidInputError, match="structured="):
        OpenAIChat("m", "http://127.0.0.1:1/v1", structured="xml")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="must start with http"):
        OpenAIChat("m", "127.0.0.1:8080/v1")


# -- a scripted loopback server (OpenAI-compatible and Anthropic shapes) ------------------------

Reply = tuple[int, Any]  # (status, JSON payload or raw bytes)
HOLD_S = 30.0
"""How long a held-back answer is held at most (far past every deadline below)."""
TRICKLE_S = 0.02
"""The pause between two trickled bytes or header lines."""


class _Handler(BaseHTTPRequestHandler):
    server: _ScriptedServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.requests.append(
            {"path": self.path, "headers": dict(self.headers), "body": body}
        )
        if self.path.endswith("/trickle/chat/completions"):
            self._trickle()
            return
        if self.path.endswith("/slow-headers/chat/completions"):
            self._slow_headers()
            return
        if self.path.endswith("/silent/chat/completions"):
            self.server.released.wait(HOLD_S)
        status, payload = self.server.respond(body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _trickle(self) -> None:
        """Headers at once, then a gzip body that trickles in as empty deflate blocks, one
        every 20 ms, until the test is over (or HOLD_S); then a complete answer. Each block
        arrives well within any per-read timeout and decodes to no bytes at all, so neither a
        read timeout nor a check between decoded chunks ever runs: only the watchdog cuts it."""
        _, payload = _chat_reply('{"items": []}')
        gzip = zlib.compressobj(wbits=31)
        head = gzip.compress(b"") + gzip.flush(zlib.Z_SYNC_FLUSH)
        tail = gzip.compress(json.dumps(payload).encode()) + gzip.flush()
        empty = b"\x00\x00\x00\xff\xff"  # an empty stored deflate block
        blocks = int(HOLD_S / TRICKLE_S)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(head) + blocks * len(empty) + len(tail)))
        self.end_headers()
        try:
            self.wfile.write(head)
            self.wfile.flush()
            sent = 0
            while sent < blocks and not self.server.released.wait(TRICKLE_S):
                self.wfile.write(empty)
                self.wfile.flush()
                sent += 1
            self.wfile.write(empty * (blocks - sent) + tail)
            self.server.finished.set()
        except OSError:
            pass

    def _slow_headers(self) -> None:
        """A status line at once, then one header line every 20 ms until the test is over (or
        HOLD_S); then the rest of a complete answer."""
        _, payload = _chat_reply('{"items": []}')
        data = json.dumps(payload).encode()
        try:
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            self.wfile.flush()
            index = 0
            while index < HOLD_S / TRICKLE_S and not self.server.released.wait(TRICKLE_S):
                self.wfile.write(f"X-Wait-{index}: 1\r\n".encode())
                self.wfile.flush()
                index += 1
            self.wfile.write(
                b"Content-Type: application/json\r\n"
                + f"Content-Length: {len(data)}\r\n\r\n".encode()
                + data
            )
            self.server.finished.set()
        except OSError:
            pass
        self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


class _ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []
        self.respond: Callable[[dict[str, Any]], Reply] = lambda body: (404, {"error": "unset"})
        self.released = threading.Event()
        """Set when the test is over: the held-back answers then complete."""
        self.finished = threading.Event()
        """Set once a held-back answer was sent whole."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def fake() -> Iterator[_ScriptedServer]:
    instance = _ScriptedServer()
    thread = threading.Thread(target=instance.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield instance
    instance.released.set()
    instance.shutdown()
    instance.server_close()
    thread.join(timeout=5)


def _chat_reply(content: str | None, finish_reason: str = "stop") -> Reply:
    return 200, {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }


def test_auto_keeps_json_schema_where_the_server_honours_it(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _chat_reply('{"items": [{"value": "Pune"}]}')
    with OpenAIChat("gpt-x", f"{fake.url}/v1", api_key="sk-1") as model:
        assert model.complete_json(SYSTEM, USER, ITEMS, max_tokens=99) == {
            "items": [{"value": "Pune"}]
        }
        assert model.structured == "json_schema"
        model.complete_json(SYSTEM, USER, ITEMS)
    sent = fake.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["Authorization"] == "Bearer sk-1"
    body = sent["body"]
    assert body["model"] == "gpt-x" and body["max_tokens"] == 99 and body["stream"] is False
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": or_nothing(ITEMS), "strict": True},
    }
    assert body["messages"][0] == {
        "role": "system",
        "content": schema_prompt(SYSTEM, or_nothing(ITEMS)),
    }
    assert body["messages"][1] == {"role": "user", "content": USER}
    assert len(fake.requests) == 2  # no probing once settled


def test_auto_falls_back_when_the_server_ignores_the_schema(fake: _ScriptedServer) -> None:
    def respond(body: dict[str, Any]) -> Reply:  # free text unless given llama.cpp's form
        if body["response_format"]["type"] == "json_object":
            return _chat_reply('{"items": [{"value": "Pune"}]}')
        return _chat_reply("The user moved to Pune.")

    fake.respond = respond
    with OpenAIChat(None, f"{fake.url}/v1") as model:
        assert model.id == f"openai:default@{fake.url}/v1"
        assert model.complete_json(SYSTEM, USER, ITEMS) == {"items": [{"value": "Pune"}]}
        assert model.structured == "json_object"
        model.complete_json(SYSTEM, USER, ITEMS)
    kinds = [r["body"]["response_format"]["type"] for r in fake.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert fake.requests[1]["body"]["response_format"]["schema"] == or_nothing(ITEMS)
    assert (
        "model" not in fake.requests[0]["body"]
        and "Authorization" not in fake.requests[0]["headers"]
    )


def test_auto_falls_back_on_422(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: (
        (422, {"detail": "bad response_format"})
        if body["response_format"]["type"] == "json_schema"
        else _chat_reply('{"items": []}')
    )
    with OpenAIChat("m", f"{fake.url}/v1") as model:
        assert model.complete_json(SYSTEM, USER, ITEMS) == {"items": []}
        assert model.structured == "json_object"


def test_nothing_is_returned_and_settles_nothing(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _chat_reply("```\nNOTHING\n```")
    with OpenAIChat("m", f"{fake.url}/v1") as model:
        assert model.complete_json(SYSTEM, USER, ITEMS) is NOTHING
        assert model.structured == "auto"


def test_off_schema_output_is_an_output_error(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _chat_reply('{"items": [{"value": "' + "x" * 60 + '"}]}')
    with OpenAIChat("m", f"{fake.url}/v1") as model:
        with pytest.raises(
            ModelOutputError,
            match=r"does not fit the schema \(\$\.items\[0\]\.value: 60 characters",
        ):
            model.complete_json(SYSTEM, USER, ITEMS)
        assert model.structured == "auto"  # neither form worked: nothing learnt
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("", "empty"),
        (None, "empty"),
        ("I would rather not.", r'no complete JSON value: "I would rather not\."'),
    ],
)
def test_empty_or_prose_reply_is_an_output_error(
    fake: _ScriptedServer, content: str | None, match: str
) -> None:
    fake.respond = lambda body: _chat_reply(content)
    with (
        OpenAIChat("m", f"{fake.url}/v1", structured="json_object") as model,
        pytest.raises(ModelOutputError, match=match),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)


def test_reply_cut_at_max_tokens_says_so(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _chat_reply('{"items": [{"value": "Pu', finish_reason="length")
    with (
        OpenAIChat("m", f"{fake.url}/v1") as model,
        pytest.raises(ModelOutputError, match=r"cut at max_tokens.*raise max_tokens"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)
    assert len(fake.requests) == 1  # truncation is not the server ignoring the schema


def test_http_error_names_status_body_and_next_step(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: (503, {"error": "model is loading, try again"})
    with (
        OpenAIChat("m", f"{fake.url}/v1", structured="json_object") as model,
        pytest.raises(ModelError, match=r"answered 503: .*model is loading.*retry later") as info,
    ):
        model.complete_json(SYSTEM, USER, ITEMS)
    assert f"{fake.url}/v1/chat/completions" in str(info.value)
    fake.respond = lambda body: (200, b"<html>not an API</html>")
    with (
        OpenAIChat("m", fake.url, structured="json_object") as model,
        pytest.raises(ModelError, match="not a JSON object"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)
    fake.respond = lambda body: (200, {"data": []})
    with (
        OpenAIChat("m", fake.url, structured="json_object") as model,
        pytest.raises(ModelError, match=r"no OpenAI-style 'choices'.*ending in /v1"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)


# The held-back answers below complete only when the test is over (or after HOLD_S): a client
# without a deadline would get a valid answer and raise nothing, so each test fails then, and
# no test measures how long anything took.


def test_a_server_that_never_answers_times_out_at_the_deadline(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _chat_reply('{"items": []}')
    with (
        OpenAIChat("m", f"{fake.url}/silent") as model,
        pytest.raises(ModelTimeoutError, match=r"within the 0.5 s deadline.*raise deadline_s"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=0.5)
    assert len(fake.requests) == 1  # asked once, not retried past the deadline


def test_a_trickling_answer_is_cut_at_the_deadline(fake: _ScriptedServer) -> None:
    """httpx's read timeout restarts with every byte; the watchdog holds the total."""
    with (
        OpenAIChat("m", f"{fake.url}/trickle", structured="json_object") as model,
        pytest.raises(ModelTimeoutError, match=r"within the 0.5 s deadline"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=0.5)
    assert not fake.finished.is_set()  # cut while the body was still arriving


def test_trickling_headers_are_cut_at_the_deadline(fake: _ScriptedServer) -> None:
    with (
        OpenAIChat("m", f"{fake.url}/slow-headers", structured="json_object") as model,
        pytest.raises(ModelTimeoutError, match=r"within the 0.5 s deadline"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=0.5)
    assert not fake.finished.is_set()  # cut while the headers were still arriving


# -- Anthropic (Messages API shape, loopback) ---------------------------------------------------


def _message(*blocks: dict[str, Any], stop_reason: str = "tool_use") -> Reply:
    return 200, {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": list(blocks),
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_anthropic_tool_use_reply_is_the_answer(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _message(
        {"type": "text", "text": "Recording the cities."},
        {
            "type": "tool_use",
            "id": "toolu_1",
            "name": "answer",
            "input": {"answer": {"items": [{"value": "Pune"}]}},
        },
    )
    with AnthropicChat(api_key="sk-ant-test", base_url=fake.url) as model:
        assert isinstance(model, ChatModel)
        assert model.id == f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
        value = model.complete_json(SYSTEM, USER, ITEMS, max_tokens=300)
    assert value == {"items": [{"value": "Pune"}]}
    sent = fake.requests[0]
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == "sk-ant-test"
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    body = sent["body"]
    assert body["model"] == DEFAULT_ANTHROPIC_MODEL and body["max_tokens"] == 300
    assert body["system"] == SYSTEM and body["messages"] == [{"role": "user", "content": USER}]
    assert body["tools"] == [
        {
            "name": "answer",
            "description": body["tools"][0]["description"],
            "input_schema": {
                "type": "object",
                "properties": {"answer": or_nothing(ITEMS)},
                "required": ["answer"],
            },
        }
    ]
    assert "NOTHING" in body["tools"][0]["description"]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}


def test_anthropic_401_is_a_model_error_with_the_body(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: (
        401,
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
    )
    with (
        AnthropicChat(api_key="sk-ant-wrong", base_url=fake.url) as model,
        pytest.raises(
            ModelError,
            match=r"answered 401: .*invalid x-api-key.*check the API key \(ANTHROPIC_API_KEY\)",
        ),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)


def test_anthropic_nothing_is_nothing(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _message(
        {"type": "text", "text": "NOTHING"}, stop_reason="end_turn"
    )
    with AnthropicChat(api_key="k", base_url=fake.url) as model:
        assert model.complete_json(SYSTEM, USER, ITEMS) is NOTHING
    fake.respond = lambda body: _message(
        {"type": "tool_use", "id": "t", "name": "answer", "input": {"answer": "NOTHING"}}
    )
    with AnthropicChat(api_key="k", base_url=fake.url) as model:
        assert model.complete_json(SYSTEM, USER, ITEMS) is NOTHING
    fake.respond = lambda body: _message(
        {"type": "text", "text": "No cities here."}, stop_reason="end_turn"
    )
    with (
        AnthropicChat(api_key="k", base_url=fake.url) as model,
        pytest.raises(ModelOutputError, match="No cities here"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)


def test_anthropic_off_schema_tool_input_is_an_output_error(fake: _ScriptedServer) -> None:
    fake.respond = lambda body: _message(
        {"type": "tool_use", "id": "t", "name": "answer", "input": {"answer": {"cities": []}}}
    )
    with (
        AnthropicChat(api_key="k", base_url=fake.url) as model,
        pytest.raises(ModelOutputError, match="'items' is a required property"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)
    fake.respond = lambda body: _message(
        {"type": "tool_use", "id": "t", "name": "answer", "input": {"items": []}}
    )
    with (
        AnthropicChat(api_key="k", base_url=fake.url) as model,
        pytest.raises(ModelOutputError, match="without an 'answer'"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS)


def test_anthropic_non_object_schema(fake: _ScriptedServer) -> None:
    schema = {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 3}
    fake.respond = lambda body: _message(
        {"type": "tool_use", "id": "t", "name": "answer", "input": {"answer": ["Pune"]}}
    )
    with AnthropicChat(api_key="k", base_url=fake.url) as model:
        assert model.complete_json(SYSTEM, USER, schema) == ["Pune"]
    sent = fake.requests[0]["body"]["tools"][0]["input_schema"]
    assert sent["properties"]["answer"] == or_nothing(schema)


def test_anthropic_model_override_reaches_the_request(
    fake: _ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ORCAMEM_ANTHROPIC_MODEL", "claude-haiku-4-5")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    fake.respond = lambda body: _message(
        {"type": "tool_use", "id": "t", "name": "answer", "input": {"answer": {"items": []}}}
    )
    model = make_chat_model()
    assert isinstance(model, AnthropicChat) and model.id == "anthropic:claude-haiku-4-5"
    assert model.complete_json(SYSTEM, USER, ITEMS) == {"items": []}
    model.close()
    explicit = make_chat_model(model="claude-opus-4-1")  # an explicit model beats the env
    assert explicit is not None and explicit.id == "anthropic:claude-opus-4-1"
    explicit.complete_json(SYSTEM, USER, ITEMS)
    explicit.close()
    assert [r["body"]["model"] for r in fake.requests] == ["claude-haiku-4-5", "claude-opus-4-1"]
    assert {r["headers"]["x-api-key"] for r in fake.requests} == {"sk-ant-env"}


def test_anthropic_without_a_key_says_what_to_set() -> None:
    with pytest.raises(ModelError, match="set ANTHROPIC_API_KEY"):
        AnthropicChat()


def test_anthropic_unreachable_names_the_url() -> None:
    url = _dead_url().removesuffix("/v1")
    with (
        AnthropicChat(api_key="k", base_url=url) as model,
        pytest.raises(ModelError, match=f"{url}/v1/messages is unreachable"),
    ):
        model.complete_json(SYSTEM, USER, ITEMS, deadline_s=5)


# -- choosing a model ---------------------------------------------------------------------------


def test_make_chat_model_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_chat_model() is None  # no upstream, no key: run without a model
    ollama = make_chat_model(model="smollm2")  # a model alone: a local Ollama's (issue 12)
    assert (
        isinstance(ollama, OpenAIChat) and ollama.id == "openai:smollm2@http://localhost:11434/v1"
    )
    ollama.close()

    local = make_chat_model("http://127.0.0.1:8012/v1/", "smollm2")
    assert isinstance(local, OpenAIChat) and local.id == "openai:smollm2@http://127.0.0.1:8012/v1"
    local.close()

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-1")
    claude = make_chat_model()
    assert isinstance(claude, AnthropicChat) and claude.id == f"anthropic:{DEFAULT_ANTHROPIC_MODEL}"
    claude.close()
    upstream_wins = make_chat_model("http://127.0.0.1:8012/v1", "smollm2")
    assert isinstance(upstream_wins, OpenAIChat)
    upstream_wins.close()

    with pytest.raises(InvalidInputError, match="must start with http"):
        make_chat_model("localhost:8012")


def test_make_chat_model_sends_the_openai_key(
    fake: _ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-2")
    fake.respond = lambda body: _chat_reply('{"items": []}')
    model = make_chat_model(f"{fake.url}/v1", "gpt-x")
    assert model is not None
    model.complete_json(SYSTEM, USER, ITEMS)
    model.close()
    assert fake.requests[0]["headers"]["Authorization"] == "Bearer sk-openai-2"


def test_config_reads_the_anthropic_environment() -> None:
    assert anthropic_api_key({}) is None and anthropic_api_key({"ANTHROPIC_API_KEY": ""}) is None
    assert anthropic_api_key({"ANTHROPIC_API_KEY": "k"}) == "k"
    assert anthropic_model({}) == DEFAULT_ANTHROPIC_MODEL
    assert anthropic_model({"ORCAMEM_ANTHROPIC_MODEL": " claude-x "}) == "claude-x"
    assert anthropic_base_url({}) == DEFAULT_ANTHROPIC_BASE_URL == "https://api.anthropic.com"
    assert anthropic_base_url({"ANTHROPIC_BASE_URL": "http://gw:8080"}) == "http://gw:8080"
