"""``proxy_loop``: does memory poison itself through the proxy? (issue 13's proxy loop)

A scripted user talks to the real proxy app (``create_app`` + the proxy routes under uvicorn
on 127.0.0.1) over a few conversations, stating the facts of ``context.FACTS`` early and then
asking about them, asking for unrelated things and making small talk, ``exchanges`` times in
all. The client sends what a chat UI sends: its whole history, no session header. The
upstream is a loopback parrot that answers as a small model does: plausible hallucinations
("As an AI assistant I do not have a home city; I believe you live in Paris.") and, every
other turn that got a memory block, an echo of the block's end, orcamem's markup and all
(cut mid-item, as a model's echo is).

Then each fact's question is asked through the proxy in a fresh conversation, and the block
the parrot received is judged with ``context.Block``: is the user's own statement still
quoted, and how many of the stored turns it quotes from their start (``Block.opens``: an echo
copies other turns, so any shared run would count it) are assistant replies?
"""

from __future__ import annotations

import itertools
import json
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .._kernel.config import Config
from .._kernel.http import client as http_client
from ..engine.memory import Memory
from ..errors import InvalidInputError
from ..interfaces.http.app import create_app
from ..interfaces.http.proxy import install
from ..interfaces.http.settings import ServerSettings
from ..recall.blocks.strip import strip
from .context import FACTS, Block, load_unrelated, wordpiece_tokens
from .proxy import serving, serving_stub
from .runs import Progress, machine

__all__ = ["proxy_loop"]

_ID = "x-bench-id"
_SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _block_of(messages: list[dict[str, Any]]) -> str:
    """The memory block the proxy merged into the client's system message ("" if none)."""
    system = next((m for m in messages if m.get("role") == "system"), _SYSTEM)
    return str(system.get("content", "")).removeprefix(_SYSTEM["content"]).strip()


_HALLUCINATIONS = (
    "As an AI assistant I do not have a home city, but I believe you live in Paris.",
    "The job: I am an AI assistant, and you told me you work as a pilot in Dubai.",
    "I remember you drive a red Tesla and your cat is called Whiskers.",
    "You mentioned your daughter loves peanut butter sandwiches every morning.",
)
_SMALL_TALK = ("Thanks, that helps.", "Okay, interesting.", "Good to know, cheers.")


class _Parrot:
    """The loopback upstream: keeps each request's messages, answers in kind."""

    def __init__(self) -> None:
        self.received: dict[str, list[dict[str, Any]]] = {}
        received = self.received
        turn = itertools.count()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                messages = body.get("messages", [])
                received[self.headers.get(_ID, "")] = messages
                number = next(turn)
                block = _block_of(messages)
                if number % 2 and block:
                    answer = f"Based on what I remember: {block[-400:]} Anything else?"
                else:
                    answer = _HALLUCINATIONS[number // 2 % len(_HALLUCINATIONS)]
                reply = json.dumps(
                    {
                        "id": f"parrot-{number}",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": answer},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


def script(exchanges: int, conversations: int) -> list[list[str]]:
    """The user's turns, conversation by conversation: each states its share of the facts in
    its first turns, then asks about them, asks unrelated things and makes small talk."""
    if not 1 <= conversations <= len(FACTS) or exchanges < len(FACTS):
        raise InvalidInputError(
            f"exchanges={exchanges}, conversations={conversations}: use 1-{len(FACTS)} "
            f"conversations and at least {len(FACTS)} exchanges (one a stated fact)"
        )
    unrelated = itertools.cycle(load_unrelated())
    talk = itertools.cycle(_SMALL_TALK)
    questions = itertools.cycle(question for _, question in FACTS)
    plan: list[list[str]] = [[] for _ in range(conversations)]
    for number, (fact, _) in enumerate(FACTS):
        plan[number % conversations].append(fact)
    fillers = (unrelated, questions, talk)
    for number in range(exchanges - sum(map(len, plan))):
        plan[number % conversations].append(next(fillers[number % len(fillers)]))
    return plan


def proxy_loop(
    exchanges: int = 50,
    *,
    conversations: int = 5,
    config: Config | None = None,
    progress: Progress | None = None,
    workdir: str | None = None,
) -> dict[str, Any]:
    """Run the scripted exchanges through the proxy, then probe every stated fact.

    Returns:
        ``{"exchanges": …, "facts_kept": …, "assistant_share": …, "probes": [{"fact": …,
        "kept": …, "quoted": …, "assistant_quoted": …, "tokens": …}], "stored_episodes": …,
        "stored_markup": …, "machine": {…}}``; ``stored_markup`` counts the stored turns that
        still carry orcamem's markup (an echo of a block recorded as if someone said it).
    """
    plan = script(exchanges, conversations)
    parrot = _Parrot()
    space = "loop"
    with (
        tempfile.TemporaryDirectory(dir=workdir) as tmp,
        Memory(Path(tmp) / "loop.db", space=space, config=config) as mem,
    ):
        app = create_app(mem, ServerSettings(upstream=parrot.url, model="parrot"))
        install(app)
        sent = injected = 0
        with (
            serving_stub(parrot.server),
            serving(app) as url,
            http_client(timeout=60, headers={"x-orma-space": space}) as client,
        ):

            def ask(history: list[dict[str, Any]], tag: str) -> str:
                reply = client.post(
                    f"{url}/v1/chat/completions",
                    json={"messages": history},
                    headers={_ID: tag},
                )
                if reply.status_code != 200:
                    raise RuntimeError(f"the proxy answered {reply.status_code}: {reply.text}")
                history.append(reply.json()["choices"][0]["message"])
                return _block_of(parrot.received.pop(tag))

            total = sum(map(len, plan))
            for number, turns in enumerate(plan):
                history = [_SYSTEM]
                for text in turns:
                    history.append({"role": "user", "content": text})
                    injected += bool(ask(history, f"c{number}-{sent}"))
                    sent += 1
                    if progress:
                        progress("exchanges", sent, total)
            probes = []
            for number, (fact, question) in enumerate(FACTS):
                history = [_SYSTEM, {"role": "user", "content": question}]
                block = ask(history, f"p{number}")
                probes.append((fact, question, block))
        episodes = list(mem.iter_episodes(space=space))
    stored = sorted({(e.role or "", e.text) for e in episodes})  # a repeated text counts once
    rows = []
    for fact, question, block in probes:
        seen = Block(block)
        quoted = [role for role, text in stored if block and seen.opens(text)]
        rows.append(
            {
                "fact": fact,
                "question": question,
                "kept": seen.quotes(fact),
                "quoted": len(quoted),
                "assistant_quoted": quoted.count("assistant"),
                "tokens": wordpiece_tokens(block),
            }
        )
    quoted_total = sum(row["quoted"] for row in rows)
    return {
        "exchanges": sent,
        "conversations": len(plan),
        "injected": injected,
        "facts": len(rows),
        "facts_kept": round(sum(row["kept"] for row in rows) / len(rows), 4),
        "assistant_share": round(sum(r["assistant_quoted"] for r in rows) / quoted_total, 4)
        if quoted_total
        else 0.0,
        "probes": rows,
        "stored_episodes": len(episodes),
        "stored_markup": sum(strip(e.text) != e.text for e in episodes),
        "machine": machine(),
    }
