"""Embedders: the shipped static model, an OpenAI-compatible server, and the space contract."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from orcamem import EmbedderError, EmbedderMismatchError, InvalidInputError, Memory
from orcamem._kernel.embed import DEFAULT_MODEL_DIR, OpenAIEmbedder, StaticEmbedder, make_embedder
from orcamem.interfaces.cli.main import app
from servers import child_env

DIM = 64


@pytest.fixture(scope="module")
def static() -> StaticEmbedder:
    embedder = make_embedder()
    assert isinstance(embedder, StaticEmbedder)
    return embedder


# -- the shipped artifact -----------------------------------------------------------------------


def _checksums() -> list[tuple[str, str]]:
    lines = (DEFAULT_MODEL_DIR / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    return [(line.split()[1].lstrip("*"), line.split()[0]) for line in lines if line.strip()]


def test_sha256sums_lists_every_shipped_file() -> None:
    listed = {name for name, _ in _checksums()}
    shipped = {p.name for p in DEFAULT_MODEL_DIR.iterdir() if p.is_file()} - {"SHA256SUMS"}
    assert listed == shipped
    assert {"model.safetensors", "tokenizer.json", "ATTRIBUTION.md"} <= listed


@pytest.mark.parametrize(("name", "expected"), _checksums())
def test_shipped_file_matches_its_checksum(name: str, expected: str) -> None:
    assert hashlib.sha256((DEFAULT_MODEL_DIR / name).read_bytes()).hexdigest() == expected


def test_attribution_names_the_source_and_license() -> None:
    text = (DEFAULT_MODEL_DIR / "ATTRIBUTION.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in text and "Apache License, Version 2.0" in text
    assert "all-MiniLM-L6-v2" in text and "model2vec" in text


# -- StaticEmbedder -----------------------------------------------------------------------------


def test_static_embedder_identity(static: StaticEmbedder) -> None:
    assert static.dim == 256
    weights = hashlib.sha256((DEFAULT_MODEL_DIR / "model.safetensors").read_bytes()).hexdigest()
    assert static.id == f"static:m2v-minilm-l6-v2@{weights[:12]}"
    assert StaticEmbedder().id == static.id  # stable across loads
    assert make_embedder("static") is make_embedder()  # loaded once per process
    assert make_embedder(f"static:{DEFAULT_MODEL_DIR}").id == static.id


def test_static_vectors_are_unit_float32(static: StaticEmbedder) -> None:
    texts = ["I live in Pune.", "A much longer sentence about deploying services on Fridays."]
    vectors = static.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (2, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(static.embed(texts), vectors)  # deterministic
    assert np.array_equal(static.embed(texts[:1])[0], vectors[0])  # batch-independent
    assert static.embed([]).shape == (0, 256)


@pytest.mark.parametrize("text", ["", "   ", "𓀀𓀁𓀂"], ids=["empty", "blank", "unknown"])
def test_text_without_known_tokens_is_a_zero_vector_not_nan(
    static: StaticEmbedder, text: str
) -> None:
    vector = static.embed([text, "hello world"])
    assert not np.isnan(vector).any()
    assert np.linalg.norm(vector[0]) == 0.0
    assert np.linalg.norm(vector[1]) == pytest.approx(1.0, abs=1e-5)


def test_related_sentences_score_higher(static: StaticEmbedder) -> None:
    cat, kitten, revenue = static.embed(
        [
            "The cat sat on the mat.",
            "A kitten is resting on the rug.",
            "Quarterly revenue grew by ten percent.",
        ]
    )
    assert cat @ kitten > cat @ revenue + 0.2
    question, answer, other = static.embed(
        ["Where do I live?", "I live in Pune with my family.", "The stock market fell today."]
    )
    assert question @ answer > question @ other


def test_static_embedder_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match=r"no model2vec model in .*model\.safetensors"):
        StaticEmbedder(tmp_path)


OFFLINE_SCRIPT = r"""
import json, socket, sys
attempts = []
def refuse(*args, **kwargs):
    attempts.append(repr(args)[:80])
    raise OSError("network disabled in this test")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from orcamem import Memory
with Memory(sys.argv[1]) as mem:
    mem.add("I work as a backend engineer and I live in Pune.")
    mem.add("The car is parked on level three.")
    top = mem.search("Where do I live?").hits[0].text
    block = mem.recall("Where do I live?")
