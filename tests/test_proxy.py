"""The memory proxy: recall → record the question → forward → relay byte for byte, the answer's
end held until its reply is recorded.

The proxy runs under a real uvicorn server on 127.0.0.1 (streaming and disconnects need real
sockets). Its upstream is either a stub model server written here (``http.server`` on
127.0.0.1, speaking the chat-completions wire format: JSON, SSE with a usage chunk and a
``choices: null`` chunk, error statuses, a slow stream) — a test double that lets the tests see
the exact request the proxy forwarded and compare bytes — or, in the ``slow`` tests, the real
llama.cpp server of ``llm_server.py`` driven through the official ``openai`` client.
"""

from __future__ import annotations

import json
import logging
import re
import select
import shutil
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import OpenAI

from orcamem import Config, Memory
from orcamem._kernel.llm.openai import OpenAIChat
from orcamem._kernel.names import SPACE
from orcamem.engine import StorageConfig
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http import proxy as proxy_module
from orcamem.interfaces.http.dialects import CHAT
from orcamem.interfaces.http.proxy import (
    _asked,
    _Held,
    _Reply,
    conversation_session,
    install,
    user_space,
)
from orcamem.recall.blocks import strip as strip_module
from servers import LOCAL_BASE, serve

pytest_plugins = ["llm_server"]  # the session's one llama.cpp server: fixture `llama_server`

ROOT = Path(__file__).resolve().parents[1]
NOW = "2026-11-01T10:00:00Z"


# -- the stub model server ----------------------------------------------------------------


def _chunk(choices: Any, **extra: Any) -> dict[str, Any]:
    return {"id": "chatcmpl-stub", "object": "chat.completion.chunk", "created": 1,
            "model": "stub-model", "choices": choices, **extra}  # fmt: skip


