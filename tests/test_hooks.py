"""Memory inside real agents (issue 18): the hooks orcamem installs into Claude Code and Codex
CLI, driven end to end with recorded payloads (tests/fixtures/hooks/), in real subprocesses
over real files, exactly as the agent CLI runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from local_memory_helpers import wait_until
from orcamem._kernel.clock import FrozenClock, SystemClock
from orcamem.local.memory import LocalMemory

FIXTURES = Path(__file__).parent / "fixtures" / "hooks"
SESSION = "7f3c2a9e-4b1d-4c8e-9a6f-2d5e8b1c0a37"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "proj"
    path.mkdir()
    return path


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    src = str(Path(__file__).parent.parent / "src")
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("ORCA", "ANTHROPIC"))},
        "HOME": str(home),
        "ORCA_HOME": str(tmp_path / "orca"),
        "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }


def payload(name: str, project: Path, transcript: Path | None = None) -> str:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return text.replace("__CWD__", str(project)).replace("__TRANSCRIPT__", str(transcript or ""))


def orcamem(env: dict[str, str], *args: str, stdin: str = "", cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "orcamem", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def shell(command: str, env: dict[str, str], cwd: Path, stdin: str):
    """Run a hook command the way Claude Code does: through the shell, payload on stdin."""
    return subprocess.run(
        command, shell=True, input=stdin, capture_output=True, text=True, env=env, cwd=cwd,
        timeout=120,
    )  # fmt: skip


def memory(project: Path, env: dict[str, str], clock=None) -> LocalMemory:
    return LocalMemory(project, start=False, root=Path(env["ORCA_HOME"]) / "memory", clock=clock)


# -- install / uninstall / status ---------------------------------------------------------------


def test_install_is_idempotent_keeps_other_settings_and_backs_up(
    project: Path, env: dict[str, str]
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {
        "model": "opus",
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./lint.sh"}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    }
    original = json.dumps(theirs, indent=2) + "\n"
    settings.write_text(original)
    first = orcamem(env, "hooks", "install", "claude-code", "--project", "--cwd", str(project))
    assert first.returncode == 0, first.stderr
    installed = settings.read_text()
    backup = settings.with_name("settings.json.orcamem-backup")
    assert backup.read_text() == original
    again = orcamem(env, "hooks", "install", "claude-code", "--project", "--cwd", str(project))
    assert again.returncode == 0 and "already installed" in again.stdout
    assert settings.read_text() == installed  # idempotent: the same file, byte for byte
    data = json.loads(installed)
    assert data["model"] == "opus" and data["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert data["hooks"]["Stop"][0] == theirs["hooks"]["Stop"][0]  # theirs first, then ours
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        (hook,) = data["hooks"][event][-1]["hooks"]
        assert hook["type"] == "command" and hook["command"].endswith(
            f"-m orcamem.interfaces.cli.hooks run claude-code {event}"
        )
    status = orcamem(env, "hooks", "status", "claude-code", "--project", "--cwd", str(project))
    assert status.stdout.count(": installed") == 3
    gone = orcamem(env, "hooks", "uninstall", "claude-code", "--project", "--cwd", str(project))
    assert gone.returncode == 0
    assert json.loads(settings.read_text()) == theirs


def test_a_broken_settings_file_is_refused_and_left_alone(
    project: Path, env: dict[str, str]
) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"hooks": {,}')
    result = orcamem(env, "hooks", "install", "claude-code", "--project", "--cwd", str(project))
    assert result.returncode == 2 and "not valid JSON" in result.stderr
    assert settings.read_text() == '{"hooks": {,}'


def test_codex_notify_is_installed_once_and_another_program_is_not_replaced(
    env: dict[str, str],
) -> None:
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "gpt-5-codex"\n\n[profiles.fast]\nmodel = "gpt-5-mini"\n')
    assert orcamem(env, "hooks", "install", "codex").returncode == 0
    assert orcamem(env, "hooks", "install", "codex").returncode == 0
    text = config.read_text()
    assert text.count("notify = ") == 1 and text.endswith('[profiles.fast]\nmodel = "gpt-5-mini"\n')
    assert "installed" in orcamem(env, "hooks", "status", "codex").stdout
    assert orcamem(env, "hooks", "uninstall", "codex").returncode == 0
    assert "notify" not in config.read_text()
    config.write_text('notify = ["notify-send"]\n')
    refused = orcamem(env, "hooks", "install", "codex")
    assert refused.returncode == 2 and "already runs notify" in refused.stderr
    assert config.read_text() == 'notify = ["notify-send"]\n'


# -- Claude Code, end to end ----------------------------------------------------------------------


def test_claude_code_hooks_end_to_end_with_recorded_payloads(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(payload("claude-code/transcript.jsonl", project))
    assert (
        orcamem(env, "remember", "project: We deploy with Helm on Fridays.", cwd=project).returncode
        == 0
    )
    assert (
        orcamem(
            env, "hooks", "install", "claude-code", "--project", "--cwd", str(project)
        ).returncode
        == 0
    )
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    command = {event: groups[-1]["hooks"][0]["command"] for event, groups in hooks.items()}

    started = shell(
        command["SessionStart"],
        env,
        project,
        payload("claude-code/SessionStart.json", project, transcript),
    )
    assert started.returncode == 0 and started.stderr == ""
    output = json.loads(started.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert "We deploy with Helm on Fridays." in output["additionalContext"]

    stopped = shell(
        command["Stop"], env, project, payload("claude-code/Stop.json", project, transcript)
    )
    assert stopped.returncode == 0, stopped.stderr
    assert "extractor: rules" in stopped.stdout
    with memory(project, env) as mem:
        (job,) = mem.jobs.list(mem.space)
        assert (job.session_id, job.turn_id) == (SESSION, "3f8a5b0c-4d6e-4f7a-8b1c-2d3e4f5a6b72")
        sent = " ".join(m["text"] for m in job.payload["messages"])
        assert "3 passed" not in sent and "tabs" not in sent  # no tool output, no sidechain
        texts = [c.text for c in mem.candidates().candidates]
    assert texts == ["The user prefers pytest.", "Never commit directly to main."]

    prompted = shell(
        command["UserPromptSubmit"], env, project,
        payload("claude-code/UserPromptSubmit.json", project, transcript),
    )  # fmt: skip
    assert prompted.returncode == 0 and prompted.stderr == ""
    context = json.loads(prompted.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert "The user prefers pytest." in context["additionalContext"]
    assert context["additionalContext"].startswith("<automatic-memory>")


def test_a_hook_that_fails_gives_no_memory_and_one_line(project: Path, env: dict[str, str]) -> None:
    stop = json.dumps({"session_id": "s", "cwd": str(project), "transcript_path": "/nonexistent"})
    result = orcamem(env, "hooks", "run", "claude-code", "Stop", stdin=stop)
    assert result.returncode == 1 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "transcript" in result.stderr
    assert (
        orcamem(
            env, "turn", "after", stdin=after_payload(project, "t1", "I prefer vim.")
        ).returncode
        == 0
    )
    with memory(project, env) as mem:
        ledger = mem.files.candidates
    ledger.unlink()
    ledger.mkdir()  # the ledger cannot be read at all
    prompt = json.dumps({"session_id": "s", "cwd": str(project), "prompt": "vim"})
    broken = orcamem(env, "hooks", "run", "claude-code", "UserPromptSubmit", stdin=prompt)
    assert broken.returncode == 0 and broken.stdout == ""
    assert len(broken.stderr.strip().splitlines()) == 1 and "candidates.jsonl" in broken.stderr


def test_a_long_agentic_turn_is_captured_from_its_prompt_far_back(
    project: Path, env: dict[str, str], tmp_path: Path
) -> None:
    """The Stop hook read the transcript's last 4 MiB: a turn of 60 file reads (11.8 MB after
    its prompt) had no prompt there and was lost as 'bad input'."""
    records = [
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "Refactor the loader. I prefer ruff over flake8.",
            },
            "uuid": "u1",
        }
    ]
    for i in range(60):
        out = "x = 1\n" * 14_000
        records += [
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}}],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": out}],
                },
            },
        ]
    records.append(
        {
            "type": "assistant",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Refactored."}]},
            "uuid": "a1",
        }
    )
    transcript = tmp_path / "long.jsonl"
    transcript.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert transcript.stat().st_size > 5 * 1024 * 1024  # past the first tail read, 4 MiB
    stop = json.dumps({"session_id": "s", "cwd": str(project), "transcript_path": str(transcript)})
    done = orcamem(env, "hooks", "run", "claude-code", "Stop", stdin=stop)
    assert done.returncode == 0, done.stderr
    with memory(project, env) as mem:
        assert "The user prefers ruff." in mem.files.candidates.read_text()


def test_half_an_emoji_or_a_cut_redaction_neither_drops_nor_stores_junk(
    project: Path, env: dict[str, str]
) -> None:
    """A lone surrogate (a pasted half emoji) made the turn vanish with exit 0; a token's
    redaction cut at its colon was stored as 'The user prefers [REDACTED.'."""
    said = after_payload(project, "t1", "I prefer pytest over nose \ud83d")
    assert orcamem(env, "turn", "after", stdin=said).returncode == 0
    token = "ghp_" + "a1B2" * 9
    cut = after_payload(project, "t2", f"I prefer {token} as my token.")
    assert orcamem(env, "turn", "after", stdin=cut).returncode == 0
    with memory(project, env) as mem:
        held = mem.files.candidates.read_text()
    assert "The user prefers pytest" in held and "REDACTED" not in held
    array = orcamem(env, "hooks", "run", "claude-code", "UserPromptSubmit", stdin="[1]")
    assert array.returncode == 1 and "a JSON object" in array.stderr


# -- Codex CLI ----------------------------------------------------------------------------------


def test_codex_notify_captures_the_finished_turn(project: Path, env: dict[str, str]) -> None:
    result = orcamem(env, "hooks", "run", "codex", "notify", payload("codex/notify.json", project))
    assert result.returncode == 0, result.stderr
    with memory(project, env) as mem:
        texts = [c.text for c in mem.candidates().candidates]
    assert "The user is allergic to peanuts." in texts and "Avoid peanuts." in texts
    other = orcamem(env, "hooks", "run", "codex", "notify", '{"type": "approval-requested"}')
    assert other.returncode == 0 and other.stdout == ""


def test_codex_prompt_hook_goes_into_hooks_json_once_beside_other_hooks(
    project: Path, env: dict[str, str]
) -> None:
    hooks_json = project / ".codex" / "hooks.json"
    hooks_json.parent.mkdir()
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}
    hooks_json.write_text(json.dumps(theirs))
    for _ in range(2):
        done = orcamem(env, "hooks", "install", "codex", "--project", cwd=project)
        assert done.returncode == 0, done.stderr
    hooks = json.loads(hooks_json.read_text())["hooks"]
    assert hooks["Stop"] == theirs["hooks"]["Stop"]
    (group,) = hooks["UserPromptSubmit"]
    assert group["hooks"][0]["command"].endswith(
        "-m orcamem.interfaces.cli.hooks run codex UserPromptSubmit"
    )
    status = orcamem(env, "hooks", "status", "codex", "--project", cwd=project).stdout
    assert "notify: installed" in status and "UserPromptSubmit: installed" in status
    assert orcamem(env, "hooks", "uninstall", "codex", "--project", cwd=project).returncode == 0
    assert json.loads(hooks_json.read_text()) == theirs


def test_codex_user_prompt_submit_gets_the_recalled_block(
    project: Path, env: dict[str, str]
) -> None:
    assert orcamem(env, "hooks", "install", "codex", "--project", cwd=project).returncode == 0
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    command = hooks["UserPromptSubmit"][-1]["hooks"][0]["command"]
    captured = orcamem(
        env, "hooks", "run", "codex", "notify", payload("codex/notify.json", project)
    )
    assert captured.returncode == 0, captured.stderr
    prompted = shell(command, env, project, payload("codex/UserPromptSubmit.json", project))
    assert prompted.returncode == 0 and prompted.stderr == ""
    context = json.loads(prompted.stdout)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    assert context["additionalContext"].startswith("<automatic-memory>")
    assert "The user is allergic to peanuts." in context["additionalContext"]


# -- the generic commands, and what a crash costs --------------------------------------------------


def after_payload(project: Path, turn: str, text: str) -> str:
    return json.dumps(
        {
            "session_id": "s1",
            "turn_id": turn,
            "cwd": str(project),
            "messages": [
                {"role": "user", "content": text},
                {"role": "assistant", "content": "OK."},
            ],
        }
    )


def test_turn_before_and_after_json(project: Path, env: dict[str, str]) -> None:
    after = orcamem(
        env, "turn", "after", "--json", stdin=after_payload(project, "t1", "I prefer dark mode.")
    )
    data = json.loads(after.stdout)
    assert data["durable"] and data["extractor"] == "rules" and data["eligible"]
    assert [c["text"] for c in data["candidates"]] == ["The user prefers dark mode."]
    before = orcamem(
        env, "turn", "before", "--json",
        stdin=json.dumps({"session_id": "s1", "cwd": str(project), "prompt": "dark mode?"}),
    )  # fmt: skip
    shown = json.loads(before.stdout)
    assert shown["source"] == "index" and "prefers dark mode" in shown["text"]
    bad = orcamem(env, "turn", "after", stdin=json.dumps({"session_id": "s1", "cwd": "rel"}))
    assert bad.returncode == 1 and bad.stdout == "" and "absolute" in bad.stderr


def test_a_turn_after_killed_mid_way_loses_nothing(project: Path, env: dict[str, str]) -> None:
    """SIGKILL each ``turn after`` as soon as its job is on disk (before, during or after its
    extraction): every such turn is in the ledger once a later process ran; the next prompt's
    ``turn before`` heals what a killed process left pending (a crash between before and after
    loses nothing)."""
    turns = {f"t{n}": f"I prefer {word} for this project." for n, word in enumerate(
        ("ruff", "poetry", "black", "mypy"))}  # fmt: skip
    jobs = Path(env["ORCA_HOME"]) / "memory" / "projects"

    def queued(turn: str) -> bool:
        found = False
        for path in jobs.glob("*/jobs/*.json"):
            try:
                found = found or f'"turn_id": "{turn}"' in path.read_text()
            except OSError:  # replaced while we looked
                continue
        return found

    for turn, text in turns.items():
        victim = subprocess.Popen(
            [sys.executable, "-m", "orcamem", "turn", "after"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env,
        )  # fmt: skip
        assert victim.stdin is not None
        victim.stdin.write(after_payload(project, turn, text))
        victim.stdin.close()
        wait_until(lambda turn=turn, victim=victim: queued(turn) or victim.poll() is not None)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        assert queued(turn)  # the job was on disk before the process could be killed
    before = orcamem(
        env, "turn", "before", stdin=json.dumps({"session_id": "s1", "cwd": str(project), "prompt": "ruff"})
    )  # fmt: skip
    assert before.returncode == 0
    later = SystemClock().now() + timedelta(minutes=5)  # past a killed process's 60 s lease
    with memory(project, env, clock=FrozenClock(later)) as mem:
        mem.run_jobs()
        kept = {c.turn_id: c.text for c in mem.candidates().candidates}
        assert all(j.status == "done" for j in mem.jobs.list(mem.space))
    assert kept == {turn: f"The user prefers {text.split()[2]}." for turn, text in turns.items()}


def test_the_capability_block_through_turn_before(project: Path, env: dict[str, str]) -> None:
    (project / "config.json").write_text(json.dumps({"defaults": {"memory": {"enabled": True}}}))
    saved = orcamem(env, "turn", "after", "--memory", "capability", "--json",
                    stdin=after_payload(project, "t1", "I prefer tea over coffee."))  # fmt: skip
    assert json.loads(saved.stdout)["saved"] == ["The user prefers tea."], saved.stderr
    shown = orcamem(env, "turn", "before", "--memory", "capability",
                    stdin=json.dumps({"session_id": "s1", "cwd": str(project), "prompt": "tea"}))  # fmt: skip
    assert "<memory>" in shown.stdout and "The user prefers tea." in shown.stdout


def test_a_turn_pinned_memory_is_found_by_that_turns_turn_before(
    project: Path, env: dict[str, str]
) -> None:
    from orcamem.capability import Capability
    from orcamem.capability.providers import Scope

    (project / "config.json").write_text(json.dumps({"defaults": {"memory": {"enabled": True}}}))
    with Capability(project, session_id="s1") as capability:
        capability.remember("Ugli turn fact: use the staging bucket.", scope=Scope("s1", turn="t1"))

    def before(turn_id: str) -> str:
        data = {
            "session_id": "s1",
            "cwd": str(project),
            "prompt": "ugli bucket",
            "turn_id": turn_id,
        }
        shown = orcamem(env, "turn", "before", "--memory", "capability", stdin=json.dumps(data))
        assert shown.returncode == 0, shown.stderr
        return shown.stdout

    assert "staging bucket" in before("t1")
    assert "staging bucket" not in before("t2")


LOADED = """
import json, runpy, sys
module, *sys.argv[1:] = sys.argv[1:]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
heavy = ("numpy", "orcamem.engine", "orcamem.bank", "orcamem.recall.hybrid")
sys.stderr.write("LOADED " + json.dumps([m for m in heavy if m in sys.modules]) + "\\n")
"""


@pytest.mark.parametrize(
    ("args", "data"),
    [
        (("orcamem", "turn", "before"), {"prompt": "How do we deploy?"}),
        (("orcamem", "turn", "after"), None),
        (("orcamem.interfaces.cli.hooks", "run", "claude-code", "UserPromptSubmit"),
         {"prompt": "How do we deploy?"}),
    ],
)  # fmt: skip
def test_a_hook_loads_neither_numpy_nor_the_engine_nor_the_bank(
    project: Path, env: dict[str, str], args: tuple[str, ...], data: dict | None
) -> None:
    stdin = (
        after_payload(project, "t1", "I prefer tabs.")
        if data is None
        else json.dumps({"session_id": "s1", "cwd": str(project), **data})
    )
    done = subprocess.run(
        [sys.executable, "-c", LOADED, *args], input=stdin, capture_output=True, text=True,
        env=env, timeout=120,
    )  # fmt: skip
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("LOADED ")]
    assert json.loads(line.removeprefix("LOADED ")) == [], done.stderr