print(json.dumps({
    "top": top,
    "block": "Pune" in block,
    "attempts": attempts,
    "hub": sorted(m for m in sys.modules if m.split(".")[0] in ("huggingface_hub", "requests", "httpx")),
}))
"""


def test_default_embedder_works_offline_in_a_fresh_process(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "HF_HOME": str(home / "hf"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "ORCA_HOME": str(tmp_path / "orca"),
        **child_env(),
    }
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_SCRIPT, str(tmp_path / "m.db")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["top"] == "I work as a backend engineer and I live in Pune."
    assert report["block"] is True
    assert report["attempts"] == []  # not one connection was tried
    assert report["hub"] == []  # no hub or HTTP client on the default path
    assert not (home / "hf").exists() and not any(home.iterdir())


# -- an OpenAI-compatible server, for real ------------------------------------------------------


class _EmbeddingsHandler(BaseHTTPRequestHandler):
    """``POST /v1/embeddings`` answered with the static model's first 64 dimensions.

    ``/broken/v1/embeddings`` answers 500 and ``/garbage/v1/embeddings`` answers 200 with a
    body that is not JSON. Answers list the vectors in reverse order with their ``index``, as
    servers may, so the client must sort them.
    """

    server: _EmbeddingsServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if self.path == "/broken/v1/embeddings":
            self._answer(500, b'{"error": "model crashed: out of memory"}')
        elif self.path == "/garbage/v1/embeddings":
            self._answer(200, b"<html>this is not json")
        elif self.path == "/v1/embeddings":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            vectors = self.server.static.embed(texts)[:, :DIM]
            data = [
                {"object": "embedding", "index": i, "embedding": [float(x) for x in vectors[i]]}
                for i in range(len(texts))
            ]
            payload = {"object": "list", "model": body["model"], "data": data[::-1]}
            self._answer(200, json.dumps(payload).encode())
        else:
            self._answer(404, b'{"error": "not found"}')

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass


class _EmbeddingsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, static: StaticEmbedder) -> None:
        super().__init__(("127.0.0.1", 0), _EmbeddingsHandler)
        self.static = static
        self.requests: list[dict[str, Any]] = []


@pytest.fixture(scope="module")
def server(static: StaticEmbedder) -> Iterator[_EmbeddingsServer]:
    instance = _EmbeddingsServer(static)
    thread = threading.Thread(target=instance.serve_forever, daemon=True)
    thread.start()
    yield instance
    instance.shutdown()
    instance.server_close()
    thread.join(timeout=5)


def _url(server: _EmbeddingsServer, prefix: str = "") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{prefix}/v1"


def test_openai_embedder_against_a_real_server(
    server: _EmbeddingsServer, static: StaticEmbedder
) -> None:
    embedder = OpenAIEmbedder("tiny-64", _url(server), batch_size=3)
    texts = [f"sentence number {i} about topic {i % 3}" for i in range(7)]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (7, DIM)
    expected = static.embed(texts)[:, :DIM]
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-5)  # in input order despite reversed answers
    assert embedder.dim == DIM and embedder.id == "openai:tiny-64"
    batches = [r["body"]["input"] for r in server.requests[-3:]]
    assert batches == [texts[0:3], texts[3:6], texts[6:7]]
    assert all(r["body"]["model"] == "tiny-64" and r["auth"] is None for r in server.requests)
    embedder.close()


def test_openai_spec_sends_the_api_key(
    server: _EmbeddingsServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    embedder = make_embedder(f"openai:tiny-64@{_url(server)}")
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.embed(["hello"]).shape == (1, DIM)
    assert server.requests[-1]["auth"] == "Bearer sk-test-123"


def test_server_error_is_an_embedder_error(server: _EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder("tiny-64", _url(server, "/broken"))
    with pytest.raises(EmbedderError, match=r"answered 500: .*out of memory") as info:
        embedder.embed(["hello"])
    assert "/broken/v1/embeddings" in str(info.value)


def test_malformed_answer_is_an_embedder_error(server: _EmbeddingsServer) -> None:
    embedder = OpenAIEmbedder("tiny-64", _url(server, "/garbage"))
    with pytest.raises(EmbedderError, match=r"sent no OpenAI-style 'data' list"):
        embedder.embed(["hello"])


def test_unreachable_server_is_an_embedder_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago: nobody listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder("tiny-64", f"http://127.0.0.1:{port}/v1", timeout=2)
    with pytest.raises(EmbedderError, match=r"unreachable.*start it or fix the URL"):
        embedder.embed(["hello"])
    with pytest.raises(EmbedderError):
        _ = embedder.dim


@pytest.mark.parametrize(
    "spec",
    ["bogus", "openai:no-url", "openai", "st:", "static-ish", 42],
)
def test_make_embedder_with_a_bad_spec(spec: Any) -> None:
    with pytest.raises(InvalidInputError):
        make_embedder(spec)


# -- the space records its embedder -------------------------------------------------------------


def _fill(path: Path) -> None:
    with Memory(path) as mem:
        mem.add("I work as a backend engineer and I live in Pune.")
        mem.observe("user", "The car is parked on level three. It is blue.", session_id="s1")
        mem.remember("Prefers dark mode", category="preference")
        mem.forbid("Never share the door code")


def test_wrong_embedder_is_refused_until_reembed(tmp_path: Path, server: _EmbeddingsServer) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    with Memory(path) as mem:
        episodes = list(mem.iter_episodes())
        memories = mem.facts(include_history=True)
        stats = mem.stats()

    with Memory(path, embedder=OpenAIEmbedder("tiny-64", _url(server))) as mem:
        with pytest.raises(EmbedderMismatchError, match="orcamem reembed") as info:
            mem.search("Where do I live?")
        assert "static:m2v-minilm-l6-v2" in str(info.value) and "dim 256" in str(info.value)
        with pytest.raises(EmbedderMismatchError):
            mem.add("This must not be written.")
        with pytest.raises(EmbedderMismatchError):
            mem.remember("Nor this.")
        assert mem.stats()["episodes"] == stats["episodes"]  # nothing partial was written

        calls: list[tuple[int, int]] = []
        count = mem.reembed(progress=lambda done, total: calls.append((done, total)))
        assert count == stats["lines"] + stats["memories"] + stats["rules"]
        assert calls and calls[-1] == (count, count)
        assert all(total == count for _, total in calls)

        after = mem.stats()
        assert (after["space_embedder"], after["dim"]) == ("openai:tiny-64", DIM)
        top = mem.search("Where do I live?").hits[0]
        assert top.text == "I work as a backend engineer and I live in Pune."
        assert top.breakdown["vector"] > 0
        assert list(mem.iter_episodes()) == episodes
        assert mem.facts(include_history=True) == memories

    with (
        Memory(path) as mem,  # now the default embedder is the stranger
        pytest.raises(EmbedderMismatchError, match="orcamem reembed"),
    ):
        mem.search("Where do I live?")


def test_cli_reembed_with_an_openai_endpoint(tmp_path: Path, server: _EmbeddingsServer) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    runner = CliRunner()
    assert runner.invoke(app, ["search", "Where do I live?", "--db", str(path)]).exit_code == 0

    spec = f"openai:tiny-64@{_url(server)}"
    result = runner.invoke(app, ["reembed", "--db", str(path), "--embedder", spec])
    assert result.exit_code == 0, result.output
    assert "re-embedded 5 vectors in space 'default' with openai:tiny-64" in " ".join(
        result.stdout.split()
    )

    # the space remembers its embedder: no flag needed (issue 16); one set explicitly and
    # different is still refused with the fix
    found = runner.invoke(app, ["search", "Where do I live?", "--db", str(path), "--json"])
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["text"].endswith("I live in Pune.")
    refused = runner.invoke(
        app, ["search", "Where do I live?", "--db", str(path)], env={"ORCAMEM_EMBEDDER": "static"}
    )
    assert refused.exit_code == 1
    assert "orcamem reembed" in " ".join(refused.stderr.split())

    with Memory(path, embedder=spec) as mem:
        assert mem.search("Where do I live?").hits[0].text.endswith("I live in Pune.")

    down = runner.invoke(
        app, ["reembed", "--db", str(path), "--embedder", f"openai:x@{_url(server, '/broken')}"]
    )
    assert down.exit_code == 1 and "answered 500" in " ".join(down.stderr.split())
    with Memory(path, embedder=spec) as mem:  # a failed re-embed left the space as it was
        assert mem.stats()["space_embedder"] == "openai:tiny-64"

    bad = runner.invoke(app, ["reembed", "--db", str(path), "--embedder", "nonsense"])
    assert bad.exit_code == 2 and "unknown embedder spec" in " ".join(bad.stderr.split())


# -- the benches measure the embedder they are given --------------------------------------------


def _tiny_locomo(path: Path) -> Path:
    """Two one-session LoCoMo samples, one scorable question each."""

    def sample(index: int, said: str, question: str) -> dict[str, Any]:
        turn = {"speaker": "Ana", "dia_id": "D1:1", "text": said}
        other = {"speaker": "Ben", "dia_id": "D1:2", "text": "The weather was fine all week."}
        return {
            "sample_id": f"tiny-{index}",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [turn, other],
            },
            "qa": [{"question": question, "answer": said, "evidence": ["D1:1"], "category": 1}],
        }

    samples = [
        sample(0, "I adopted a puppy named Biscuit.", "What is the puppy called?"),
        sample(1, "I signed up for a pottery class.", "Which class did Ana join?"),
    ]
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _embedded(server: _EmbeddingsServer, since: int) -> list[str]:
    return [text for r in server.requests[since:] for text in r["body"]["input"]]


def test_bench_locomo_takes_an_embedder_and_conversations(
    tmp_path: Path, server: _EmbeddingsServer
) -> None:
    data = _tiny_locomo(tmp_path / "locomo.json")
    before = len(server.requests)
    spec = f"openai:tiny-64@{_url(server)}"
    args = ["bench", "locomo", "--data", str(data), "--json", "--embedder", spec]
    result = CliRunner().invoke(app, [*args, "--conversations", "1"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["overall"]["questions"] == 1  # conversation 1 alone
    assert report["embedder"] == "openai:tiny-64"
    texts = _embedded(server, before)
    assert "I signed up for a pottery class." in texts  # stored with the given embedder
    assert "Which class did Ana join?" in texts  # and searched with it
    assert "I adopted a puppy named Biscuit." not in texts  # conversation 0 was left out

    none = CliRunner().invoke(app, [*args, "--conversations", "5"])
    assert none.exit_code == 2 and "indexes start at 0" in " ".join(none.stderr.split())


def test_bench_context_and_latency_take_an_embedder(
    tmp_path: Path, server: _EmbeddingsServer
) -> None:
    data = _tiny_locomo(tmp_path / "locomo.json")
    spec = f"openai:tiny-64@{_url(server)}"
    runner = CliRunner()
    before = len(server.requests)
    context = runner.invoke(
        app, ["bench", "context", "--data", str(data), "--embedder", spec, "--json"]
    )
    assert context.exit_code == 0, context.output
    assert json.loads(context.stdout)["locomo"]["embedder"] == "openai:tiny-64"
    assert "What is the puppy called?" in _embedded(server, before)

    before = len(server.requests)
    sizes = ["--records", "30", "--queries", "2", "--adds", "2"]
    latency = runner.invoke(app, ["bench", "latency", *sizes, "--embedder", spec, "--json"])
    assert latency.exit_code == 0, latency.output
    report = json.loads(latency.stdout)
    assert report["records"]["30"]["search_p50_ms"] > 0
    assert report["embedder"] == "openai:tiny-64"
    assert len(_embedded(server, before)) >= 30 + 2 + 2  # bulk load, adds, searches

    bad = runner.invoke(app, ["bench", "latency", "--records", "10", "--embedder", "nonsense"])
    assert bad.exit_code == 2 and "unknown embedder spec" in " ".join(bad.stderr.split())


def test_a_memory_kept_open_follows_a_reembed_made_elsewhere(
    tmp_path: Path, server: _EmbeddingsServer
) -> None:
    """A server holds the space open while `orcamem reembed` runs in another process: each
    later add and remember was refused, telling the user to run the reembed just run."""
    path = tmp_path / "m.db"
    spec = f"openai:tiny-64@{_url(server)}"
    with Memory(path) as kept:
        kept.add("I adopted a dog called Pixel.")
        with Memory(path, embedder=spec) as other:
            other.reembed()
        kept.add("My cat is called Miso.")
        kept.add_many([{"text": "The fish is called Bubbles."}])
        kept.remember("Has a dog, a cat and a fish", category="fact")
        assert kept.stats()["dim"] == DIM
        assert kept.search("What is my cat called?").hits[0].text == "My cat is called Miso."
        assert kept.check().problems == []


def test_a_line_written_while_a_reembed_embeds_is_embedded_too(
    tmp_path: Path, server: _EmbeddingsServer
) -> None:
    """The swap replaced only the vectors read at the start: a line added meanwhile kept the
    old embedder's vector in a space that now recorded the new one, and every search of the
    space failed until `orcamem repair`."""
    path = tmp_path / "m.db"
    with Memory(path) as writer:
        writer.add("I adopted a dog called Pixel.")
        with Memory(path, embedder=f"openai:tiny-64@{_url(server)}") as reembedding:
            read = reembedding.store.iter_texts_for_embedding
            calls = 0

            def read_then_write(space: str) -> Any:
                nonlocal calls
                calls += 1
                found = read(space)
                if calls == 1:  # another process writes while this one embeds
                    writer.add("My cat is called Miso.")
                return found

            reembedding.store.iter_texts_for_embedding = read_then_write  # type: ignore[method-assign]
            assert reembedding.reembed() == 2 and calls == 2
            assert reembedding.check().problems == []
            assert reembedding.search("cat").hits[0].text == "My cat is called Miso."


def test_an_embedder_answering_nan_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """Vectors are stored as float16: a NaN or a value past 65504 made PostgreSQL refuse the
    write with its driver's words and SQLite store a vector that scores nothing."""

    class Broken:
        id, dim = "broken-4", 4

        def embed(self, texts: Sequence[str]) -> np.ndarray:
            return np.array([[np.nan, 0, 0, 0] if "bad" in t else [7e4, 0, 0, 0] for t in texts])

    with Memory(tmp_path / "m.db", embedder=Broken()) as mem:
        for text in ("a bad vector", "a huge one"):
            with pytest.raises(EmbedderError, match="NaN, infinity or values past"):
                mem.add(text)
        assert list(mem.iter_episodes()) == []
