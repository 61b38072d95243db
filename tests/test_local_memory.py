"""Local agent memory (issue 7): layout, identity, explicit facts, setting, capture, recall,
deletion, retention. Real files under a temporary ``ORCA_HOME``; time is a ``FrozenClock``;
the extractor is a scripted model (the real one is in test_local_memory_llm.py)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import threading
from pathlib import Path

import pytest

from local_memory_helpers import KeyedModel, ScriptedModel, items, tree, turn, wait_until
from orcamem._kernel.clock import FrozenClock, format_time
from orcamem._kernel.env import memory_dir
from orcamem._kernel.files import FileLock
from orcamem._kernel.jobs import JobQueue, job_id
from orcamem._kernel.jobs.files import FileJobStore
from orcamem.errors import InvalidInputError, NotFoundError, QueueFullError, RevisionConflictError
from orcamem.local.extract import MAX_SOURCE_BYTES, build_source
from orcamem.local.identity import normalize_origin, project_identity
from orcamem.local.ledger import KEEP_CANDIDATES, MAX_EXPLICIT_BYTES, Candidate
from orcamem.local.memory import BARRIER_S, LocalMemory
from orcamem.local.projection import MARKDOWN_NEWEST, publish_project_json
from orcamem.local.transcript import JsonlTranscript
from orcamem.recall.blocks.local import MAX_RECALL_BYTES, pack_recall

T0 = "2026-11-01T10:00:00Z"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "work" / "api"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def transcript(tmp_path: Path) -> JsonlTranscript:
    return JsonlTranscript(tmp_path / "transcript.jsonl")


def session(project: Path, transcript: JsonlTranscript | None, clock: FrozenClock, **kw):
    kw.setdefault("start", False)
    kw.setdefault("session_id", "s1")
    return LocalMemory(project, transcript=transcript, clock=clock, **kw)


def candidates_of(memory: LocalMemory) -> list[tuple[str, str]]:
    return [(c.category, c.text) for c in memory.candidates().candidates]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


# -- layout and identity -----------------------------------------------------------------------


def test_the_layout_is_the_spec_tree(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock, tmp_path: Path
) -> None:
    root = tmp_path / "orca-home" / "memory"
    assert memory_dir() == root  # $ORCA_HOME/memory (conftest points ORCA_HOME into tmp)
    assert memory_dir({"HOME": "/home/x"}).parts[-2:] == (".orca", "memory")
    model = ScriptedModel(items(("project", "The billing service owns invoices.")))
    with session(project, transcript, clock, model=model, start=True) as idle:
        assert idle.begin_turn("t0", "anything about invoices?").barrier == "reached"
        assert idle.session_context() == ""
    assert not root.exists()  # a session that writes nothing creates nothing
    with session(project, transcript, clock, model=model) as memory:
        memory.remember("Prefers short answers.")
        memory.remember("project: Releases are cut on Tuesdays.")
        turn(transcript, "t1", "Who owns invoices?", "The billing service owns invoices.")
        job = memory.finish_turn("t1").job
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
    pid = memory.identity.id
    assert tree(root) == [
        f"projects/{pid}/auto-memory.md",
        f"projects/{pid}/candidates.jsonl",
        f"projects/{pid}/index.sqlite3",
        f"projects/{pid}/jobs/{job.id}.json",
        f"projects/{pid}/memory.md",
        f"projects/{pid}/project.json",
        "user.md",
    ]
    assert len(pid) == 64 and pid == hashlib.sha256(str(project).encode()).hexdigest()
    assert memory.space == f"project:{pid}"
    for path in (root / "projects" / pid).iterdir():  # private to the user
        assert path.stat().st_mode & 0o077 == 0, path


def test_normalize_origin_removes_user_info_query_fragment_and_scheme() -> None:
    same = [
        "https://alice:ghp_secret@GitHub.com/acme/api.git?token=x#readme",
        "git@github.com:acme/api.git",
        "ssh://git@github.com:22/acme/api",
        "https://github.com/acme/api/",
        "git://github.com/acme/api.git",
    ]
    assert {normalize_origin(url) for url in same} == {"github.com/acme/api"}
    assert normalize_origin("ssh://git@gitlab.example.com:2222/a/b.git") == (
        "gitlab.example.com:2222/a/b"
    )
    assert normalize_origin("/srv/git/api.git") == "file:/srv/git/api"
    assert normalize_origin("file:///srv/git/api.git") == "file:/srv/git/api"
    with pytest.raises(InvalidInputError):
        normalize_origin("  ")


def test_origin_path_case_folds_on_github_and_gitlab_and_is_kept_elsewhere() -> None:
    assert normalize_origin("https://GitHub.com/Acme/API.git") == "github.com/acme/api"
    assert normalize_origin("git@gitlab.com:Group/Sub/Repo.git") == "gitlab.com/group/sub/repo"
    # a self-hosted server may tell Acme from acme: only its host is lower-cased
    assert normalize_origin("ssh://git@Git.Example.com/Acme/API.git") == "git.example.com/Acme/API"


def test_a_project_written_under_its_old_case_kept_key_is_found_again(
    tmp_path: Path, clock: FrozenClock
) -> None:
    root = tmp_path / "orca"
    a, b = tmp_path / "a", tmp_path / "b"
    for path, url in ((a, "https://github.com/Acme/API.git"), (b, "git@github.com:acme/api.git")):
        path.mkdir()
        git(path, "init", "-q")
        git(path, "remote", "add", "origin", url)
    with LocalMemory(a, root=root, clock=clock, start=False) as old:
        old.remember("project: Acme API deploys from the release branch.")
        written = old.files.dir
    # what an older version left: the directory keyed by the origin's case as written
    legacy = hashlib.sha256(b"github.com/Acme/API").hexdigest()
    record = json.loads((written / "project.json").read_text(encoding="utf-8"))
    record.update(project_id=legacy, project_identity="github.com/Acme/API")
    (written / "project.json").write_text(json.dumps(record), encoding="utf-8")
    written.rename(root / "projects" / legacy)
    for clone in (a, b):
        with LocalMemory(clone, root=root, clock=clock, start=False) as memory:
            assert memory.identity.id == legacy
            assert "release branch" in memory.session_context()
    assert [p.name for p in (root / "projects").iterdir()] == [legacy]


def test_clones_and_worktrees_share_one_project_identity(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    for path, url in (
        (a, "https://bob:s3cr3tT0ken@github.com/acme/api.git?x=1#y"),
        (b, "git@github.com:acme/api.git"),
    ):
        path.mkdir()
        git(path, "init", "-q")
        git(path, "remote", "add", "origin", url)
    git(a, "commit", "-q", "--allow-empty", "-m", "one")
    git(a, "worktree", "add", "-q", str(tmp_path / "wt"))
    (a / "src").mkdir()
    ids = {project_identity(p) for p in (a, a / "src", b, tmp_path / "wt")}
    assert {(i.id, i.kind, i.identity) for i in ids} == {
        (
            hashlib.sha256(b"github.com/acme/api").hexdigest(),
            "git-origin",
            "github.com/acme/api",
        )
    }
    assert project_identity(tmp_path / "wt").root == (tmp_path / "wt").resolve()
    # no origin: the canonical repository root (a worktree's is its main repository's)
    c = tmp_path / "c"
    c.mkdir()
    git(c, "init", "-q")
    git(c, "commit", "-q", "--allow-empty", "-m", "one")
    git(c, "worktree", "add", "-q", str(tmp_path / "cwt"))
    (c / "deep").mkdir()
    ident = project_identity(c / "deep")
    assert (ident.kind, ident.identity) == ("repo-root", str(c.resolve()))
    assert project_identity(tmp_path / "cwt").id == ident.id
    # not Git: the canonical path (a symlink resolves to it)
    plain = tmp_path / "plain"
    plain.mkdir()
    (tmp_path / "link").symlink_to(plain)
    assert project_identity(tmp_path / "link") == project_identity(plain)
    assert project_identity(plain).kind == "path"


def test_project_json_records_identity_and_cwd_without_secrets(
    tmp_path: Path, clock: FrozenClock
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "remote", "add", "origin", "https://bob:s3cr3tT0ken@github.com/acme/api.git?k=v#f")
    (repo / "sub").mkdir()
    with LocalMemory(repo / "sub", start=False, clock=clock) as memory:
        memory.remember("project: The API is versioned by date.")
        context = memory.session_context()
    data = json.loads(memory.files.project_json.read_text())
    assert data["project_identity"] == "github.com/acme/api"
    assert data["identity_kind"] == "git-origin"
    assert data["last_seen_cwd"] == str((repo / "sub").resolve())
    assert data["project_id"] == memory.identity.id
    raw = memory.files.project_json.read_text()
    assert "s3cr3t" not in raw and "bob" not in raw and "k=v" not in raw
    # project.json is never part of what a model is given
    assert "github.com/acme/api" not in context and str(repo) not in context
    # a later session from another directory of the project updates last_seen_cwd
    with LocalMemory(repo, start=True, clock=clock) as again:
        assert again.identity.id == memory.identity.id
    assert json.loads(memory.files.project_json.read_text())["last_seen_cwd"] == str(repo.resolve())


def test_project_metadata_corrupted_during_lock_contention_is_preserved_and_reported(
    project: Path, clock: FrozenClock
) -> None:
    with LocalMemory(project, start=False, clock=clock) as memory:
        memory.remember("project: first fact")
    files, identity = memory.files, memory.identity
    assert json.loads(files.project_json.read_text())["project_id"] == identity.id
    moved = project_identity(project)  # same project, as seen by another process
    holder = __import__("filelock").FileLock(str(files.lock))  # another holder: excludes us
    holder.acquire()
    result: list = []
    waiter = threading.Thread(
        target=lambda: result.append(
            publish_project_json(files, FileLock(files.lock), moved, format_time(clock.now()))
        )
    )
    waiter.start()
    waiter.join(0.2)  # it waits for the lock
    assert waiter.is_alive()
    files.project_json.write_bytes(b'{"format": "orcamem-project", "project_id": ')  # torn
    holder.release()
    waiter.join(10)
    assert result and "corrupt" in result[0]
    assert files.project_json.read_bytes() == b'{"format": "orcamem-project", "project_id": '
    with LocalMemory(project, start=False, clock=clock) as memory:
        memory.remember("project: second fact")  # writing facts still works
        status = memory.status()
    assert any("corrupt" in p for p in status["problems"])
    assert files.project_json.read_bytes() == b'{"format": "orcamem-project", "project_id": '


# -- explicit facts ----------------------------------------------------------------------------


def test_remember_writes_user_and_project_facts_loaded_at_session_start(
    project: Path, clock: FrozenClock
) -> None:
    with LocalMemory(project, start=False, clock=clock) as memory:
        user = memory.remember("Prefers pnpm over npm.")
        proj = memory.remember("Project:   We deploy with Helm on Fridays.")
        again = memory.remember("project: we deploy with helm on fridays")
        assert (user.scope, user.path) == ("user", memory.layout.user_md)
        assert (proj.scope, proj.path, proj.fact) == (
            "project",
            memory.files.memory_md,
            "We deploy with Helm on Fridays.",
        )
        assert user.added and proj.added and not again.added  # exact normalized duplicate
        context = memory.session_context()
    assert "- Prefers pnpm over npm." in context
    assert "- We deploy with Helm on Fridays." in context
    assert context.count("Helm") == 1
    # the user fact follows the user into another project; the project fact does not
    other = project.parent / "other"
    other.mkdir()
    with LocalMemory(other, start=False, clock=clock) as elsewhere:
        text = elsewhere.session_context()
    assert "pnpm" in text and "Helm" not in text


def test_explicit_facts_are_loaded_up_to_8_kib_each(project: Path, clock: FrozenClock) -> None:
    assert MAX_EXPLICIT_BYTES == 8 * 1024
    with LocalMemory(project, start=False, clock=clock) as memory:
        for number in range(400):
            memory.remember(f"Fact number {number:03d} is about something worth keeping.")
        size = memory.layout.user_md.stat().st_size
        assert size > MAX_EXPLICIT_BYTES
        context = memory.session_context()
    body = context.split("User facts (memory/user.md):\n", 1)[1].split("\n[truncated:", 1)[0]
    assert len((body + "\n").encode()) <= MAX_EXPLICIT_BYTES
    assert body.endswith("worth keeping.")  # cut at a line end
    assert "Fact number 000" in body and "Fact number 399" not in body
    assert f"of {size:,} bytes loaded; the limit is 8,192 bytes" in context


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "nothing to remember"),
        ("project:   ", "nothing to remember"),
        ("x" * 1001, "1,000"),
        ("the deploy key is ghp_" + "a1B2" * 9, "secret"),
        ("project: DB_PASSWORD=hunter2hunter2", "secret"),
    ],
)
def test_bad_facts_are_refused_and_nothing_is_written(
    project: Path, clock: FrozenClock, text: str, message: str
) -> None:
    with LocalMemory(project, start=False, clock=clock) as memory:
        with pytest.raises(InvalidInputError, match=message):
            memory.remember(text)
        assert not memory.layout.root.exists()


# -- the setting -------------------------------------------------------------------------------


def _write_config(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_auto_memory_false_stops_worker_capture_and_recall_of_new_sessions_only(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock, tmp_path: Path
) -> None:
    model = ScriptedModel(items(("project", "Invoices are archived after 7 years.")))
    running = session(project, transcript, clock, model=model, start=True, session_id="s1")
    turn(transcript, "t1", "How long do we keep invoices?", "Seven years, then archived.")
    running.finish_turn("t1")
    wait_until(lambda: len(running.candidates().candidates) == 1)
    running.remember("project: Invoices are PDFs.")
    _write_config(tmp_path / "orca-home" / "config.toml", "auto_memory = false\n")
    before = {p: p.read_bytes() for p in running.layout.root.rglob("*") if p.is_file()}
    threads = threading.active_count()
    with session(project, transcript, clock, model=model, start=True, session_id="s2") as off:
        assert not off.enabled and off.setting.source.endswith("config.toml")
        assert threading.active_count() == threads  # no worker started
        turn(transcript, "t2", "Where are invoices stored?", "In S3.", session="s2")
        capture = off.finish_turn("t2")
        assert not capture.eligible and "disabled" in capture.reason
        snapshot = off.begin_turn("t3", "invoices archived?")
        assert (snapshot.text, snapshot.source) == ("", "disabled")
        assert "Invoices are PDFs." in off.session_context()  # explicit facts still load
        off.remember("Prefers UTC timestamps.")  # and /remember still works
    after = {p: p.read_bytes() for p in running.layout.root.rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before  # nothing deleted or changed
    # the session that started before the change keeps its setting
    assert running.enabled and "Invoices" in running.begin_turn("t9", "invoices archived").text
    running.close()


def test_a_trusted_project_config_can_turn_it_off_an_untrusted_one_cannot(
    project: Path, clock: FrozenClock, tmp_path: Path
) -> None:
    _write_config(project / ".orca" / "config.toml", "auto_memory = false\n")
    with LocalMemory(project, start=False, clock=clock) as untrusted:
        assert untrusted.enabled
        assert any("not trusted" in p for p in untrusted.setting.problems)
    with LocalMemory(project, start=False, clock=clock, trust_project=True) as trusted:
        assert not trusted.enabled and trusted.setting.source.endswith(".orca/config.toml")
    _write_config(
        tmp_path / "orca-home" / "config.toml", f"trusted_projects = [{str(project)!r}]\n"
    )
    with LocalMemory(project, start=False, clock=clock) as listed:
        assert not listed.enabled
    for broken in ("auto_memory = ", 'auto_memory = "no"\n'):
        _write_config(tmp_path / "orca-home" / "config.toml", broken)
        with LocalMemory(project, start=False, clock=clock) as memory:
            assert not memory.enabled and memory.setting.problems  # fails closed, says why


# -- capture -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"status": "failed"}, "failed"),
        ({"status": "cancelled"}, "cancelled"),
        ({"verifier": "failed"}, "verifier failed"),
        ({"kind": "subagent"}, "subagent turn"),
        ({"kind": "tool"}, "tool turn"),
        ({"complete": False}, "not durably committed"),
    ],
)
def test_only_successful_durably_completed_root_turns_are_captured(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock, options: dict, reason: str
) -> None:
    with session(project, transcript, clock) as memory:
        turn(transcript, "t1", "We use Postgres 16.", "Noted: Postgres 16.", **options)
        capture = memory.finish_turn("t1")
        assert not capture.eligible and reason in capture.reason
        assert not memory.files.jobs.exists()
        turn(transcript, "t2", "We use Postgres 16.", "Noted: Postgres 16.")
        turn(transcript, "t3", "And Redis 7.", "Noted: Redis 7.", verifier=None)  # no verifier
        assert memory.finish_turn("t2").job is not None
        assert memory.finish_turn("t3").job is not None


def test_history_disabled_sessions_capture_nothing(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(transcript, "t1", "We use Postgres 16.", "Noted.")
    for memory in (
        session(project, transcript, clock, history_persistent=False),
        session(project, None, clock),
    ):
        with memory:
            capture = memory.finish_turn("t1")
            assert not capture.eligible and "not persistent" in capture.reason
            assert memory.recover() == []


def test_the_source_is_the_turns_user_and_assistant_messages_redacted_and_bounded(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    token = "ghp_" + "Z9y8" * 9
    turn(transcript, "t0", "An earlier turn about Redis.", "Redis it is.")
    turn(
        transcript,
        "t1",
        f"Deploy with GITHUB_TOKEN={token} please",
        "Deployed to staging.",
        extra=[("system", "system", "You are Orca."), ("tool", "tool", "kubectl output: 3 pods")],
    )
    with session(project, transcript, clock) as memory:
        job = memory.finish_turn("t1").job
    assert [m["role"] for m in job.payload["messages"]] == ["user", "assistant"]
    sent = json.dumps(job.payload)
    assert token not in sent and "[REDACTED:github_token]" in sent
    assert "You are Orca" not in sent and "kubectl" not in sent and "Redis" not in sent
    assert job.payload["redactions"] == 1 and not job.payload["truncated"]
    # on disk, the job file holds the same bounded, redacted input
    on_disk = (memory.files.jobs / f"{job.id}.json").read_text()
    assert token not in on_disk and json.loads(on_disk)["payload"] == job.payload
    # bounded to 32 KiB
    big = build_source(
        [
            {"role": "user", "text": "é" * 40_000},
            {"role": "assistant", "text": "never reached"},
        ]
    )
    assert MAX_SOURCE_BYTES == 32 * 1024
    assert len(big.text.encode()) <= MAX_SOURCE_BYTES and big.truncated
    assert big.text.endswith("[…truncated]") and "never reached" not in big.text


def test_jobs_are_idempotent_by_session_turn_and_source_digest(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(transcript, "t1", "Our staging cluster is eu-west-1.", "Got it.")
    with session(project, transcript, clock) as memory:
        first = memory.finish_turn("t1").job
        again = memory.finish_turn("t1").job
        assert (
            first.id == again.id == job_id(memory.space, "extract", "s1", "t1", first.source_digest)
        )
        assert memory.jobs.counts(memory.space)["pending"] == 1
        assert (memory.files.jobs / f"{first.id}.json").is_file()


def test_extraction_outcomes(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    replies = {
        "Question 1": "NOTHING",
        "Question 2": None,  # empty
        "Question 3": {"items": []},  # malformed
        "Question 4": items(("gossip", "Bob is late.")),  # unclassified
        "Question 5": {"candidates": [{"category": "user", "text": f"f{i}"} for i in range(9)]},
        "Question 6": items(("user", "x" * 301)),  # over-limit text
        "Question 7": items(
            ("feedback", "Run the linter before committing."),
            ("reference", "The API spec is at https://api.example.com/spec."),
            ("user", "My deploy token is ghp_" + "a1B2" * 9),
            ("project", "The [REDACTED:password] is shared in the vault."),
            ("project", "line one\nline two"),
        ),
    }
    model = KeyedModel(replies)
    with session(project, transcript, clock, model=model) as memory:
        for number in range(1, 8):
            turn(transcript, f"t{number}", f"Question {number}?", f"Answer {number}.")
            memory.finish_turn(f"t{number}")
            clock.advance(seconds=1)
        ran = memory.run_jobs()
        jobs = {j.turn_id: j for j in memory.jobs.list(memory.space)}
    assert len(ran) == 1 + 5 * 3 + 1  # five jobs use their three attempts each
    assert (jobs["t1"].status, jobs["t1"].result) == ("done", None)  # NOTHING: the only empty
    for turn_id, reason in [
        ("t2", "empty"),
        ("t3", "malformed"),
        ("t4", "unclassified"),
        ("t5", "over-limit"),
        ("t6", "over-limit"),
    ]:
        job = jobs[turn_id]
        assert (job.status, job.attempts) == ("failed", 3) and reason in job.error, job.error
    assert jobs["t7"].status == "done"
    assert candidates_of(memory) == [
        ("feedback", "Run the linter before committing."),
        ("reference", "The API spec is at https://api.example.com/spec."),
    ]
    assert [r["reason"].split(":")[0] for r in jobs["t7"].result["rejected"]] == [
        "secret detector",
        "private value (redacted in the source)",
        "raw output or code",
    ]
    assert "ghp_" not in memory.files.candidates.read_text()


def job_for(memory: LocalMemory, turn_id: str):
    return next(j for j in memory.jobs.list(memory.space, limit=500) if j.turn_id == turn_id).id


def test_exact_duplicates_dedupe_and_near_duplicate_corrections_keep_their_provenance(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    model = ScriptedModel(
        items(("project", "We deploy on Fridays."), ("project", "we deploy on fridays")),
        items(("project", "  WE DEPLOY ON FRIDAYS! ")),
        items(("project", "We deploy on Thursdays, not Fridays.")),
    )
    with session(project, transcript, clock, model=model) as memory:
        for number in (1, 2, 3):
            turn(transcript, f"t{number}", f"When do we deploy? ({number})", "Noted.")
            memory.finish_turn(f"t{number}")
            clock.advance(minutes=1)
            assert [r.outcome for r in memory.run_jobs()] == ["done"]
        kept = memory.candidates().candidates
    assert [(c.text, c.turn_id) for c in kept] == [
        ("We deploy on Fridays.", "t1"),
        ("We deploy on Thursdays, not Fridays.", "t3"),
    ]
    assert kept[0].job_id != kept[1].job_id and kept[0].recorded_at < kept[1].recorded_at
    assert all(c.session_id == "s1" and c.extractor == "scripted:test" for c in kept)


def test_retention_128_candidates_newest_64_in_markdown(project: Path, clock: FrozenClock) -> None:
    assert (KEEP_CANDIDATES, MARKDOWN_NEWEST) == (128, 64)
    with LocalMemory(project, start=False, clock=clock) as memory:
        for number in range(130):
            clock.advance(seconds=1)
            fact = f"Service number {number} listens on port {8000 + number}."
            stamp = format_time(clock.now())
            memory.ledger.publish(
                [
                    Candidate(
                        f"cand-{number:016x}",
                        "project",
                        fact,
                        "s1",
                        f"t{number}",
                        f"job-{number}",
                        None,
                        None,
                        stamp,
                    )
                ],
                job_id=f"job-{number}",
            )
        state = memory.candidates()
    assert len(state.candidates) == 128
    assert state.candidates[0].text.startswith("Service number 2 ")  # the oldest two went
    markdown = memory.files.auto_memory_md.read_text()
    assert markdown.count("\n- **project**") == 64
    assert "Service number 129 " in markdown and "Service number 65 " not in markdown
    assert "Service number 66 " in markdown
    assert "session=s1 turn=t129 job=job-129" in markdown  # provenance comment


def test_file_job_store_admits_64_active_and_keeps_128_done_per_project(
    tmp_path: Path, clock: FrozenClock
) -> None:
    store = FileJobStore(tmp_path / "jobs", FileLock(tmp_path / ".lock"))
    queue = JobQueue(store)
    for number in range(64):
        queue.enqueue("project:a", "extract", "s", f"t{number}", f"d{number}", {}, clock.now())
    with pytest.raises(QueueFullError, match="64 active jobs"):
        queue.enqueue("project:a", "extract", "s", "t64", "d64", {}, clock.now())
    for _ in range(3):  # an exhausted job no longer uses capacity
        job = queue.claim("w", 30, clock.now())
        queue.fail(job, "malformed output", clock.now())
    queue.enqueue("project:a", "extract", "s", "t64", "d64", {}, clock.now())
    for _ in range(64):
        clock.advance(seconds=1)
        job = queue.claim("w", 30, clock.now())
        queue.publish(job, {"n": 1}, clock.now())
    for number in range(65, 130):
        clock.advance(seconds=1)
        queue.enqueue("project:a", "extract", "s", f"t{number}", f"d{number}", {}, clock.now())
        queue.publish(queue.claim("w", 30, clock.now()), {"n": 1}, clock.now())
    assert queue.counts("project:a") == {"pending": 0, "running": 0, "done": 128, "failed": 1}
    assert len(list((tmp_path / "jobs").glob("job-*.json"))) == 129
    # a job file that cannot be read is skipped, reported and never overwritten
    broken = next(p for p in (tmp_path / "jobs").glob("job-*.json") if '"done"' in p.read_text())
    broken.write_text("{torn")
    assert queue.counts("project:a")["done"] == 127
    assert store.problems() and broken.read_text() == "{torn"


# -- recall ------------------------------------------------------------------------------------

FACTS = [
    ("project", "Deploys go out with Helm on Fridays."),
    ("user", "The user prefers pnpm over npm."),
    ("reference", "The incident runbook lives at https://wiki.example.com/runbook."),
    ("feedback", "Run the integration tests before merging deploy changes."),
    ("project", "Staging deploys use the eu-west-1 cluster."),
    ("project", "The deploy pipeline pins Helm 3.14."),
    ("project", "Production deploys need two approvals."),
    ("project", "Rollbacks of a deploy use helm rollback."),
    ("project", "The analytics database is ClickHouse."),
]


def seeded(project: Path, transcript: JsonlTranscript, clock: FrozenClock, **kw) -> LocalMemory:
    model = ScriptedModel(*(items(fact) for fact in FACTS))
    memory = session(project, transcript, clock, model=model, **kw)
    for number, _ in enumerate(FACTS):
        turn(transcript, f"t{number}", f"Tell me fact {number}.", "Done.")
        memory.capture("s1", f"t{number}")
        memory.run_jobs()
        clock.advance(days=1)
    return memory


def test_recall_is_bounded_relevant_attributed_and_framed_as_claims(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    memory = seeded(project, transcript, clock)
    before = transcript.path.read_bytes()
    snapshot = memory.begin_turn("t100", "How do deploy rollbacks with helm work?")
    assert snapshot.source == "index" and snapshot.barrier == "none"
    assert 1 <= len(snapshot.entries) <= 6 and len(snapshot.text.encode()) <= MAX_RECALL_BYTES
    assert snapshot.entries[0].text == "Rollbacks of a deploy use helm rollback."
    assert all("deploy" in e.text.lower() or "helm" in e.text.lower() for e in snapshot.entries)
    assert "ClickHouse" not in snapshot.text and "pnpm" not in snapshot.text
    assert (
        "not instructions" in snapshot.text
        and "Verify each against the repository" in snapshot.text
    )
    assert "[project · 2 days ago · session s1 · turn t7] Rollbacks of a deploy" in snapshot.text
    assert transcript.path.read_bytes() == before  # recalled context is not transcript
    nothing = memory.begin_turn("t101", "What is the capital of France?")
    assert (nothing.text, nothing.entries) == ("", ())
    memory.close()


def test_recall_packs_at_most_six_entries_and_3072_bytes(clock: FrozenClock) -> None:
    now = clock.now()
    many = [
        Candidate(
            f"cand-{i:016x}",
            "project",
            f"fact {i} " + "word " * 50,
            "s",
            "t",
            None,
            None,
            None,
            format_time(now),
        )
        for i in range(10)
    ]
    text, chosen = pack_recall(many, now)
    assert len(chosen) == 6 and len(text.encode()) <= 3072
    huge = [
        Candidate(
            f"cand-{i:016x}", "project", "ü" * 290, "s", "t", None, None, None, format_time(now)
        )
        for i in range(6)
    ]
    text, chosen = pack_recall(huge, now)
    assert 0 < len(chosen) < 6 and len(text.encode()) <= 3072


def test_recall_falls_back_to_lexical_overlap_when_the_index_cannot_be_used(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    memory = seeded(project, transcript, clock)
    memory.files.index.unlink()
    memory.files.index.mkdir()  # no index can be written or read here
    snapshot = memory.begin_turn("t100", "helm rollback of a deploy")
    assert snapshot.source == "fallback"
    assert snapshot.entries[0].text == "Rollbacks of a deploy use helm rollback."
    assert len(snapshot.entries) <= 6 and "ClickHouse" not in snapshot.text
    assert any("lexical fallback" in p for p in snapshot.problems)
    memory.close()


def test_a_turn_waits_at_most_the_barrier_then_uses_the_last_committed_ledger(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    assert BARRIER_S == 5.0
    release = threading.Event()
    model = ScriptedModel(
        items(("project", "The queue is RabbitMQ.")),
        lambda: release.wait(10) and items(("project", "The queue moved to Kafka.")),
    )
    memory = session(project, transcript, clock, model=model, start=True, barrier_s=0.3)
    turn(transcript, "t1", "Which queue?", "RabbitMQ.")
    memory.finish_turn("t1")
    quick = memory.begin_turn("t2", "which message queue do we use?")  # the worker is quick
    assert quick.barrier == "reached" and "RabbitMQ" in quick.text
    turn(transcript, "t2", "Still RabbitMQ?", "No, Kafka now.")
    memory.finish_turn("t2")
    slow = memory.begin_turn("t3", "which message queue do we use?")  # the model is stuck
    assert slow.barrier == "timed out"
    assert "RabbitMQ" in slow.text and "Kafka" not in slow.text  # the last committed ledger
    release.set()
    wait_until(lambda: len(memory.candidates().candidates) == 2)
    assert "Kafka" in memory.begin_turn("t4", "which message queue?").text
    memory.close()


def test_a_continuation_keeps_the_original_snapshot_and_rebuilds_messages_by_turn_id(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    memory = seeded(project, transcript, clock)
    first = memory.begin_turn("t50", "helm deploy rollbacks")
    transcript.message("s1", "t50", "user", "helm deploy rollbacks")
    transcript.message("s1", "t50", "tool", "helm history: 3 revisions", kind="tool")
    memory.ledger.publish(
        [
            Candidate(
                "cand-00000000000000ff",
                "project",
                "Helm rollbacks need a ticket.",
                "s1",
                "t9",
                "job-x",
                None,
                None,
                format_time(clock.now()),
            )
        ],
        job_id="job-x",
    )
    cont = memory.continue_turn("t50")
    assert cont.snapshot is first and "ticket" not in cont.snapshot.text
    assert [r.text for r in cont.records] == ["helm deploy rollbacks", "helm history: 3 revisions"]
    memory.close()
    # after a restart: exact messages from the records with the same turn_id; a new snapshot
    with session(project, transcript, clock) as restarted:
        again = restarted.continue_turn("t50")
    assert again.snapshot.restored and "ticket" in again.snapshot.text
    assert [r.turn_id for r in again.records] == ["t50", "t50"]


def test_after_a_restart_captures_are_rebuilt_from_the_turns_transcript_records(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    turn(transcript, "t1", "We chose Postgres over MySQL for JSONB.", "Recorded.")
    turn(transcript, "t2", "And Redis for caching.", "Recorded.")
    turn(transcript, "t3", "This one failed.", "Oops.", status="failed")
    with session(project, transcript, clock) as first:
        expected = first.capture("s1", "t1")[0]  # t1 made it to a job; t2 did not (crash)
    model = ScriptedModel(
        items(("project", "Postgres was chosen over MySQL for JSONB.")),
        items(("project", "Redis is the cache.")),
    )
    with session(project, transcript, clock, model=model, start=True) as second:
        wait_until(lambda: len(second.candidates().candidates) == 2)
        jobs = {j.turn_id: j for j in second.jobs.list(second.space)}
    assert set(jobs) == {"t1", "t2"} and jobs["t1"].id == expected.id  # same job, not a new one
    assert sorted(model.sent) == sorted(
        [
            "[user]\nWe chose Postgres over MySQL for JSONB.\n\n[assistant]\nRecorded.",
            "[user]\nAnd Redis for caching.\n\n[assistant]\nRecorded.",
        ]
    )  # exactly each turn's messages, not the session


# -- deletion ----------------------------------------------------------------------------------


def test_deletion_is_revisioned_and_idempotent(
    project: Path, transcript: JsonlTranscript, clock: FrozenClock
) -> None:
    memory = seeded(project, transcript, clock)
    state = memory.candidates()
    target = state.candidates[0].id
    with pytest.raises(RevisionConflictError, match=f"revision {state.revision}"):
        memory.forget([target], revision=state.revision - 1)
    with pytest.raises(NotFoundError):
        memory.forget(["cand-0000000000000bad"], revision=state.revision)
    assert memory.candidates().candidates == state.candidates  # nothing changed
    done = memory.forget([target], revision=state.revision)
    assert (done.deleted, done.revision, done.repeated) == ((target,), state.revision + 1, False)
    repeat = memory.forget([target], revision=state.revision)  # the same request again
    assert repeat.repeated and repeat.revision == state.revision + 1
    assert target not in memory.candidates().ids()
    assert target not in memory.files.auto_memory_md.read_text()
    assert "Deploys go out with Helm" not in memory.begin_turn("t70", "helm deploys fridays").text
    # a replayed job cannot bring it back
    replay = memory.ledger.publish([state.candidates[0]], job_id="job-replayed")
    assert replay.kept == () and target not in memory.candidates().ids()
    # everything, as of a revision
    current = memory.candidates().revision
    cleared = memory.forget(None, revision=current)
    assert len(cleared.deleted) == len(state.candidates) - 1
    assert memory.candidates().candidates == ()
    assert memory.forget(None, revision=current).repeated
    with pytest.raises(InvalidInputError):
        memory.forget([], revision=cleared.revision)
    memory.close()
