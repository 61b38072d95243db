"""The proxy's memory in every dialect: OpenAI Responses (``/v1/responses``) and Anthropic
Messages (``/v1/messages``), JSON and streaming, through the official ``openai`` and
``anthropic`` clients; and the block merged into the client's own system text (also in chat
completions) instead of a second system message.

The upstream is a stub model server on 127.0.0.1 (``http.server``) that speaks both wire
formats as their documentation shows them (Responses: ``response.created`` …
``response.output_text.delta`` … ``response.completed``; Messages: ``message_start`` …
``content_block_delta`` … ``message_stop``) and records every request it gets, so a test sees
exactly what the proxy forwarded. Its ``model`` picks the answer: ``echo`` repeats the
system text it received (a model echoing its memory block), ``say:<text>`` says the text,
``status-<n>`` answers that error status, anything else says ``REPLY``.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest
from openai import OpenAI

from orcamem import Memory
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http.dialects import MESSAGES, RESPONSES
from orcamem.interfaces.http.proxy import _Held, _Reply, install
from servers import serve

REPLY = "You are a nurse, and you live in Lyon ✓"
PIECES = ["You are", " a nurse,", " and you", " live in Lyon ✓"]
FACT = "I work as a nurse and I live in Lyon."
QUESTION = "What is my job and where do I live?"


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(
        f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode()
        for e in events
    )


def _response(text: str) -> dict[str, Any]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    return {"id": "resp_1", "object": "response", "created_at": 1, "model": "stub-model",
            "status": "completed", "output": [message], "parallel_tool_calls": True,
            "tool_choice": "auto", "tools": []}  # fmt: skip


def _responses_stream(pieces: list[str]) -> bytes:
    done = _response("".join(pieces))
    events = [{"type": "response.created", "sequence_number": 0,
               "response": {**done, "status": "in_progress", "output": []}}]  # fmt: skip
    events += [
        {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
         "content_index": 0, "delta": piece, "sequence_number": i + 1, "logprobs": []}
        for i, piece in enumerate(pieces)
    ]  # fmt: skip
    events.append({"type": "response.completed", "sequence_number": 99, "response": done})
    return _sse(events)


def _message(text: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "stub-model",
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 5}}  # fmt: skip


def _messages_stream(pieces: list[str]) -> bytes:
    start = {**_message(""), "content": [], "stop_reason": None}
    events = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        *[
            {"type": "content_block_delta", "index": 0,
             "delta": {"type": "text_delta", "text": piece}}
            for piece in pieces
        ],
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return _sse(events)


def _system_text(path: str, payload: dict[str, Any]) -> str:
    if path.endswith("/responses"):
        return str(payload.get("instructions", ""))
    system = payload.get("system", "")
    if isinstance(system, list):
        return "\n".join(part["text"] for part in system)
    return str(system)


class Upstream:
    """A stub model server speaking Responses and Messages; ``requests`` holds what it got."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["content-length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                upstream.requests.append((self.path, payload, headers))
                pieces = PIECES
                model = str(payload.get("model"))
                if model.startswith("status-"):
                    status = int(model.removeprefix("status-"))
                    error = json.dumps({"type": "error", "error": {"type": "rate_limit_error",
                                        "message": f"stub {status}"}}).encode()  # fmt: skip
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(error)))
                    self.end_headers()
                    self.wfile.write(error)
                    return
                if model.startswith("say:"):
                    pieces = [model.removeprefix("say:")]
                if model == "echo":
                    pieces = ["Noted. ", _system_text(self.path, payload)]
                responses = self.path == "/v1/responses"
                if payload.get("stream"):
                    body = (_responses_stream if responses else _messages_stream)(pieces)
                    kind = "text/event-stream"
                else:
                    whole = "".join(pieces)
                    body = json.dumps(_response(whole) if responses else _message(whole)).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                for start in range(0, len(body), 11):  # small pieces: cut lines and characters
                    self.wfile.write(body[start : start + 11])
                    self.wfile.flush()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Upstream:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def last(self) -> dict[str, Any]:
        return self.requests[-1][1]


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    with Upstream() as server:
        yield server


@pytest.fixture
def proxy(mem: Memory, upstream: Upstream) -> Iterator[str]:
    app = create_app(mem, ServerSettings(upstream=f"{upstream.url}/v1", model="stub-model"))
    install(app)
    with serve(app) as url:
        yield url


