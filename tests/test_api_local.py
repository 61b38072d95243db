"""``/api/local``: local agent memory over REST (issue 17, item 6) — projects with identity and
last seen directory, explicit facts, the ledger with provenance, jobs with their states, and the
revisioned delete of one entry. Real ``LocalMemory`` files in a tmp root, real job runs (the
rule-based extractor, and a model that fails), the server's clock driven by a ``FrozenClock``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from local_memory_helpers import ScriptedModel, turn
from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from orcamem.errors import ModelError
from orcamem.interfaces.http import ServerSettings, create_app
from orcamem.interfaces.http.api import install
from orcamem.local import JsonlTranscript, LocalMemory
from servers import LOCAL_BASE
from test_api import assert_error

T0 = "2026-11-01T10:00:00Z"
SAID = "I prefer pytest over unittest. Never commit directly to main, please."


@dataclass
class Local:
    root: Path
    clock: FrozenClock
    transcript: JsonlTranscript
    tmp: Path

    def session(self, cwd: Path, **kw: Any) -> LocalMemory:
        return LocalMemory(
            cwd, root=self.root, session_id="s1", transcript=self.transcript, clock=self.clock,
            start=False, **kw,
        )  # fmt: skip


@pytest.fixture
def local(tmp_path: Path) -> Local:
    return Local(
        tmp_path / "memory", FrozenClock(T0), JsonlTranscript(tmp_path / "t.jsonl"), tmp_path
    )


def git_project(local: Local, origin: str) -> Path:
    """A working tree whose origin carries credentials (they never reach the identity)."""
    path = local.tmp / "api"
    (path / ".git").mkdir(parents=True)
    (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {origin}\n')
    return path


def plain_project(local: Local, name: str = "notes") -> Path:
    path = local.tmp / name
    path.mkdir()
    return path


def captured(local: Local, cwd: Path, turn_id: str = "t1", said: str = SAID) -> str:
    """One root turn captured and extracted by a real job run; the project id."""
    turn(local.transcript, turn_id, said, "Understood.")
    with local.session(cwd) as memory:
        memory.finish_turn(turn_id)
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
        return memory.identity.id


def make_client(local: Local, **settings: Any) -> Iterator[TestClient]:
    with Memory(":memory:", clock=local.clock) as mem:
        app = create_app(mem, ServerSettings(local_memory_dir=str(local.root), **settings))
        install(app)
        app.state.test_memory = mem
        with TestClient(app, base_url=LOCAL_BASE) as client:
            yield client


@pytest.fixture
def client(local: Local) -> Iterator[TestClient]:
    yield from make_client(local)


def ledger(client: TestClient, project: str) -> dict[str, Any]:
    reply = client.get(f"/api/local/projects/{project}/ledger")
    assert reply.status_code == 200, reply.text
    return reply.json()


# -- reading ------------------------------------------------------------------------------------


def test_projects_list_their_identity_last_seen_directory_and_counts(
    local: Local, client: TestClient
) -> None:
    api = git_project(local, "https://alice:ghp_secret@github.com/Acme/API.git?x=1")
    notes = plain_project(local)
    (api / "src").mkdir()
    api_id = captured(local, api / "src")
    with local.session(api / "src") as memory:
        memory.remember("project: We deploy with Helm on Fridays.")
    local.clock.advance(minutes=5)
    with local.session(notes) as memory:
        memory.remember("I write British English.")  # user-wide: no project directory
        memory.remember("project: Notes are kept in Markdown.")
        notes_id = memory.identity.id

    found = client.get("/api/local/projects").json()
    assert found["root"] == str(local.root) and found["user_facts"] == 1
    assert [p["id"] for p in found["projects"]] == [notes_id, api_id]  # newest seen first
    api_out = found["projects"][1]
    assert api_out == {
        "id": api_id,
        "name": "api",
        "identity": "github.com/acme/api",
        "identity_kind": "git-origin",
        "last_seen_cwd": str((api / "src").resolve()),
        "created_at": "2026-11-01T10:00:00.000000Z",
        "updated_at": "2026-11-01T10:00:00.000000Z",
        "revision": 1,
        "candidates": 2,
        "project_facts": 1,
        "jobs": {"pending": 0, "running": 0, "done": 1, "failed": 0},
        "problems": [],
    }
    assert "ghp_secret" not in str(found)
    assert client.get(f"/api/local/projects/{api_id}").json() == api_out
    notes_out = found["projects"][0]
    assert (notes_out["identity_kind"], notes_out["candidates"], notes_out["project_facts"]) == (
        "path",
        0,
        1,
    )


def test_an_unreadable_project_json_is_reported_not_hidden(
    local: Local, client: TestClient
) -> None:
    project = captured(local, plain_project(local))
    (local.root / "projects" / project / "project.json").write_text("{not json")
    (local.root / "projects" / "not-a-project").mkdir()  # not a sha256 name: not listed
    (out,) = client.get("/api/local/projects").json()["projects"]
    assert out["identity"] is None and out["name"] == project[:12] and out["candidates"] == 2
    assert "project.json is corrupt" in out["problems"][0]


def test_facts_are_user_md_and_memory_md_as_a_session_loads_them(
    local: Local, client: TestClient
) -> None:
    cwd = plain_project(local)
    with local.session(cwd) as memory:
        memory.remember("I write British English.")
        for n in range(200):  # over the 8 KiB a session loads
            memory.remember(f"project: Service {n} is deployed by the platform team on Fridays.")
        project = memory.identity.id
        loaded = memory.session_context()
    facts = client.get(f"/api/local/projects/{project}/facts").json()
    assert facts["user"]["facts"] == ["I write British English."]
    assert facts["user"]["truncated"] is False
    shown = facts["project_facts"]
    assert shown["truncated"] is True and shown["loaded"] <= 8 * 1024 < shown["size"]
    assert shown["facts"][0] == "Service 0 is deployed by the platform team on Fridays."
    assert all(f in loaded for f in shown["facts"])  # exactly what a session is given
    assert f"Service {len(shown['facts'])} is" not in loaded


def test_the_ledger_lists_each_entry_with_its_provenance(local: Local, client: TestClient) -> None:
    cwd = plain_project(local)
    project = captured(local, cwd)
    with local.session(cwd) as memory:
        state = memory.candidates()
    out = ledger(client, project)
    assert out["revision"] == state.revision == 1 and out["fingerprint"] == state.fingerprint
    assert [(e["category"], e["text"]) for e in out["entries"]] == [
        ("feedback", "Never commit directly to main."),
        ("user", "The user prefers pytest."),
    ]  # newest first
    for entry, candidate in zip(out["entries"], reversed(state.candidates), strict=True):
        assert entry["id"] == candidate.id
        assert (entry["session_id"], entry["turn_id"], entry["extractor"]) == ("s1", "t1", "rules")
        assert entry["job_id"] == candidate.job_id and entry["recorded_at"] == T0[:-1] + ".000000Z"
    assert out["corrupt_lines"] == [] and out["stale_projections"] == []


def test_jobs_show_their_state_attempts_lease_and_error(local: Local, client: TestClient) -> None:
    cwd = plain_project(local)
    project = captured(local, cwd, "t1")  # done
    local.clock.advance(seconds=1)
    turn(local.transcript, "t2", "I prefer tabs.", "Noted.")
    failing = ScriptedModel(*[ModelError("upstream 500")] * 3)
    with local.session(cwd, model=failing) as memory:
        memory.finish_turn("t2")
        assert [r.outcome for r in memory.run_jobs()] == ["retry", "retry", "failed"]
    local.clock.advance(seconds=1)
    turn(local.transcript, "t3", "I prefer dark mode.", "Noted.")
    turn(local.transcript, "t4", "I prefer short answers.", "Noted.")
    with local.session(cwd) as memory:
        memory.finish_turn("t3")
        leased = memory.jobs.claim("other-session", 60.0, local.clock.now())
        local.clock.advance(seconds=1)
        memory.finish_turn("t4")

    out = client.get(f"/api/local/projects/{project}/jobs").json()
    assert out["counts"] == {"pending": 1, "running": 1, "done": 1, "failed": 1}
    by_turn = {j["turn_id"]: j for j in out["jobs"]}
    assert [j["turn_id"] for j in out["jobs"]] == ["t4", "t3", "t2", "t1"]  # newest first
    assert by_turn["t1"]["status"] == "done" and by_turn["t1"]["extractor"] == "rules"
    assert len(by_turn["t1"]["candidates"]) == 2
    failed = by_turn["t2"]
    assert (failed["status"], failed["attempts"], failed["max_attempts"]) == ("failed", 3, 3)
    assert "upstream 500" in failed["error"]
    running = by_turn["t3"]
    assert running["id"] == leased.id and running["lease_owner"] == "other-session"
    assert running["lease_expires_at"] == "2026-11-01T10:01:02.000000Z"  # claimed at 10:00:02
    assert running["lease_expired"] is False
    assert by_turn["t4"]["status"] == "pending" and by_turn["t4"]["attempts"] == 0
    assert "payload" not in str(out) and "dark mode" not in str(out)  # never the turn's text

    local.clock.advance(minutes=2)  # the server's clock: the lease has run out
    again = client.get(f"/api/local/projects/{project}/jobs", params={"limit": 2}).json()
    assert [j["turn_id"] for j in again["jobs"]] == ["t4", "t3"]
    assert again["jobs"][1]["lease_expired"] is True


def test_a_hand_edited_job_file_is_reported_and_the_others_still_list(
    local: Local, client: TestClient
) -> None:
    cwd = plain_project(local)
    project = captured(local, cwd)
    jobs = local.root / "projects" / project / "jobs"
    (good,) = jobs.glob("job-*.json")
    for name, change in (
        ("job-odd-status", {"status": "paused"}),
        ("job-odd-owner", {"lease_owner": 5}),
    ):
        doc = {**json.loads(good.read_text()), "id": name, **change}
        (jobs / f"{name}.json").write_text(json.dumps(doc))
    out = client.get(f"/api/local/projects/{project}/jobs")
    assert out.status_code == 200, out.text
    assert [j["id"] for j in out.json()["jobs"]] == [good.stem]
    problems = out.json()["problems"]
    assert len(problems) == 2 and "status 'paused' is not one of" in " ".join(problems)
    assert "lease_owner is not a string or null" in " ".join(problems)
    assert client.get(f"/api/local/projects/{project}").json()["problems"] == problems


# -- deleting -----------------------------------------------------------------------------------


def test_delete_one_entry_with_the_current_revision_and_the_projections_follow(
    local: Local, client: TestClient
) -> None:
    cwd = plain_project(local)
    project = captured(local, cwd)
    before = ledger(client, project)
    gone = next(e for e in before["entries"] if e["text"] == "The user prefers pytest.")
    path = f"/api/local/projects/{project}/ledger/{gone['id']}"
    reply = client.delete(path, params={"revision": before["revision"]})
    assert reply.status_code == 200, reply.text
    assert reply.json() == {
        "project": project,
        "deleted": [gone["id"]],
        "revision": 2,
        "repeated": False,
        "problems": [],
    }
    after = ledger(client, project)
    assert [e["text"] for e in after["entries"]] == ["Never commit directly to main."]
    assert after["revision"] == 2 and after["stale_projections"] == []
    files = local.root / "projects" / project
    assert "pytest" not in (files / "auto-memory.md").read_text()  # re-derived
    with local.session(cwd) as memory:
        text, _, source, _, _ = memory.recall("Which test runner, pytest?")
    assert source in ("index", "empty") and "pytest" not in text  # the index forgot it too
    repeat = client.delete(path, params={"revision": before["revision"]})
    assert repeat.status_code == 200 and repeat.json()["repeated"] is True
    assert ledger(client, project)["revision"] == 2  # the repeat changed nothing


def test_a_stale_revision_is_409_and_deletes_nothing(local: Local, client: TestClient) -> None:
    cwd = plain_project(local)
    project = captured(local, cwd)
    seen = ledger(client, project)
    local.clock.advance(seconds=1)
    captured(local, cwd, "t2", "I prefer dark mode.")  # the ledger moves on
    entry = seen["entries"][0]["id"]
    reply = client.delete(
        f"/api/local/projects/{project}/ledger/{entry}", params={"revision": seen["revision"]}
    )
    assert_error(reply, 409, "RevisionConflictError", "the ledger changed since revision 1")
    assert "reload the ledger" in reply.json()["error"]["message"]
    now = ledger(client, project)
    assert now["revision"] == 2 and entry in [e["id"] for e in now["entries"]]


def test_unknown_projects_and_entries_are_404_and_bad_ids_422(
    local: Local, client: TestClient
) -> None:
    project = captured(local, plain_project(local))
    missing = "0" * 64
    for path in ("", "/facts", "/ledger", "/jobs"):
        assert_error(client.get(f"/api/local/projects/{missing}{path}"), 404, "NotFoundError")
    assert_error(client.get("/api/local/projects/../facts"), 404)
    assert_error(client.get("/api/local/projects/ABC/facts"), 422, "InvalidRequest", "project_id")
    gone = client.delete(
        f"/api/local/projects/{project}/ledger/cand-0000000000000000", params={"revision": 1}
    )
    assert_error(gone, 404, "NotFoundError", "nothing was deleted")
    no_revision = client.delete(f"/api/local/projects/{project}/ledger/cand-0000000000000000")
    assert_error(no_revision, 422, "InvalidRequest", "revision")
    assert ledger(client, project)["revision"] == 1


def test_an_empty_root_has_no_projects(client: TestClient, local: Local) -> None:
    assert client.get("/api/local/projects").json() == {
        "root": str(local.root),
        "user_facts": 0,
        "projects": [],
    }


# -- who may look -------------------------------------------------------------------------------


def test_only_an_admin_key_sees_local_memory(local: Local) -> None:
    project = captured(local, plain_project(local))
    for client in make_client(local, require_keys=True):
        keys = client.app.state.test_memory.keys
        _, admin = keys.create(spaces=[], admin=True, name="ops", now=T0)
        # even a key for the project's own space: user.md is user-wide, so no scoped key
        _, scoped = keys.create(spaces=[f"project:{project}"], admin=False, name="p", now=T0)
        entry = ledger_as(client, admin, project)["entries"][0]["id"]
        paths = [f"/api/local/projects{p}" for p in ("", f"/{project}", f"/{project}/facts",
                 f"/{project}/ledger", f"/{project}/jobs")]  # fmt: skip
        for path in paths:
            assert_error(client.get(path), 401, "AuthError")
            assert_error(as_key(client, "GET", path, scoped), 403, "ForbiddenError", "admin key")
            assert as_key(client, "GET", path, admin).status_code == 200
        delete = f"/api/local/projects/{project}/ledger/{entry}"
        refused = as_key(client, "DELETE", delete, scoped, params={"revision": 1})
        assert_error(refused, 403, "ForbiddenError")
        assert len(ledger_as(client, admin, project)["entries"]) == 2  # nothing deleted
        assert as_key(client, "DELETE", delete, admin, params={"revision": 1}).status_code == 200


def as_key(client: TestClient, method: str, path: str, key: str, **kw: Any) -> Any:
    return client.request(method, path, headers={"authorization": f"Bearer {key}"}, **kw)


def ledger_as(client: TestClient, key: str, project: str) -> dict[str, Any]:
    return as_key(client, "GET", f"/api/local/projects/{project}/ledger", key).json()
