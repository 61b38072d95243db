"""Wall time of each Claude Code hook invocation, run the way Claude Code runs it: the command
orcamem installs, through a shell, the recorded payload on stdin (tests/fixtures/hooks/); and
of ``orcamem turn before`` / ``turn after`` as any other host runs them (``python -m orcamem``).

    python scripts/hook_latency.py [RUNS]

Prints p50 and p95 per hook (milliseconds) and the machine's load average, as JSON. A plain
script, not a test: its numbers depend on the machine (quote them with the load).
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hooks" / "claude-code"
EVENTS = ("SessionStart", "UserPromptSubmit", "Stop")


def main(runs: int) -> dict[str, object]:
    tmp = Path(tempfile.mkdtemp(prefix="orcamem-hook-latency-"))
    project = tmp / "project"
    project.mkdir()
    env = {
        **os.environ,
        "HOME": str(tmp),
        "ORCA_HOME": str(tmp / "orca"),
        "PYTHONPATH": str(ROOT / "src"),
    }
    transcript = tmp / "session.jsonl"
    transcript.write_text(
        (FIXTURES / "transcript.jsonl").read_text().replace("__CWD__", str(project))
    )

    def orcamem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "orcamem", *args],
            env=env, cwd=project, check=True, capture_output=True, text=True,
        )  # fmt: skip

    orcamem("remember", "project: We deploy with Helm on Fridays.")
    orcamem("hooks", "install", "claude-code", "--project")
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    report: dict[str, object] = {"runs": runs}
    turn = [sys.executable, "-m", "orcamem", "turn"]
    commands = {
        event: (
            hooks[event][-1]["hooks"][0]["command"],
            (FIXTURES / f"{event}.json")
            .read_text()
            .replace("__CWD__", str(project))
            .replace("__TRANSCRIPT__", str(transcript)),
        )
        for event in EVENTS
    }
    before = {"session_id": "s1", "cwd": str(project), "prompt": "How do we deploy?"}
    after = {
        "session_id": "s1",
        "turn_id": "t1",
        "cwd": str(project),
        "messages": [
            {"role": "user", "content": "I prefer pytest over unittest."},
            {"role": "assistant", "content": "Noted."},
        ],
    }
    commands["turn before"] = (shlex.join([*turn, "before"]), json.dumps(before))
    commands["turn after"] = (shlex.join([*turn, "after"]), json.dumps(after))
    for event, (command, payload) in commands.items():
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(
                command, shell=True, input=payload, env=env, cwd=project,
                capture_output=True, text=True,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"{event}: exit {done.returncode}: {done.stderr}")
        times.sort()
        report[event] = {
            "p50_ms": round(statistics.median(times) * 1000),
            "p95_ms": round(times[max(0, round(0.95 * len(times)) - 1)] * 1000),
        }
    report["load_average"] = [round(x, 2) for x in os.getloadavg()]
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)))