def _turns(mem: Memory, space: str) -> list[tuple[str | None, str]]:
    return [(e.role, e.text) for e in mem.iter_episodes(space=space) if e.kind == "turn"]


def _openai(proxy: str, space: str) -> OpenAI:
    return OpenAI(base_url=f"{proxy}/v1", api_key="none", default_headers={"x-orma-space": space})


def _anthropic(proxy: str, space: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=proxy, api_key="none", default_headers={"x-orma-space": space}
    )


# -- OpenAI Responses -----------------------------------------------------------------------


def test_responses_merges_the_block_into_instructions_and_records_the_exchange(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    block = mem.recall(QUESTION, space="alice")
    raw = _openai(proxy, "alice").responses.with_raw_response.create(
        model="stub-model", instructions="Be brief.", input=QUESTION, temperature=0.2
    )
    response = raw.parse()
    assert response.output_text == REPLY
    assert raw.headers["x-orcamem-memory"] == "injected"
    sent = upstream.last()
    assert "Lyon" in block
    assert sent["instructions"] == f"Be brief.\n\n{block}"
    assert sent["input"] == QUESTION and sent["temperature"] == 0.2
    assert _turns(mem, "alice")[-2:] == [("user", QUESTION), ("assistant", REPLY)]
    episodes = [e for e in mem.iter_episodes(space="alice") if e.kind == "turn"]
    assert episodes[0].turn_id == episodes[1].turn_id == raw.headers["x-orcamem-turn"]


def test_responses_streams_and_the_reply_is_on_disk_before_response_completed(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    stream = _openai(proxy, "alice").responses.create(
        model="stub-model",
        input=[{"role": "user", "content": [{"type": "input_text", "text": QUESTION}]}],
        stream=True,
    )
    deltas, recorded_at_completion = [], None
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        if event.type == "response.completed":
            with Memory(mem.path) as other:  # what is committed, from a second connection
                recorded_at_completion = _turns(other, "alice")
    assert "".join(deltas) == REPLY
    assert recorded_at_completion == [("user", QUESTION), ("assistant", REPLY)]
    assert "Lyon" in upstream.last()["instructions"]  # no instructions given: the block is


def test_responses_without_instructions_merges_into_the_inputs_system_message(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    _openai(proxy, "alice").responses.create(
        model="stub-model",
        input=[
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": QUESTION},
        ],
    )
    sent = upstream.last()
    assert "instructions" not in sent
    [system, user] = sent["input"]
    assert system["content"].startswith("Answer in French.\n\n") and "Lyon" in system["content"]
    assert user == {"role": "user", "content": QUESTION}


def test_responses_with_nothing_to_recall_is_forwarded_byte_for_byte(
    upstream: Upstream, proxy: str
) -> None:
    body = b'{"model": "mine",  "input": "Hello?"}'
    reply = httpx.post(
        f"{proxy}/v1/responses", content=body, headers={"content-type": "application/json"}
    )
    assert reply.status_code == 200 and reply.headers["x-orcamem-memory"] == "none"
    assert upstream.requests[-1][0] == "/v1/responses"


# -- Anthropic Messages ---------------------------------------------------------------------


def test_messages_merges_the_block_into_system_and_records_the_exchange(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    block = mem.recall(QUESTION, space="alice")
    raw = _anthropic(proxy, "alice").messages.with_raw_response.create(
        model="stub-model",
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": QUESTION}],
    )
    message = raw.parse()
    assert message.content[0].text == REPLY  # type: ignore[union-attr]
    assert raw.headers["x-orcamem-memory"] == "injected"
    sent = upstream.last()
    assert sent["system"] == f"Be brief.\n\n{block}"
    assert sent["messages"] == [{"role": "user", "content": QUESTION}]
    assert sent["max_tokens"] == 64
    assert _turns(mem, "alice")[-2:] == [("user", QUESTION), ("assistant", REPLY)]


def test_messages_streams_through_the_official_client_and_holds_message_stop(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    with _anthropic(proxy, "alice").messages.stream(
        model="stub-model",
        max_tokens=64,
        system=system,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
    ) as stream:
        text = "".join(stream.text_stream)
        with Memory(mem.path) as other:  # the stream has ended: the reply is committed
            recorded = _turns(other, "alice")
        final = stream.get_final_message()
    assert text == REPLY and final.stop_reason == "end_turn"
    assert recorded == [("user", QUESTION), ("assistant", REPLY)]
    sent_system = upstream.last()["system"]
    assert sent_system[0] == system[0]  # the client's block, its cache_control kept
    assert sent_system[1]["type"] == "text" and "Lyon" in sent_system[1]["text"]
    assert len(sent_system) == 2


def test_messages_without_system_gets_the_block_as_system_and_metadata_user_is_the_space(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="bob_1")
    anthropic.Anthropic(base_url=proxy, api_key="none").messages.create(
        model="stub-model",
        max_tokens=64,
        metadata={"user_id": "bob_1"},
        messages=[{"role": "user", "content": QUESTION}],
    )
    assert "Lyon" in upstream.last()["system"]
    assert ("user", QUESTION) in _turns(mem, "bob_1")


def test_an_echoed_block_is_not_recorded_in_either_dialect(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    _anthropic(proxy, "alice").messages.create(
        model="echo", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
    )
    _openai(proxy, "alice").responses.create(model="echo", input="And my job, again?")
    replies = [text for role, text in _turns(mem, "alice") if role == "assistant"]
    assert replies == ["Noted.", "Noted."]  # the block the model repeated is stripped


def test_a_tool_loop_records_the_question_once_and_a_conversation_is_one_session(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    client = _anthropic(proxy, "alice")
    first = [{"role": "user", "content": "Weather in Lyon?"}]
    client.messages.create(model="stub-model", max_tokens=64, messages=first)  # type: ignore[arg-type]
    loop = [
        *first,
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Lyon"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]},
    ]  # fmt: skip
    client.messages.create(model="say:Sunny, 24 degrees.", max_tokens=64, messages=loop)  # type: ignore[arg-type]
    episodes = [e for e in mem.iter_episodes(space="alice") if e.kind == "turn"]
    assert [(e.role, e.text) for e in episodes] == [
        ("user", "Weather in Lyon?"), ("assistant", REPLY), ("assistant", "Sunny, 24 degrees."),
    ]  # fmt: skip
    assert len({e.session_id for e in episodes}) == 1


def test_an_upstream_error_passes_through_with_the_question_kept_and_no_reply(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    client = anthropic.Anthropic(
        base_url=proxy, api_key="none", max_retries=0, default_headers={"x-orma-space": "e"}
    )
    with pytest.raises(anthropic.RateLimitError, match="stub 429"):
        client.messages.create(
            model="status-429", max_tokens=8, messages=[{"role": "user", "content": QUESTION}]
        )
    streamed = {"model": "status-429", "max_tokens": 8}
    with (
        pytest.raises(anthropic.RateLimitError),  # streaming: the same
        client.messages.stream(
            **streamed, messages=[{"role": "user", "content": "Again?"}]
        ) as stream,  # type: ignore[arg-type]
    ):
        list(stream.text_stream)
    assert _turns(mem, "e") == [("user", QUESTION), ("user", "Again?")]


def test_a_lone_surrogate_escape_in_the_system_text_is_forwarded_not_a_500(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    mem.add(FACT, space="alice")
    body = json.dumps(
        {"model": "stub-model", "max_tokens": 8, "system": "Be brief \ud800",
         "messages": [{"role": "user", "content": QUESTION}]}
    )  # fmt: skip
    assert "\\ud800" in body  # json.dumps escapes it: valid JSON, not valid UTF-8 once decoded
    reply = httpx.post(
        f"{proxy}/v1/messages", content=body,
        headers={"content-type": "application/json", "x-orma-space": "alice"},
    )  # fmt: skip
    assert reply.status_code == 200 and reply.headers["x-orcamem-memory"] == "injected"
    sent = upstream.last()["system"]
    assert sent.startswith("Be brief \ud800\n\n") and "Lyon" in sent


@pytest.mark.parametrize("dialect", [RESPONSES, MESSAGES])
def test_a_streams_end_is_held_wherever_the_chunks_cut_its_marker(dialect: Any) -> None:
    body = (_responses_stream if dialect is RESPONSES else _messages_stream)(PIECES)
    at = body.index(dialect.end)
    for size in (1, 3, 7, len(body)):
        held, passed = _Held(sse=True, end=dialect.end), b""
        for start in range(0, len(body), size):
            passed += held.pass_on(body[start : start + size])
        assert passed == body[:at] and passed + held.rest == body  # nothing lost, the end kept
        reply = _Reply(dialect)
        reply.start(httpx.Headers({"content-type": "text/event-stream"}))
        for start in range(0, len(body), size):
            reply.feed(body[start : start + size])
        assert reply.text() == REPLY


# -- chat completions: one system message ---------------------------------------------------


def test_chat_completions_merge_into_the_clients_system_message(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    spaces = ["bare", "own", "listed"]
    for space in spaces:
        mem.add(FACT, space=space)
    blocks = [mem.recall(QUESTION, space=space) for space in spaces]
    seen: list[dict[str, Any]] = []

    class Chat(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            seen.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
            body = json.dumps({"id": "c", "object": "chat.completion", "created": 1,
                               "model": "m", "choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "ok"}}]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        app = create_app(
            mem, ServerSettings(upstream=f"http://127.0.0.1:{server.server_address[1]}/v1")
        )
        install(app)
        with serve(app) as url:
            parts = [{"type": "text", "text": "Be brief."}]
            asked = [
                [{"role": "user", "content": QUESTION}],
                [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QUESTION}],
                [{"role": "developer", "content": parts}, {"role": "user", "content": QUESTION}],
            ]
            for space, messages in zip(spaces, asked, strict=True):
                _openai(url, space).chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    finally:
        server.shutdown()
        server.server_close()
    bare, own, listed = (request["messages"] for request in seen)
    assert "Lyon" in blocks[0]
    assert bare == [{"role": "system", "content": blocks[0]}, {"role": "user", "content": QUESTION}]
    assert own == [
        {"role": "system", "content": f"Be brief.\n\n{blocks[1]}"},
        {"role": "user", "content": QUESTION},
    ]
    assert listed[0] == {
        "role": "developer",
        "content": [*parts, {"type": "text", "text": blocks[2]}],
    }
    assert [m["role"] for m in listed] == ["developer", "user"]


# -- the docs' snippets ---------------------------------------------------------------------


def test_the_docs_responses_and_anthropic_snippets_run(
    mem: Memory, upstream: Upstream, proxy: str
) -> None:
    text = (Path(__file__).resolve().parents[1] / "docs" / "proxy.md").read_text("utf-8")
    snippets = re.findall(r"```py\n(.*?)```", text, re.S)
    [responses] = [code for code in snippets if "client.responses.create" in code]
    [messages] = [code for code in snippets if "import anthropic" in code]
    mem.add(FACT, space="user_alice")
    for code, path in [(responses, "/v1/responses"), (messages, "/v1/messages")]:
        out = StringIO()
        with redirect_stdout(out):
            exec(compile(code.replace("http://localhost:8080", proxy), "proxy.md", "exec"), {})
        assert out.getvalue().strip() == REPLY
        assert upstream.requests[-1][0] == path and "Lyon" in _system_text(path, upstream.last())
    assert _turns(mem, "user_alice").count(("user", QUESTION)) == 1  # one conversation, once


def test_with_keys_an_anthropic_upstream_gets_its_key_from_the_environment(
    mem: Memory, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``--require-keys`` the client's ``x-api-key`` is its orcamem key (never
    forwarded); ``$ANTHROPIC_API_KEY`` where orcamem runs is what the upstream gets."""
    _, alice = mem.keys.create(
        spaces=["alice"], admin=False, name="alice", now="2026-11-01T10:00:00Z"
    )
    settings = ServerSettings(upstream=f"{upstream.url}/v1", model="stub-model", require_keys=True)
    app = create_app(mem, settings)
    install(app)
    with serve(app) as url:
        client = anthropic.Anthropic(
            base_url=url, api_key=alice, default_headers={"x-orma-space": "alice"}
        )
        client.messages.create(
            model="stub-model", max_tokens=64, messages=[{"role": "user", "content": QUESTION}]
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-upstream")
        client.messages.create(
            model="stub-model", max_tokens=64, messages=[{"role": "user", "content": "Again?"}]
        )
    first, second = (headers for _, _, headers in upstream.requests)
    assert "x-api-key" not in first  # the orcamem key stays with orcamem
    assert second["x-api-key"] == "sk-ant-upstream"
