"""``orcamem remember`` and ``orcamem memory …`` as a user drives them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from orcamem._kernel.clock import FrozenClock, format_time
from orcamem.interfaces.cli.main import app
from orcamem.local.ledger import Candidate
from orcamem.local.memory import LocalMemory

runner = CliRunner()


def run(*args: Any, code: int = 0) -> Result:
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"orcamem {' '.join(map(str, args))} crashed: {result.exception!r}\n{result.output}"
    )
    assert result.exit_code == code, f"exit {result.exit_code}, wanted {code}:\n{result.output}"
    return result


def flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "api"
    path.mkdir()
    return path


def seed(project: Path, clock: FrozenClock, *facts: str) -> LocalMemory:
    memory = LocalMemory(project, start=False, clock=clock)
    memory.remember("project: Seeded by the test.")  # creates the project (and project.json)
    for number, fact in enumerate(facts):
        candidate = Candidate(
            f"cand-{number:016x}",
            "project",
            fact,
            "s1",
            f"t{number}",
            f"job-{number}",
            None,
            "test",
            format_time(clock.now()),
        )
        memory.ledger.publish([candidate], job_id=f"job-{number}")
    return memory


def test_remember_user_and_project_facts(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "orca-home" / "memory"
    user = run("remember", "Prefers concise answers.", "--cwd", project)
    assert flat(user.stdout) == f"remembered in user facts: {home / 'user.md'}"
    proj = flat(run("remember", "project: The API is versioned by date.", "--cwd", project).stdout)
    assert proj.startswith("remembered in project facts: ") and proj.endswith("/memory.md")
    again = run("remember", "project: the API is versioned by date", "--cwd", project)
    assert flat(again.stdout).startswith("already remembered")
    context = run("memory", "context", "--cwd", project).stdout
    assert "- Prefers concise answers." in context and "- The API is versioned by date." in context
    bad = run("remember", "api_key = sk-" + "Ab3" * 10, "--cwd", project, code=2)
    assert "secret" in flat(bad.stderr) and "sk-" not in (home / "user.md").read_text()
    empty = run("memory", "context", "--cwd", project.parent, code=0)
    assert "Prefers concise answers." in empty.stdout  # user facts go everywhere


def test_a_fact_past_the_loaded_8_kib_is_stored_with_a_warning(
    project: Path, tmp_path: Path
) -> None:
    user = tmp_path / "orca-home" / "memory" / "user.md"
    user.parent.mkdir(parents=True)
    filler = "".join(
        f"- Fact {n}: padded out to roughly ninety bytes for this test.\n" for n in range(140)
    )
    user.write_text("# User memory\n\n" + filler, encoding="utf-8")
    late = run("remember", "The user is allergic to penicillin.", "--cwd", project)
    assert flat(late.stdout) == f"remembered in user facts: {user}"
    assert "user.md is over the 8 KiB a session loads and this fact lies past them" in flat(
        late.stderr
    )
    assert "allergic to penicillin" in user.read_text(encoding="utf-8")  # stored all the same
    assert "penicillin" not in run("memory", "context", "--cwd", project).stdout
    status = json.loads(run("memory", "show", "--json", "--cwd", project).stdout)
    assert [p for p in status["problems"] if "a session loads the first" in p]
    user.write_text("# User memory\n\n- Prefers tea.\n", encoding="utf-8")
    fine = run("remember", "The user is allergic to penicillin.", "--cwd", project)
    assert not fine.stderr.strip()


def test_list_show_recall_and_repair(project: Path, clock: FrozenClock) -> None:
    memory = seed(project, clock, "Deploys use Helm on Fridays.", "Metrics go to Prometheus.")
    data = json.loads(run("memory", "list", "--json", "--cwd", project).stdout)
    assert data["revision"] == 2
    assert [c["text"] for c in data["candidates"]] == [
        "Deploys use Helm on Fridays.",
        "Metrics go to Prometheus.",
    ]
    assert "ledger revision 2: 2 candidate(s)" in flat(
        run("memory", "list", "--cwd", project).stdout
    )
    status = json.loads(run("memory", "show", "--json", "--cwd", project).stdout)
    assert status["project_id"] == memory.identity.id and status["candidates"] == 2
    assert status["auto_memory"] is True and status["project_dir"] == str(memory.files.dir)
    block = run("memory", "recall", "how do we deploy with helm?", "--cwd", project)
    assert "Deploys use Helm on Fridays." in block.stdout and "Prometheus" not in block.stdout
    assert "(source: index)" in block.stderr
    shown = json.loads(
        run("memory", "recall", "how do we deploy with helm?", "--json", "--cwd", project).stdout
    )
    assert shown["text"] == block.stdout and shown["source"] == "index"
    assert shown["entries"] == [c.id for c in memory.candidates().candidates if "Helm" in c.text]
    memory.files.auto_memory_md.unlink()
    assert status["stale_projections"] == []
    assert "derived files match" in run("memory", "repair", "--cwd", project).stdout
    assert memory.files.auto_memory_md.is_file()


def test_forget_is_revisioned_and_idempotent_and_there_is_no_unversioned_clear(
    project: Path, clock: FrozenClock
) -> None:
    memory = seed(project, clock, "Deploys use Helm on Fridays.", "Metrics go to Prometheus.")
    first = memory.candidates().candidates[0].id
    missing = run("memory", "forget", first, "--cwd", project, code=2)
    assert "--revision" in flat(missing.stderr)
    unversioned = run("memory", "forget", "--all", "--cwd", project, code=2)
    assert "--revision" in flat(unversioned.stderr)
    run("memory", "forget", "--revision", 2, "--cwd", project, code=2)  # neither ids nor --all
    stale = run("memory", "forget", first, "--revision", 1, "--cwd", project, code=1)
    assert "revision 2, not 1" in flat(stale.stderr)
    done = run("memory", "forget", first, "--revision", 2, "--cwd", project)
    assert flat(done.stdout) == "deleted 1 candidate(s); the ledger is at revision 3"
    again = run("memory", "forget", first, "--revision", 2, "--cwd", project)
    assert flat(again.stdout).startswith("already done: 1 candidate(s)")
    repeated = json.loads(
        run("memory", "forget", first, "--revision", 2, "--json", "--cwd", project).stdout
    )
    assert repeated == {"deleted": [first], "revision": 3, "repeated": True, "problems": []}
    cleared = run("memory", "forget", "--all", "--revision", 3, "--cwd", project)
    assert flat(cleared.stdout) == "deleted 1 candidate(s); the ledger is at revision 4"
    assert memory.candidates().candidates == ()


def test_delete_project_documents_the_safe_procedure_and_deletes_nothing(
    project: Path, clock: FrozenClock
) -> None:
    memory = seed(project, clock, "Deploys use Helm on Fridays.")
    before = sorted(p.name for p in memory.files.dir.iterdir())
    text = run("memory", "delete-project", "--cwd", project).stdout
    assert "set auto_memory = false" in text and "exit every Orca" in text
    assert str(memory.files.project_json) in text and str(memory.files.dir) in text
    assert "Trash" in text and "restart" in text
    assert "Deleting only auto-memory.md or index.sqlite3 clears nothing" in text
    assert "Deleting only candidates.jsonl" in text and "user.md" in text
    assert sorted(p.name for p in memory.files.dir.iterdir()) == before


def test_work_needs_a_model(project: Path) -> None:
    result = run("memory", "work", "--cwd", project, code=2)
    assert "no model" in flat(result.stderr)