SSE_EVENTS = [
    _chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]),
    _chunk([{"index": 0, "delta": {"content": "Hello"}, "finish_reason": None}]),
    _chunk(None),  # some servers send choices: null (e.g. a keep-alive or metadata chunk)
    _chunk([{"index": 0, "delta": {"content": " there, Zoë ✓"}, "finish_reason": None}]),
    _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
    _chunk([], usage={"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}),
]
SSE_REPLY = "Hello there, Zoë ✓"
SSE_BODY = (
    b": stub keep-alive comment\n\n"
    + b"".join(f"data: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in SSE_EVENTS)
    + b"data: [DONE]\n\n"
)
BROKEN_PART = SSE_BODY[: SSE_BODY.index(b"Hello") + 100]  # two events and a bit
COMPLETION = {
    "id": "chatcmpl-stub",
    "object": "chat.completion",
    "created": 1,
    "model": "stub-model",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "You are a backend engineer in Pune."},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
}
COMPLETION_BODY = json.dumps(COMPLETION, indent=1).encode()  # odd spacing: bytes must match
MODELS_BODY = b'{"object": "list", "data": [{"id": "stub-model", "object": "model"}]}'


class Stub:
    """A model server on 127.0.0.1 that records every request it gets.

    The chat route picks its behaviour from the request's ``model``: ``status-429`` (any
    status) answers that error, ``slow`` streams one word every 20 ms for 8 s and ``hang``
    waits 3 s before its first byte, both noting when the caller went away (``closed``);
    ``block`` sets ``called`` and answers only once the test sets ``release``; ``echo`` answers
    "Noted." and the request's first system message (a model echoing its memory block); otherwise
    ``stream: true`` gets ``SSE_BODY`` in 7-byte
    pieces (cutting lines and UTF-8 characters) and anything else ``COMPLETION_BODY``. Other
    paths echo the request as JSON with the status of the ``status`` query parameter.
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.closed = threading.Event()
        self.called = threading.Event()
        self.release = threading.Event()
        self.slow_sent = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                stub.requests.append(
                    {"method": self.command, "path": self.path, "headers": headers, "body": body}
                )
                path = urlsplit(self.path).path
                if path == "/v1/chat/completions":
                    self.chat(json.loads(body))
                elif path == "/v1/models":
                    self.send(200, MODELS_BODY, {"content-type": "application/json"})
                else:
                    query = parse_qs(urlsplit(self.path).query)
                    echo = {
                        "method": self.command,
                        "path": self.path,
                        "body": body.decode("latin-1"),
                    }
                    status = int(query.get("status", ["200"])[0])
                    self.send(status, json.dumps(echo).encode(), {"x-stub": "echo"})

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = handle_one

            def send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in {**headers, "content-length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def chat(self, payload: dict[str, Any]) -> None:
                model = str(payload.get("model"))
                if model.startswith("status-"):
                    status = int(model.removeprefix("status-"))
                    error = {"error": {"message": f"stub error {status}", "code": status}}
                    self.send(status, json.dumps(error).encode(), {"retry-after": "7"})
                elif model == "slow":
                    self.slow()
                elif model == "hang":
                    self.hang()
                elif model == "broken":
                    self.start_stream()
                    self.write_chunk(BROKEN_PART)
                    self.close_connection = True  # no last chunk: the stream breaks off
                elif model == "big":  # 1.6 MB of answer with a NUL in it: over the log's 1 MiB
                    message = {
                        "role": "assistant",
                        "content": "Here\u0000 it is: " + "ab " * 550_000,
                    }
                    big = {**COMPLETION, "choices": [{"index": 0, "message": message}]}
                    self.send(200, json.dumps(big).encode(), {"content-type": "application/json"})
                elif model == "fresh":  # a new answer each time (none copies an earlier one)
                    message = {"role": "assistant", "content": f"Reply {len(stub.requests)}."}
                    fresh = {**COMPLETION, "choices": [{"index": 0, "message": message}]}
                    self.send(200, json.dumps(fresh).encode(), {"content-type": "application/json"})
                elif model == "echo":
                    system = next(
                        m["content"] for m in payload["messages"] if m["role"] == "system"
                    )
                    message = {"role": "assistant", "content": f"Noted. {system}"}
                    echo = {**COMPLETION, "choices": [{"index": 0, "message": message}]}
                    self.send(200, json.dumps(echo).encode(), {"content-type": "application/json"})
                else:
                    if model == "block":
                        stub.called.set()
                        stub.release.wait(10)
                    self.answer(bool(payload.get("stream")))

            def answer(self, stream: bool) -> None:
                if stream:
                    self.start_stream()
                    for start in range(0, len(SSE_BODY), 7):
                        self.write_chunk(SSE_BODY[start : start + 7])
                    self.write_chunk(b"")
                else:
                    self.send(200, COMPLETION_BODY, {"content-type": "application/json"})

            def start_stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.send_header("x-stub", "stream")
                self.end_headers()

            def write_chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def hang(self) -> None:
                """Think for up to 3 s before answering, watching for the caller to leave."""
                for _ in range(150):
                    ready, _, _ = select.select([self.connection], [], [], 0.02)
                    if ready and not self.connection.recv(1, socket.MSG_PEEK):
                        stub.closed.set()
                        self.close_connection = True
                        return
                self.send(200, COMPLETION_BODY, {"content-type": "application/json"})

            def slow(self) -> None:
                self.start_stream()
                try:
                    for i in range(400):
                        event = _chunk([{"index": 0, "delta": {"content": f"w{i} "}}])
                        self.write_chunk(f"data: {json.dumps(event)}\n\n".encode())
                        stub.slow_sent = i + 1
                        time.sleep(0.02)
                    self.write_chunk(b"data: [DONE]\n\n")
                    self.write_chunk(b"")
                except (BrokenPipeError, ConnectionResetError):
                    stub.closed.set()
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Stub:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def chats(self) -> list[dict[str, Any]]:
        return [json.loads(r["body"]) for r in self.requests if r["path"] == "/v1/chat/completions"]


def proxy_app(mem: Memory, **settings: Any) -> FastAPI:
    app = create_app(mem, ServerSettings(**settings))
    install(app)
    return app


def wait_for(check: Callable[[], Any], timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)
    return value


def turns(mem: Memory, space: str) -> list[tuple[str | None, str]]:
    return [(e.role, e.text) for e in mem.iter_episodes(space=space) if e.kind == "turn"]


@pytest.fixture
def stub() -> Iterator[Stub]:
    with Stub() as server:
        yield server


@pytest.fixture
def proxy(mem: Memory, stub: Stub) -> Iterator[str]:
    with serve(proxy_app(mem, upstream=f"{stub.url}/v1", model="stub-model")) as url:
        yield url


# -- recall and injection -----------------------------------------------------------------

QUESTION = "What is my job and where do I live?"


def test_the_injected_block_is_the_spaces_recall_and_other_fields_pass_untouched(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    mem.add("I work as a backend engineer and I live in Pune.", space="user_alice")
    mem.add("Bob's dentist is Dr. Rao.", space="user_bob")
    request = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
        ],
        "temperature": 0.25,
        "max_tokens": 64,
        "seed": 12345678901234567,
        "vendor_field": {"nested": [1, 2.5, None, "ü"]},
    }
    block = mem.recall(QUESTION, space="user_alice")  # before: the exchange is recorded after
    reply = httpx.post(
        f"{proxy}/v1/chat/completions", json=request, headers={"x-orma-space": "user_alice"}
    )
    assert reply.status_code == 200
    assert reply.content == COMPLETION_BODY
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["x-orcamem-space"] == "user_alice"
    assert reply.headers["x-orcamem-memory"] == "injected"
    [sent] = stub.chats()
    assert "Pune" in block and "Dr. Rao" not in block
    own = request["messages"][0]["content"]  # the block joins the client's system message
    merged = {"role": "system", "content": f"{own}\n\n{block}"}
    assert sent["messages"] == [merged, *request["messages"][1:]]
    assert sent["model"] == "stub-model"  # filled from the settings: the request named none
    assert {k: v for k, v in sent.items() if k not in ("messages", "model")} == {
        k: v for k, v in request.items() if k != "messages"
    }
    forwarded = stub.requests[0]["headers"]
    assert "x-orma-space" not in forwarded  # orcamem's own headers stay here
    assert forwarded["accept-encoding"] == "identity"


def test_with_the_block_log_on_each_injected_block_is_logged_as_the_proxys(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    mem.add("I work as a backend engineer and I live in Pune.", space="user_alice")
    chat = {"messages": [{"role": "user", "content": QUESTION}]}
    headers = {"x-orma-space": "user_alice"}
    httpx.post(f"{proxy}/v1/chat/completions", json=chat, headers=headers)
    assert mem.injected_blocks(space="user_alice") == []  # off by default
    mem.config = mem.config.with_(pack=mem.config.pack.with_(log_blocks=True))
    reply = httpx.post(f"{proxy}/v1/chat/completions", json=chat, headers=headers)
    assert reply.headers["x-orcamem-memory"] == "injected"
    [entry] = mem.injected_blocks(space="user_alice")
    sent = stub.chats()[1]["messages"][0]["content"]
    assert entry.surface == "proxy" and entry.item_ids and entry.block is None
    assert "Pune" in sent and "Pune" not in repr(entry)


def test_a_request_with_nothing_to_recall_is_forwarded_byte_for_byte(
    stub: Stub, proxy: str
) -> None:
    body = b'{"model":"mine",  "messages":[{"role":"user","content":"Hello?"}], "n": 1}'
    reply = httpx.post(
        f"{proxy}/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200
    assert reply.headers["x-orcamem-memory"] == "none"
    assert stub.requests[0]["body"] == body  # its own model kept, nothing re-serialised


def test_space_comes_from_the_header_then_the_user_field_then_default(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    for space in ("user_alice", "user_bob", "default"):
        mem.add(f"The secret word of {space} is {space}-word.", space=space)
    question = {"role": "user", "content": "What is the secret word?"}
    cases = [
        ({"x-orma-space": "user_alice"}, {"user": "user_bob"}, "user_alice"),
        ({"x-orcamem-space": "user_bob"}, {}, "user_bob"),
        ({}, {"user": "user_bob"}, "user_bob"),
        ({}, {}, "default"),
    ]
    for number, (headers, extra, space) in enumerate(cases):
        session = {"x-orcamem-session": f"case-{number}"}
        reply = httpx.post(
            f"{proxy}/v1/chat/completions",
            json={"messages": [question], **extra},
            headers={**headers, **session},
        )
        assert reply.headers["x-orcamem-space"] == space
        system = stub.chats()[-1]["messages"][0]["content"]
        assert f"{space}-word" in system
        assert all(
            f"{other}-word" not in system
            for other in {"user_alice", "user_bob", "default"} - {space}
        )
        wait_for(lambda space=space: ("user", question["content"]) in turns(mem, space))
    episodes = list(mem.iter_episodes(space="user_bob"))
    assert {e.session_id for e in episodes if e.kind == "turn"} == {"case-1", "case-2"}


def test_an_invalid_space_header_is_a_400_and_nothing_is_forwarded(stub: Stub, proxy: str) -> None:
    message = {"messages": [{"role": "user", "content": "hi"}]}
    bad_header = httpx.post(
        f"{proxy}/v1/chat/completions", json=message, headers={"x-orma-space": "../etc"}
    )
    assert bad_header.status_code == 400
    assert bad_header.json()["error"]["type"] == "InvalidSpaceError"
    assert stub.requests == []


def test_a_free_text_user_field_maps_to_a_stable_space(mem: Memory, stub: Stub, proxy: str) -> None:
    space = user_space("John Smith")
    assert space == "user:john-smith-ef61a579c907"
    mem.add("The secret word of John is heron.", space=space)
    question = {"role": "user", "content": "What is the secret word?"}
    for number in range(2):  # the same value, the same space, every time
        reply = httpx.post(
            f"{proxy}/v1/chat/completions",
            json={"messages": [question], "user": "John Smith"},
            headers={"x-orcamem-session": f"john-{number}"},
        )
        assert reply.status_code == 200, reply.text
        assert reply.headers["x-orcamem-space"] == space
        assert "heron" in stub.chats()[-1]["messages"][0]["content"]
    wait_for(lambda: ("user", question["content"]) in turns(mem, space))
    assert turns(mem, "default") == []  # not the fallback space


@pytest.mark.parametrize(
    ("user", "space"),
    [
        ("user_bob", "user_bob"),  # a valid space name is kept as it is
        ("alice@example.com", "alice@example.com"),
        ("John Smith", "user:john-smith-ef61a579c907"),
        ("Zoë Ünïcode", "user:zoe-unicode-336333107ec8"),
        ("日本語", "user:77710aedc74e"),  # nothing to slug: the hash alone
        ("..", "user:5ec1f7e700f3"),
    ],
)
def test_user_space_keeps_valid_names_and_slugs_the_rest(user: str, space: str) -> None:
    assert user_space(user) == space


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), st.from_regex(SPACE.pattern, fullmatch=True)))
def test_any_user_value_maps_to_a_valid_space_deterministically(user: str) -> None:
    space = user_space(user)
    assert SPACE.ok(space)
    assert user_space(user) == space
    if SPACE.ok(user):
        assert space == user
    else:
        assert space.startswith("user:")


def test_a_recall_failure_forwards_without_memory_and_warns(
    mem: Memory, stub: Stub, proxy: str, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("index exploded")

    monkeypatch.setattr(mem, "context", broken)
    messages = [{"role": "user", "content": "Where do I live?"}]
    with caplog.at_level(logging.WARNING, logger="orcamem.proxy"):
        reply = httpx.post(f"{proxy}/v1/chat/completions", json={"messages": messages})
    assert reply.status_code == 200 and reply.content == COMPLETION_BODY
    assert reply.headers["x-orcamem-memory"] == "failed"
    assert stub.chats()[0]["messages"] == messages
    assert "index exploded" in caplog.text


# -- relay and record ---------------------------------------------------------------------


def test_a_stream_comes_back_byte_for_byte_and_the_reply_is_recorded(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    request = {
        "model": "stub-model",
        "messages": [{"role": "user", "content": "Say hello to Zoë."}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with httpx.stream(
        "POST", f"{proxy}/v1/chat/completions", json=request,
        headers={"x-orcamem-session": "s-42"},
    ) as reply:  # fmt: skip
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "text/event-stream"
        assert reply.headers["x-stub"] == "stream"
        body = b"".join(reply.iter_raw())
    assert body == SSE_BODY
    assert stub.chats()[0]["stream_options"] == {"include_usage": True}
    wait_for(lambda: len(turns(mem, "default")) == 2)
    episodes = list(mem.iter_episodes(space="default"))
    assert [(e.role, e.text) for e in episodes] == [
        ("user", "Say hello to Zoë."),
        ("assistant", SSE_REPLY),
    ]
    assert {e.session_id for e in episodes} == {"s-42"}
    assert episodes[1].meta == {"via": "proxy"}
    assert episodes[0].turn_id == episodes[1].turn_id == reply.headers["x-orcamem-turn"]
    assert episodes[0].turn_id.startswith("xch-")


def test_the_openai_client_streams_through_the_proxy(mem: Memory, proxy: str) -> None:
    client = OpenAI(base_url=f"{proxy}/v1", api_key="x")
    stream = client.chat.completions.create(
        model="stub-model",
        messages=[{"role": "user", "content": "Say hello."}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == SSE_REPLY
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15
    wait_for(lambda: ("assistant", SSE_REPLY) in turns(mem, "default"))


def _post_in_thread(url: str, request: dict[str, Any]) -> tuple[threading.Thread, list[Any]]:
    """POST from a client thread; ``answers`` gets the response (or the httpx error)."""
    answers: list[Any] = []

    def post() -> None:
        try:
            answers.append(httpx.post(url, json=request, timeout=10))
        except httpx.HTTPError as exc:
            answers.append(exc)

    thread = threading.Thread(target=post, daemon=True)
    thread.start()
    return thread, answers


def test_the_question_is_committed_before_the_upstream_is_called(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    question = {"role": "user", "content": "Where do I live?"}
    client, answers = _post_in_thread(
        f"{proxy}/v1/chat/completions", {"model": "block", "messages": [question]}
    )
    try:
        assert stub.called.wait(10), "the upstream was never called"
        with Memory(mem.path) as other:  # a second connection sees only what is committed
            assert turns(other, "default") == [("user", "Where do I live?")]
    finally:
        stub.release.set()
        client.join(10)
    assert answers[0].content == COMPLETION_BODY
    assert turns(mem, "default") == [  # no waiting: the reply was committed before the answer
        ("user", "Where do I live?"),
        ("assistant", "You are a backend engineer in Pune."),
    ]


def test_a_streamed_reply_is_committed_before_done_reaches_the_client(
    mem: Memory, proxy: str
) -> None:
    request = {"model": "stub-model", "stream": True,
               "messages": [{"role": "user", "content": "Say hello."}]}  # fmt: skip
    received, at_done = b"", None
    with httpx.stream("POST", f"{proxy}/v1/chat/completions", json=request) as reply:
        for chunk in reply.iter_raw():
            received += chunk
            if at_done is None and b"[DONE]" in received:
                at_done = turns(mem, "default")
    assert received == SSE_BODY
    assert at_done == [("user", "Say hello."), ("assistant", SSE_REPLY)]


def test_a_retry_with_the_same_idempotency_key_records_the_exchange_once(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    request = {"messages": [{"role": "user", "content": "Where do I live?"}]}
    headers = {"idempotency-key": "req-7f3a"}
    for _ in range(2):
        reply = httpx.post(f"{proxy}/v1/chat/completions", json=request, headers=headers)
        assert reply.content == COMPLETION_BODY
        assert reply.headers["x-orcamem-turn"] == "req-7f3a"
    assert len(stub.chats()) == 2  # both reached the model: only the log is deduplicated
    episodes = list(mem.iter_episodes(space="default"))
    assert [(e.role, e.turn_id) for e in episodes] == [
        ("user", "req-7f3a"),
        ("assistant", "req-7f3a"),
    ]
    assert stub.requests[0]["headers"]["idempotency-key"] == "req-7f3a"  # the upstream's too
    too_long = httpx.post(
        f"{proxy}/v1/chat/completions", json=request, headers={"idempotency-key": "k" * 300}
    )
    assert too_long.status_code == 400 and "Idempotency-Key" in too_long.text
    assert len(stub.chats()) == 2


def test_a_client_leaving_mid_stream_closes_the_upstream_and_keeps_what_was_said(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    request = {"model": "slow", "stream": True,
               "messages": [{"role": "user", "content": "Count slowly."}]}  # fmt: skip
    received = b""
    with httpx.stream("POST", f"{proxy}/v1/chat/completions", json=request) as reply:
        for chunk in reply.iter_raw():
            received += chunk
            if received.count(b"\n\n") >= 3:
                break
    assert stub.closed.wait(5), "the upstream never saw its connection closed"
    assert stub.slow_sent < 200  # stopped long before the 400 words it would have sent
    episodes = wait_for(lambda: len(turns(mem, "default")) == 2 and list(mem.iter_episodes()))
    assert (episodes[0].role, episodes[0].text) == ("user", "Count slowly.")
    partial = episodes[1]
    assert partial.role == "assistant" and partial.meta == {"via": "proxy", "partial": True}
    assert partial.text.startswith("w0 w1 w2")
    assert partial.text.split() == [f"w{i}" for i in range(len(partial.text.split()))]


def test_a_client_leaving_before_the_first_byte_cancels_the_call_and_keeps_the_question(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    request = {"model": "hang", "messages": [{"role": "user", "content": "Think hard."}]}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{proxy}/v1/chat/completions", json=request, timeout=0.3)
    assert stub.closed.wait(5), "the upstream call went on after the client left"
    assert wait_for(lambda: turns(mem, "default")) == [("user", "Think hard.")]


def test_an_upstream_that_does_not_answer_in_time_is_a_504(mem: Memory, stub: Stub) -> None:
    app = proxy_app(mem, upstream=f"{stub.url}/v1", upstream_timeout_s=0.3)
    with serve(app) as url:
        request = {"model": "hang", "messages": [{"role": "user", "content": "Think hard."}]}
        reply = httpx.post(f"{url}/v1/chat/completions", json=request)
    assert reply.status_code == 504
    error = reply.json()["error"]
    assert error["type"] == "UpstreamTimeoutError" and "0.3 s" in error["message"]
    assert stub.closed.wait(5)
    assert turns(mem, "default") == [("user", "Think hard.")]  # asked, never answered


def test_an_upstream_breaking_off_mid_stream_keeps_the_partial_reply(
    mem: Memory, stub: Stub, proxy: str, caplog: Any
) -> None:
    request = {"model": "broken", "stream": True, "messages": [{"role": "user", "content": "Go"}]}
    received = b""
    with (
        caplog.at_level(logging.ERROR),
        httpx.stream("POST", f"{proxy}/v1/chat/completions", json=request) as reply,
    ):
        try:
            for chunk in reply.iter_raw():
                received += chunk
        except httpx.RemoteProtocolError:
            pass  # how a server without the BaseHTTPMiddleware in front tells the client
    assert received == BROKEN_PART
    episodes = wait_for(lambda: len(turns(mem, "default")) == 2 and list(mem.iter_episodes()))
    assert (episodes[1].text, episodes[1].meta) == ("Hello", {"via": "proxy", "partial": True})


def _finished(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when the proxy's relay (and every write it makes) has returned."""
    done = threading.Event()
    call = proxy_module._Relay.__call__

    async def relay(self: Any, *args: Any) -> None:
        try:
            await call(self, *args)
        finally:
            done.set()

    monkeypatch.setattr(proxy_module._Relay, "__call__", relay)
    return done


@pytest.mark.parametrize("status", [400, 401, 429, 500])
def test_upstream_errors_pass_through_and_keep_the_question_without_a_reply(
    mem: Memory, stub: Stub, proxy: str, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished = _finished(monkeypatch)
    reply = httpx.post(
        f"{proxy}/v1/chat/completions",
        json={"model": f"status-{status}", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert reply.status_code == status
    assert reply.json() == {"error": {"message": f"stub error {status}", "code": status}}
    assert reply.headers["retry-after"] == "7"
    assert finished.wait(10)
    episodes = list(mem.iter_episodes(space="default"))
    assert [(e.role, e.text, e.turn_id) for e in episodes] == [
        ("user", "Hi", reply.headers["x-orcamem-turn"])
    ]


def test_a_refused_connection_keeps_the_question_without_a_reply(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    finished = _finished(monkeypatch)
    with serve(proxy_app(mem, upstream=f"http://127.0.0.1:{port}/v1")) as url:
        reply = httpx.post(
            f"{url}/v1/chat/completions", json={"messages": [{"role": "user", "content": "Hi"}]}
        )
        assert finished.wait(10)
    assert reply.status_code == 502
    episodes = list(mem.iter_episodes(space="default"))
    assert [(e.role, e.text, e.turn_id) for e in episodes] == [
        ("user", "Hi", reply.headers["x-orcamem-turn"])
    ]


@contextmanager
def _locked(path: str | None) -> Iterator[None]:
    """Another process's write lock on the database: every write of the proxy fails."""
    other = sqlite3.connect(str(path), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_a_user_turn_that_cannot_be_written_is_an_error_and_nothing_is_forwarded(
    tmp_path: Path, stub: Stub
) -> None:
    config = Config(storage=StorageConfig(busy_timeout_ms=50))
    with Memory(tmp_path / "m.db", config=config) as mem:
        mem.add("a first note, so the space exists")
        app = proxy_app(mem, upstream=f"{stub.url}/v1")
        request = {"messages": [{"role": "user", "content": "Hi"}]}
        with serve(app) as url, _locked(mem.path):
            reply = httpx.post(f"{url}/v1/chat/completions", json=request)
        assert reply.status_code == 503
        assert reply.json()["error"]["type"] == "StoreError"
        assert stub.chats() == []
        assert turns(mem, "default") == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_that_cannot_be_written_never_reaches_the_client_whole(
    tmp_path: Path, stub: Stub, stream: bool
) -> None:
    config = Config(storage=StorageConfig(busy_timeout_ms=50))
    with Memory(tmp_path / "m.db", config=config) as mem:
        app = proxy_app(mem, upstream=f"{stub.url}/v1")
        request = {"model": "block", "stream": stream,
                   "messages": [{"role": "user", "content": "Hi"}]}  # fmt: skip
        with serve(app) as url:
            client, answers = _post_in_thread(f"{url}/v1/chat/completions", request)
            assert stub.called.wait(10)
            with _locked(mem.path):
                stub.release.set()
                client.join(10)
        assert turns(mem, "default") == [("user", "Hi")]
    if stream:  # cut before [DONE]: the client sees a broken stream, not an answer
        assert isinstance(answers[0], httpx.HTTPError) or b"[DONE]" not in answers[0].content
    else:
        assert answers[0].status_code == 503
        assert answers[0].json()["error"]["type"] == "StoreError"


def test_an_unreachable_upstream_is_a_502_that_names_it(mem: Memory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = f"http://127.0.0.1:{port}/v1"
    with TestClient(proxy_app(mem, upstream=upstream), base_url=LOCAL_BASE) as client:
        reply = client.post("/v1/chat/completions", json={"messages": []})
        models = client.get("/v1/models")
    assert reply.status_code == models.status_code == 502
    error = reply.json()["error"]
    assert error["type"] == "UpstreamUnreachableError" and error["status"] == 502
    assert f"{upstream}/chat/completions" in error["message"]
    assert "check that it is running" in error["message"]
    assert f"{upstream}/models" in models.json()["error"]["message"]


def test_an_upstream_password_is_never_in_an_answer_or_a_sleep_report(mem: Memory) -> None:
    """Every key holder reads the 502s and a sleep's failures: the upstream URL's password
    (``http://llm:UpPassw0rd@…``) shows as ``…``, as ``config show`` shows it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = f"http://llm:UpPassw0rdXyz@127.0.0.1:{port}/v1"
    with TestClient(proxy_app(mem, upstream=upstream), base_url=LOCAL_BASE) as client:
        answers = [
            client.post("/v1/chat/completions", json={"messages": []}),
            client.get("/v1/models"),
        ]
    for reply in answers:
        assert reply.status_code == 502
        message = reply.json()["error"]["message"]
        assert "UpPassw0rdXyz" not in message and "http://llm:…@127.0.0.1" in message
    mem.add("I live in Lisbon.", role="user")
    report = mem.sleep(model=OpenAIChat("m", upstream))
    assert report.failures and "UpPassw0rdXyz" not in " ".join(report.failures)


def test_without_an_upstream_the_proxy_says_how_to_name_one(mem: Memory) -> None:
    client = TestClient(
        proxy_app(mem), base_url=LOCAL_BASE
    )  # no lifespan here: the proxy must not need it
    for reply in (
        client.post("/v1/chat/completions", json={"messages": []}),
        client.get("/v1/models"),
        client.post("/v1/embeddings", json={"input": "x"}),
    ):
        assert reply.status_code == 503
        error = reply.json()["error"]
        assert error["type"] == "UpstreamNotConfiguredError"
        assert "orcamem up --upstream URL --model M" in error["message"]


def test_bodies_over_the_limit_are_refused_with_413(stub: Stub, mem: Memory) -> None:
    app = proxy_app(mem, upstream=f"{stub.url}/v1", proxy_max_body_bytes=1000)
    big = {"messages": [{"role": "user", "content": "x" * 2000}]}
    data = json.dumps(big).encode()

    def chunked() -> Iterator[bytes]:  # no content-length: the proxy must count
        for start in range(0, len(data), 256):
            yield data[start : start + 256]

    with serve(app) as url:
        declared = httpx.post(f"{url}/v1/chat/completions", content=data)
        streamed = httpx.post(f"{url}/v1/chat/completions", content=chunked())
        passed = httpx.post(f"{url}/v1/embeddings", content=chunked())
    for reply in (declared, streamed, passed):
        assert reply.status_code == 413
        assert reply.json()["error"]["type"] == "PayloadTooLarge"
        assert "ORCAMEM_PROXY_MAX_BODY_MB" in reply.json()["error"]["message"]
    assert stub.requests == []
    photo = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64," + "A" * 3_000_000}}
    vision = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": "What is it?"}, photo]}]
    }
    with serve(proxy_app(mem, upstream=f"{stub.url}/v1")) as url:  # the default: 32 MiB
        assert httpx.post(f"{url}/v1/chat/completions", json=vision).status_code == 200


def test_bad_json_is_a_400(proxy: str, stub: Stub) -> None:
    for body in (b"{not json", b"[1, 2]"):
        reply = httpx.post(f"{proxy}/v1/chat/completions", content=body)
        assert reply.status_code == 400
        assert reply.json()["error"]["type"] == "InvalidInputError"
    assert stub.requests == []


# -- pass-through -------------------------------------------------------------------------


def test_models_and_other_v1_paths_pass_through_faithfully(stub: Stub, proxy: str) -> None:
    models = httpx.get(f"{proxy}/v1/models")
    assert models.status_code == 200 and models.content == MODELS_BODY
    reply = httpx.request(
        "PATCH",
        f"{proxy}/v1/files/file-1/content?purpose=a%20b&status=418",
        content=b"raw body \x00\xff",
        headers={"x-custom": "kept", "connection": "keep-alive, x-drop-me", "x-drop-me": "1"},
    )
    assert reply.status_code == 418
    assert reply.headers["x-stub"] == "echo"
    assert reply.json()["method"] == "PATCH"
    assert reply.json()["path"] == "/v1/files/file-1/content?purpose=a%20b&status=418"
    forwarded = stub.requests[-1]
    assert forwarded["body"] == b"raw body \x00\xff"
    assert forwarded["headers"]["x-custom"] == "kept"
    assert "x-drop-me" not in forwarded["headers"]  # named in Connection: hop-by-hop
    for method in ("GET", "DELETE", "PUT", "POST"):
        assert httpx.request(method, f"{proxy}/v1/anything").json()["method"] == method
    assert httpx.get(f"{proxy}/v1/a/%2E%2E/secret").status_code == 400


# -- keys and credentials -----------------------------------------------------------------


def test_a_key_for_one_space_cannot_use_another_and_is_never_forwarded(
    mem: Memory, stub: Stub, monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = mem.keys
    _, alice = keys.create(spaces=["user_alice"], admin=False, name="alice", now=NOW)
    app = proxy_app(mem, upstream=f"{stub.url}/v1", require_keys=True)
    question = {"messages": [{"role": "user", "content": "Who am I?"}]}
    bearer = {"authorization": f"Bearer {alice}"}
    with serve(app) as url:
        chat = f"{url}/v1/chat/completions"
        forbidden = [
            httpx.post(chat, json=question, headers={**bearer, "x-orma-space": "user_bob"}),
            httpx.post(chat, json={**question, "user": "user_bob"}, headers=bearer),
            httpx.post(chat, json=question, headers=bearer),  # "default" is not alice's either
        ]
        anonymous = [httpx.post(chat, json=question), httpx.get(f"{url}/v1/models")]
        assert stub.requests == []
        allowed = httpx.post(chat, json=question, headers={**bearer, "x-orma-space": "user_alice"})
        monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream")
        by_user = httpx.post(chat, json={**question, "user": "user_alice"}, headers=bearer)
        models = httpx.get(f"{url}/v1/models", headers={"x-api-key": alice})
    for reply in forbidden:
        assert reply.status_code == 403
        error = reply.json()["error"]
        assert error["type"] == "ForbiddenError" and error["status"] == 403
    for reply in anonymous:
        assert reply.status_code == 401 and reply.json()["error"]["type"] == "AuthError"
    assert allowed.status_code == by_user.status_code == models.status_code == 200
    first, second, third = (r["headers"] for r in stub.requests)
    assert "authorization" not in first and "x-api-key" not in first
    assert second["authorization"] == third["authorization"] == "Bearer sk-upstream"
    assert "x-api-key" not in third
    assert wait_for(lambda: turns(mem, "user_alice"))
    assert turns(mem, "user_bob") == [] and turns(mem, "default") == []


def test_the_space_is_checked_before_the_missing_upstream(mem: Memory) -> None:
    _, alice = mem.keys.create(spaces=["user_alice"], admin=False, name="a", now=NOW)
    client = TestClient(proxy_app(mem, require_keys=True), base_url=LOCAL_BASE)
    chat = {"messages": [{"role": "user", "content": "Hi"}]}
    headers = {"authorization": f"Bearer {alice}"}
    bob = client.post(
        "/v1/chat/completions", json=chat, headers={**headers, "x-orma-space": "user_bob"}
    )
    own = client.post("/v1/chat/completions", json={**chat, "user": "user_alice"}, headers=headers)
    assert (bob.status_code, own.status_code) == (403, 503)


def test_without_keys_the_clients_authorization_reaches_the_upstream(
    stub: Stub, proxy: str
) -> None:
    httpx.post(
        f"{proxy}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "Hi"}]},
        headers={"authorization": "Bearer sk-client"},
    )
    assert stub.requests[0]["headers"]["authorization"] == "Bearer sk-client"


# -- pieces -------------------------------------------------------------------------------


def test_the_reply_reader_survives_any_cut_of_the_stream() -> None:
    for size in (1, 2, 5, 64, len(SSE_BODY)):
        reply = _Reply(CHAT)
        reply.start(httpx.Headers({"content-type": "text/event-stream; charset=utf-8"}))
        for start in range(0, len(SSE_BODY), size):
            reply.feed(SSE_BODY[start : start + size])
        assert reply.text() == SSE_REPLY
    crlf = _Reply(CHAT)
    crlf.start(httpx.Headers({"content-type": "text/event-stream"}))
    crlf.feed(SSE_BODY.replace(b"\n", b"\r\n"))
    assert crlf.text() == SSE_REPLY
    json_reply = _Reply(CHAT)
    json_reply.start(httpx.Headers({"content-type": "application/json"}))
    json_reply.feed(COMPLETION_BODY)
    assert json_reply.text() == "You are a backend engineer in Pune."


@given(st.integers(min_value=0, max_value=len(SSE_BODY)), st.integers(min_value=1, max_value=64))
def test_the_held_back_end_starts_at_done_for_any_cut_of_the_stream(cut: int, size: int) -> None:
    held, passed = _Held(sse=True), b""
    pieces = [SSE_BODY[:cut]] + [SSE_BODY[i : i + size] for i in range(cut, len(SSE_BODY), size)]
    for piece in pieces:
        passed += held.pass_on(piece)
    assert passed == SSE_BODY[: SSE_BODY.index(b"\ndata: [DONE]")]  # nothing of [DONE] got out
    assert passed + held.rest == SSE_BODY
    undone = _Held(sse=True)  # no [DONE] at all: only a tail that might begin one waits
    assert undone.pass_on(b"data: x\n\ndat") == b"data: x\n" and undone.rest == b"\ndat"
    assert undone.pass_on(b"a: y") == b"\ndata: y" and undone.rest == b""
    whole = _Held(sse=False)
    assert whole.pass_on(COMPLETION_BODY) == b"" and whole.rest == COMPLETION_BODY


def test_a_tool_loop_records_the_user_message_once() -> None:
    user = {"role": "user", "content": "Weather in Pune?"}
    assert _asked([{"role": "system", "content": "s"}, user]).unanswered == "Weather in Pune?"
    tool_loop = [user, {"role": "assistant", "tool_calls": []}, {"role": "tool", "content": "31C"}]
    later = _asked(tool_loop)
    assert later.unanswered == "" and (later.text, later.step, later.answered) == (
        "Weather in Pune?",
        2,
        True,
    )
    assert _asked([{"role": "system", "content": "only"}]).text == ""
    assert _asked([{"role": ["user"], "content": "odd"}]).text == ""  # no 500 on a list role


def test_each_continue_is_its_own_exchange_and_a_tool_loops_answer_keeps_its_step(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    """A second "continue" after a new answer is a new exchange (its answer was dropped as a
    retry of the first); a tool loop's later request is its question's turn id and a step,
    the same on a retry."""
    opening = [{"role": "user", "content": "Write a parser."}]
    chat(proxy, opening, model="fresh")
    one = [
        *opening,
        {"role": "assistant", "content": "PART ONE"},
        {"role": "user", "content": "continue"},
    ]
    chat(proxy, one, model="fresh")
    chat(proxy, one, model="fresh")  # a regenerate: the same exchange
    chat(
        proxy,
        [
            *one,
            {"role": "assistant", "content": "PART TWO"},
            {"role": "user", "content": "continue"},
        ],
        model="fresh",
    )
    said = [(e.role, e.text) for e in mem.iter_episodes()]
    assert [text for role, text in said if role == "user"] == [
        "Write a parser.",
        "continue",
        "continue",
    ]
    assert len([role for role, _ in said if role == "assistant"]) == 3
    question = [{"role": "user", "content": "Weather in Pune?"}]
    asked = chat(proxy, question, model="fresh").headers["x-orcamem-turn"]
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function"}]}
    loop = [*question, call, {"role": "tool", "tool_call_id": "c1", "content": "31C"}]
    turns_of = {chat(proxy, loop, model="fresh").headers["x-orcamem-turn"] for _ in range(3)}
    assert turns_of == {f"{asked}-2"}
    weather = [e for e in mem.iter_episodes() if e.turn_id and e.turn_id.startswith(asked)]
    assert [(e.role, e.turn_id) for e in weather] == [
        ("user", asked),
        ("assistant", asked),
        ("assistant", f"{asked}-2"),
    ]


def test_an_answer_over_the_logs_limit_reaches_the_client_and_is_kept_cut(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    asked = "Dump the log: " + "x" * 1_200_000 + "\u0007"  # over 1 MiB, with a BEL in it
    reply = chat(proxy, [{"role": "user", "content": asked}], model="big")
    assert len(reply.json()["choices"][0]["message"]["content"]) > 1_600_000  # all of it
    question, answer = list(mem.iter_episodes())
    assert question.text == asked[: len(question.text)] and len(question.text.encode()) <= 2**20
    assert question.meta["cut"] == len(asked) - len(question.text)
    assert answer.text.startswith("Here it is: ab ab") and len(answer.text.encode()) <= 2**20
    assert answer.meta["cut"] > 500_000


def test_a_stream_that_ends_in_an_error_event_is_a_partial_reply() -> None:
    said = _chunk([{"index": 0, "delta": {"content": "Got it: "}}])
    failed = {"error": {"message": "the model crashed", "type": "server_error"}}
    body = f"data: {json.dumps(said)}\n\ndata: {json.dumps(failed)}\n\ndata: [DONE]\n\n"
    reply = _Reply(CHAT)
    reply.start(httpx.Headers({"content-type": "text/event-stream"}))
    reply.feed(body.encode())
    assert reply.text() == "Got it: " and reply.broke_off
    whole = _Reply(CHAT)
    whole.start(httpx.Headers({"content-type": "text/event-stream"}))
    whole.feed(SSE_BODY)
    assert whole.text() == SSE_REPLY and not whole.broke_off


def test_a_models_own_done_does_not_hold_the_stream() -> None:
    said = _chunk([{"index": 0, "delta": {"content": "Checklist: [DONE] write tests"}}])
    body = f"data: {json.dumps(said)}\n\n".encode() + SSE_BODY
    held = _Held(sse=True)
    assert held.pass_on(body) == body[: body.index(b"\ndata: [DONE]")]  # not cut at its text
    reply = _Reply(CHAT)
    reply.start(httpx.Headers({"content-type": "text/event-stream"}))
    reply.feed(body)
    assert reply.text().startswith("Checklist: [DONE] write tests")


def test_install_composes_with_other_lifespans_and_is_idempotent(mem: Memory, stub: Stub) -> None:
    events: list[str] = []

    @asynccontextmanager
    async def other(app: FastAPI) -> Any:
        events.append("other up")
        yield {"from_other": True}
        events.append("other down")

    app = FastAPI(lifespan=other)
    app.state.memory = mem
    app.state.settings = ServerSettings(upstream=f"{stub.url}/v1")
    app.state.keys = None
    install(app)
    routes = len(app.routes)
    install(app)
    assert len(app.routes) == routes
    # Without a lifespan (TestClient outside `with`) each request brings its own client.
    assert TestClient(app, base_url=LOCAL_BASE).get("/v1/models").content == MODELS_BODY
    assert getattr(app.state, "upstream_http", None) is None
    with TestClient(app, base_url=LOCAL_BASE) as client:
        pooled = app.state.upstream_http
        assert isinstance(pooled, httpx.AsyncClient) and not pooled.is_closed
        assert client.get("/v1/models").content == MODELS_BODY
        assert events == ["other up"]
    assert pooled.is_closed and events == ["other up", "other down"]


# -- a memory that does not poison itself (issue 13 item 3) -------------------------------


def chat(proxy: str, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    reply = httpx.post(f"{proxy}/v1/chat/completions", json={"messages": messages, **extra})
    assert reply.status_code == 200, reply.text
    return reply


def test_each_conversation_is_its_own_session_and_the_header_still_wins(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    system = {"role": "system", "content": "Be brief."}
    first = [system, {"role": "user", "content": "Hi, I live in Pune."}]
    chat(proxy, first)
    chat(proxy, [*first, COMPLETION["choices"][0]["message"], {"role": "user", "content": "Ok"}])
    bakery = [system, {"role": "user", "content": "Hi, I work at a bakery."}]
    chat(proxy, bakery)
    headed = [{"role": "user", "content": "Hi, I live in Pune."}]
    httpx.post(
        f"{proxy}/v1/chat/completions",
        json={"messages": headed},
        headers={"x-orcamem-session": "mine"},
    )
    sessions = [(e.text, e.session_id) for e in mem.iter_episodes() if e.role == "user"]
    pune = conversation_session(first)
    assert sessions == [
        ("Hi, I live in Pune.", pune),
        ("Ok", pune),  # the next request of the same conversation
        ("Hi, I work at a bakery.", conversation_session(bakery)),
        ("Hi, I live in Pune.", "mine"),
    ]
    assert pune.startswith("chat-") and sessions[2][1] != pune
    assert conversation_session([{"role": "system", "content": "only"}]) == "proxy"


def test_the_same_user_text_re_sent_in_a_conversation_is_stored_once(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    opening = [{"role": "user", "content": "Hi"}]
    answer = COMPLETION["choices"][0]["message"]
    first = chat(proxy, opening)
    again = chat(proxy, opening)  # a regenerate: the same request again
    thanks = [*opening, answer, {"role": "user", "content": "Thanks!"}]
    chat(proxy, thanks)
    chat(proxy, [*thanks, answer, {"role": "user", "content": "Thanks!"}])
    hello = [{"role": "user", "content": "Hello"}, answer, {"role": "user", "content": "Thanks!"}]
    chat(proxy, hello)
    assert len(stub.chats()) == 5  # all reached the model: only the log is deduplicated
    assert first.headers["x-orcamem-turn"] == again.headers["x-orcamem-turn"]
    asked = [(e.text, e.session_id) for e in mem.iter_episodes() if e.role == "user"]
    assert asked == [
        ("Hi", conversation_session(opening)),
        ("Thanks!", conversation_session(opening)),
        ("Thanks!", conversation_session(hello)),  # another conversation, the same words
    ]
    assert [e.role for e in mem.iter_episodes()][:2] == ["user", "assistant"]  # one answer to "Hi"


def test_an_echo_of_the_block_and_orcamems_markup_are_not_recorded(
    mem: Memory, stub: Stub, proxy: str
) -> None:
    mem.remember("I work as a night-shift nurse at St. Martha's hospital.")
    mem.observe("user", "My home city is Bangalore.", session_id="earlier")
    pasted = "Where do I work? [LOG: 2026-10-01 user: I work at a bank.][user.employer: bank]"
    reply = chat(proxy, [{"role": "user", "content": pasted}], model="echo")
    assert reply.headers["x-orcamem-memory"] == "injected"
    block = stub.chats()[0]["messages"][0]["content"]
    assert "night-shift nurse" in block and reply.json()["choices"][0]["message"]["content"] == (
        f"Noted. {block}"
    )  # the client got the echo as it was; the log did not
    question, answer = list(mem.iter_episodes())[-2:]
    assert (question.role, question.text) == ("user", "Where do I work?")
    assert (answer.role, answer.text) == ("assistant", "Noted.")
    assert answer.meta == {"via": "proxy", "stripped": len(block) + 1}
    assert not [e for e in mem.iter_episodes() if e.role == "assistant" and "nurse" in e.text]


def test_only_markup_is_not_a_turn_and_an_echo_cut_mid_item_goes_too() -> None:
    mem = Memory(":memory:")
    mem.observe("user", "I drive a blue 2019 Honda Civic hatchback.")
    mem.forbid("Never suggest recipes with peanuts.", always=True)
    block = mem.recall("What car do I drive?")
    mem.close()
    assert "[FORBIDDEN: " in block and "[LOG: " in block
    kept = strip_module.strip(f"As I recall: {block[-60:]} Drive safely!", block)
    assert kept.startswith("As I recall") and kept.endswith(" Drive safely!")
    assert "Civic" not in kept and "]" not in kept and len(kept) < 30
    assert strip_module.strip(block) == ""  # a pasted block is markup alone
    said = "Use [brackets] and a.b: c, and ## Memory as a title."
    assert strip_module.strip(said, block) == said  # nothing of the block: kept as written
    cut = "What is my favourite colour? [LOG: 2026-11- I'm sorry for the confusion."
    assert strip_module.strip(cut) == "What is my favourite colour? I'm sorry for the confusion."


def test_strip_keeps_code_and_indentation_and_leaves_no_fragment() -> None:
    code = "Why is this slow?\n\ndef read(self):\n    chunk = self.buf[self.pos: self.pos + 4]"
    assert strip_module.strip(code) == code  # a slice is no state item
    sliced = "Slice data[obj.start: obj.end] or f(x)[a.b: c]."
    assert strip_module.strip(sliced) == sliced
    pasted = "[LOG: 2026-12-04 user: We ship on Fridays.]\ndef ship():\n    if ready:\n        go()"
    assert strip_module.strip(pasted) == "def ship():\n    if ready:\n        go()"
    block = "## Memory\n[LOG: 2026-12-04 assistant: You drink green tea (answer 1).]"
    assert strip_module.strip("You drink green tea (answer 2).", block) == ""  # not "2)."
    assert strip_module.strip("Yes! You drink green tea (answer 2). Enjoy.", block) == (
        "Yes! Enjoy."
    )


def test_an_assistants_guess_ranks_below_what_the_user_said(mem: Memory) -> None:
    mem.observe("user", "My home city is Bangalore.", session_id="a")
    mem.observe("assistant", "Noted, you live in Bangalore.", session_id="a")
    mem.observe("user", "What is my home city?", session_id="b")
    mem.observe(
        "assistant",
        "As an AI assistant I do not have a home city, but your home city is Paris.",
        session_id="b",
    )
    hits = mem.search("What is my home city?").hits
    assert hits[0].text == "My home city is Bangalore."
    assert hits[0].breakdown.get("prior", 0.0) == 0.0
    guess = next(hit for hit in hits if "Paris" in hit.text)
    assert guess.breakdown["prior"] < 0


def test_what_the_assistant_said_never_becomes_a_fact(mem: Memory) -> None:
    from local_memory_helpers import ScriptedModel

    user = mem.observe("user", "Where do I live?")
    guess = mem.observe("assistant", "I believe you live in Paris.")
    fact = {"kind": "state", "attribute": "home", "value": "Paris", "cites": []}
    model = ScriptedModel({"items": [{**fact, "cites": [f"ep-{guess.id}:s1"]}]})
    report = mem.sleep(model=model)
    assert mem.facts() == []
    [(claim, reason)] = report.rejected
    assert claim.value == "Paris" and reason.startswith("speaker: ") and "remember()" in reason
    said = mem.observe("user", "Yes, I live in Paris.")  # the user's own words: a fact
    told = ScriptedModel({"items": [{**fact, "cites": [f"ep-{said.id}:s1"]}]})
    assert mem.sleep(model=told).rejected == []
    assert [(m.attribute, m.value) for m in mem.facts()] == [("home", "Paris")]
    assert user.id < guess.id < said.id


def test_the_strip_and_session_doctests_hold() -> None:
    import doctest

    assert doctest.testmod(strip_module).failed == 0
    assert doctest.testmod(proxy_module).failed == 0


# -- docs ---------------------------------------------------------------------------------


def doc_blocks(language: str) -> list[str]:
    text = (ROOT / "docs" / "proxy.md").read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


def run_snippet(code: str, proxy: str) -> str:
    assert "http://localhost:8080/v1" in code
    out = StringIO()
    with redirect_stdout(out):
        exec(compile(code.replace("http://localhost:8080", proxy), "proxy.md", "exec"), {})
    return out.getvalue()


def test_the_docs_openai_snippets_run(mem: Memory, stub: Stub, proxy: str) -> None:
    snippets = [code for code in doc_blocks("py") if "client.chat.completions" in code]
    assert len(snippets) == 2
    assert run_snippet(snippets[0], proxy).strip() == "You are a backend engineer in Pune."
    assert stub.requests[-1]["headers"].get("authorization") == "Bearer none"
    assert run_snippet(snippets[1], proxy).strip() == SSE_REPLY
    wait_for(
        lambda: ("assistant", "You are a backend engineer in Pune.") in turns(mem, "user_alice")
    )


def test_the_docs_curl_snippet_runs(mem: Memory, stub: Stub, proxy: str) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    [snippet] = [code for code in doc_blocks("bash") if code.startswith("curl ")]
    done = subprocess.run(
        ["bash", "-c", snippet.replace("http://localhost:8080", proxy)],
        capture_output=True, check=True, timeout=20,
    )  # fmt: skip
    assert done.stdout == COMPLETION_BODY
    wait_for(lambda: ("user", "Who am I?") in turns(mem, "user_123"))


def test_the_docs_langchain_snippet_runs(mem: Memory, stub: Stub, proxy: str) -> None:
    pytest.importorskip("langchain_openai")
    [snippet] = [code for code in doc_blocks("py") if "langchain_openai" in code]
    assert run_snippet(snippet, proxy).strip() == "You are a backend engineer in Pune."
    assert stub.chats()[-1]["messages"][-1] == {"role": "user", "content": "Who am I?"}
    wait_for(lambda: ("user", "Who am I?") in turns(mem, "user_alice"))


# -- the real model -----------------------------------------------------------------------


@pytest.mark.slow
def test_a_real_model_behind_the_proxy_gets_memory_and_its_answers_are_recorded(
    mem: Memory, llama_server: str
) -> None:
    space = {"x-orma-space": "e2e"}
    settings = {"temperature": 0, "max_tokens": 12, "extra_headers": space}
    with serve(proxy_app(mem, upstream=llama_server)) as url:
        client = OpenAI(base_url=f"{url}/v1", api_key="x", max_retries=0)
        first = client.chat.completions.create(
            model="smollm2",
            messages=[
                {"role": "user", "content": "My name is Zorblat and my favourite colour is teal."}
            ],
            **settings,
        )
        said = first.choices[0].message.content
        assert said
        wait_for(lambda: len(turns(mem, "e2e")) == 2, timeout=10)
        assert turns(mem, "e2e")[1] == ("assistant", said)

        question = [{"role": "user", "content": "What is my favourite colour?"}]
        raw = client.chat.completions.with_raw_response.create(
            model="smollm2", messages=question, **settings
        )
        assert raw.headers["x-orcamem-memory"] == "injected"
        with_memory = raw.parse().usage.prompt_tokens
        direct = OpenAI(base_url=llama_server, api_key="x", max_retries=0)
        without = direct.chat.completions.create(
            model="smollm2", messages=question, temperature=0, max_tokens=1
        ).usage.prompt_tokens
        block = mem.recall(question[0]["content"], space="e2e")
        assert "teal" in block
        assert with_memory > without + 20  # the memory block reached the model

        block = mem.recall(question[0]["content"], space="e2e")  # what the stream is given
        again = {**settings, "extra_headers": {**space, "x-orcamem-session": "again"}}
        stream = client.chat.completions.create(
            model="smollm2", messages=question, stream=True, **again
        )
        streamed = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert streamed
        kept = strip_module.strip(streamed, block)  # what it did not copy from the block
        wait_for(lambda: turns(mem, "e2e")[-1] == ("assistant", kept) or not kept, timeout=10)
    said = turns(mem, "e2e")
    assert [text for role, text in said if role == "user"] == [
        "My name is Zorblat and my favourite colour is teal.",
        *[question[0]["content"]] * 2,  # the same question in two sessions
    ]
    assert "[LOG" not in " ".join(text for _, text in said)


def test_proxy_latency_bench_reports_its_numbers(tmp_path: Path) -> None:
    from orcamem.bench.proxy import proxy_latency

    result = proxy_latency(records=300, requests=20, workdir=str(tmp_path))
    assert result["records"] == 300 and result["requests"] == 20
    for key in ("added_p50_ms", "added_p95_ms", "direct_p50_ms", "proxy_p50_ms"):
        assert isinstance(result[key], float)
    assert result["proxy_p50_ms"] >= result["direct_p50_ms"]
    assert result["memory_injected"] == 20
    assert {"cores", "load_1m"} <= set(result["machine"])


def test_a_models_guess_stays_out_of_the_block_once_the_user_said_it(mem: Memory) -> None:
    for number, chat in enumerate(
        ("We watched a film.", "The train was late.", "I bought apples.", "It rained all day.")
    ):
        mem.observe("user", chat, session_id=f"x{number}")  # enough lines to calibrate the gate
        mem.observe("assistant", "Sounds good.", session_id=f"x{number}")
    mem.observe("user", "My home city is Bangalore.", session_id="a")
    mem.observe("user", "Where is my home city?", session_id="b")
    mem.observe("assistant", "I believe your home city is Paris.", session_id="b")
    block = mem.recall("What is my home city?")
    assert "Bangalore" in block and "Paris" not in block
    mem.observe("assistant", "Your build runs every Monday at 09:00 via cron.", session_id="c")
    assert "cron" in mem.recall("When does the cron build run?")  # alone, a reply still counts
