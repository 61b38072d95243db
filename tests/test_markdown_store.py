"""The built-in Markdown provider's store: files, frontmatter, lexical score, decay, archive, log.

The spec sentences these tests check are rows of docs/conformance.md (seed 004).
"""

from __future__ import annotations

import doctest
import json
import multiprocessing
from pathlib import Path

import pytest

from orcamem._kernel.clock import FrozenClock
from orcamem.capability.markdown import store as markdown_module
from orcamem.capability.markdown.store import (
    BANNER_HEADLINE,
    LOGGED_QUERY_CHARS,
    MarkdownEntry,
    MarkdownStore,
    parse_entry,
    render_entry,
)
from orcamem.recall import markdown as markdown_score
from orcamem.recall.presets import PRESETS, get_preset

SPEC_FILE = """---
id: 20260828T193000-a1b2c3d4
created: 2026-08-28T19:30:00.000Z
updated: 2026-08-28T19:30:00.000Z
importance: 0.5
tags: [roadmap, headroom]
citations: 3
last-cited: 2026-08-29T08:00:00.000Z
---

Jeff runs upstream Craft stable side-by-side with Vorno, so the fork must keep
its own branding and config directory.
"""

W = get_preset("markdown").weights


@pytest.fixture
def clock() -> FrozenClock:
    return FrozenClock("2026-08-28T19:30:00Z")


@pytest.fixture
def store(tmp_path: Path, clock: FrozenClock) -> MarkdownStore:
    return MarkdownStore(tmp_path, clock=clock)


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def hand_file(entry_id: str, body: str, **keys: str) -> str:
    rows = [f"id: {entry_id}", *(f"{k.replace('_', '-')}: {v}" for k, v in keys.items())]
    return "---\n" + "\n".join(rows) + "\n---\n\n" + body + "\n"


def ids(store: MarkdownStore, query: str, **options: object) -> list[str]:
    return [hit.entry.id for hit in store.search(query, **options).hits]  # type: ignore[arg-type]


def all_md(root: Path) -> list[str]:
    return sorted(p.name for p in root.rglob("*.md"))


# -- layout and file format -------------------------------------------------------------------


def test_layout_entries_archive_and_log(store: MarkdownStore, tmp_path: Path) -> None:
    entry = store.save("We ship the desktop build on Thursdays.")
    store.search("desktop build")
    root = tmp_path / "memory"
    assert entry.path == root / "entries" / f"{entry.id}.md"
    assert (root / "archive").is_dir()
    assert (root / "retrieval-log.jsonl").is_file()
    assert entry.path.read_text(encoding="utf-8").startswith("---\nid: ")


def test_folders_are_created_on_first_save_only(store: MarkdownStore, tmp_path: Path) -> None:
    store.search("anything at all")
    store.load(include_archived=True)
    assert not (tmp_path / "memory").exists()
    store.save("The staging database is called rehearsal.")
    assert (tmp_path / "memory" / "entries").is_dir()
    assert (tmp_path / "memory" / "archive").is_dir()


def test_the_spec_file_parses_and_renders_byte_for_byte() -> None:
    entry = parse_entry(SPEC_FILE)
    assert entry.id == "20260828T193000-a1b2c3d4"
    assert entry.importance == 0.5
    assert entry.tags == ("roadmap", "headroom")
    assert entry.citations == 3
    assert entry.last_cited == "2026-08-29T08:00:00.000Z"
    assert render_entry(entry) == SPEC_FILE


def test_saved_file_has_the_spec_fields_and_omits_empty_keys(store: MarkdownStore) -> None:
    entry = store.save("Jeff keeps his own config directory.")
    assert entry.path is not None
    text = entry.path.read_text(encoding="utf-8")
    assert text == (
        f"---\nid: {entry.id}\ncreated: 2026-08-28T19:30:00.000Z\n"
        "updated: 2026-08-28T19:30:00.000Z\nimportance: 0.5\n---\n\n"
        "Jeff keeps his own config directory.\n"
    )
    assert "tags:" not in text and "citations:" not in text and "last-cited:" not in text


def test_only_id_is_required(tmp_path: Path, store: MarkdownStore) -> None:
    write(tmp_path / "memory" / "entries", "bare.md", "---\nid: bare-1\n---\n\nKiwi deploys.\n")
    write(tmp_path / "memory" / "entries", "noid.md", "---\ntags: [kiwi]\n---\n\nKiwi noid.\n")
    found = store.search("kiwi deploys")
    assert [hit.entry.id for hit in found.hits] == ["bare-1"]
    assert [p.name for p in found.skipped] == ["noid.md"]
    assert render_entry(parse_entry("---\nid: x\nupdated:\n---\n\nBody\n")) == (
        "---\nid: x\n---\n\nBody\n"
    )


def test_id_format_is_timestamp_and_eight_hex(store: MarkdownStore) -> None:
    entry = store.save("Format check.")
    stamp, suffix = entry.id.split("-")
    assert stamp == "20260828T193000"
    assert len(suffix) == 8 and int(suffix, 16) >= 0


def test_unknown_frontmatter_keys_survive_a_retrieval_rewrite(
    store: MarkdownStore, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "memory" / "entries",
        "hand.md",
        "---\nid: hand-1\nsource: notebook\ncreated: 2026-08-01T00:00:00.000Z\n---\n\n"
        "Mango releases need two approvals.\n",
    )
    assert ids(store, "mango releases") == ["hand-1"]
    text = path.read_text(encoding="utf-8")
    assert "source: notebook" in text
    assert text.endswith("\n\nMango releases need two approvals.\n")


@pytest.mark.parametrize(
    "text",
    [
        "no frontmatter at all",
        "---\nid: x\nno closing line\n",
        "---\nid: x\nthis is not a key value line\n---\n\nbody\n",
        "---\ntags: [a]\n---\n\nno id\n",
        "---\nid: x\nimportance: banana\n---\n\nbody\n",
        "---\nid: x\nimportance: 1.5\n---\n\nbody\n",
        "---\nid: x\ncreated: yesterday\n---\n\nbody\n",
        "---\nid: x\ncitations: -2\n---\n\nbody\n",
    ],
)
def test_unparseable_files_are_rejected_by_the_parser(text: str) -> None:
    with pytest.raises(markdown_module.MarkdownParseError):
        parse_entry(text)


def test_a_bad_file_is_skipped_not_fatal(store: MarkdownStore, tmp_path: Path) -> None:
    entries = tmp_path / "memory" / "entries"
    good = store.save("Papaya builds run on the arm64 runners.")
    write(entries, "broken.md", "---\nid: broken\nimportance: loud\n---\n\nPapaya builds\n")
    (entries / "binary.md").write_bytes(b"\xff\xfe\x00garbage")
    found = store.search("papaya builds")
    assert [hit.entry.id for hit in found.hits] == [good.id]
    assert sorted(p.name for p in found.skipped) == ["binary.md", "broken.md"]


# -- lexical score ----------------------------------------------------------------------------


def test_markdown_preset_is_registered_additively() -> None:
    assert {"hybrid", "lexical", "vector", "markdown"} <= set(PRESETS)
    assert W["lexical"] == 1.0 and W["vector"] == 0.0
    assert W["tag"] > W["body"]


def test_score_is_the_fraction_of_distinct_query_words() -> None:
    body = "The nightly export writes parquet files"
    assert markdown_score.match("nightly export", body, [], W).coverage == 1.0
    assert markdown_score.match("nightly export schedule owner", body, [], W).coverage == 0.5
    # repeating a word does not change the fraction: distinct words only
    assert markdown_score.match("export export nightly nightly", body, [], W).coverage == 1.0


def test_tag_matches_weigh_more_than_body_matches(store: MarkdownStore) -> None:
    body_hit = store.save("Notes on the roadmap and the quarterly review.")
    tag_hit = store.save("Notes on the quarterly review.", tags=["roadmap"])
    assert ids(store, "quarterly roadmap") == [tag_hit.id, body_hit.id]
    assert markdown_score.match("roadmap", "", ["roadmap"], W).coverage == W["tag"]


def test_a_tag_match_beats_a_body_match_for_a_one_word_query(store: MarkdownStore) -> None:
    # the body holds "deploy" verbatim: without a phrase of two words there is no bonus, so
    # the tag's 1.5 beats the body's 1.0 (both were 1.5 before)
    body_hit = store.save("Deploy on Fridays only after the freeze lifts.")
    tag_hit = store.save("Fridays are frozen until the release.", tags=["deploy"])
    assert ids(store, "deploy") == [tag_hit.id, body_hit.id]
    one_word = markdown_score.match("Deploy?", "deploy on fridays", [], W)
    assert one_word.verbatim == 0.0 and one_word.score < W["tag"]


def test_containing_the_query_verbatim_earns_a_bonus(store: MarkdownStore) -> None:
    scattered = store.save("The policy for branching: one topic branch per plan.")
    verbatim = store.save("Our branching policy is one topic branch per plan.")
    assert ids(store, "branching policy") == [verbatim.id, scattered.id]
    found = markdown_score.match("Branching  Policy", "our branching policy is", [], W)
    assert found.verbatim == W["verbatim"]


def test_short_words_and_stop_words_are_dropped() -> None:
    assert markdown_score.query_terms("What is a K8s pod, X?") == ["k8s", "pod"]
    assert markdown_score.query_terms("the and of to a I") == []


def test_the_stop_words_are_a_short_list_not_the_engines() -> None:
    # words a user searches by stay words (the engine's 195-word list drops all three)
    assert markdown_score.query_terms("which type, kind and sort?") == ["type", "kind", "sort"]
    assert len(markdown_score.STOP_WORDS) < 80  # 50 words and their contractions


def test_branching_does_not_find_branch_per_plan(store: MarkdownStore) -> None:
    store.save("one topic branch per plan")
    assert store.search("what did we decide about branching?").hits == []


def test_minimum_match_however_fresh_or_important(store: MarkdownStore) -> None:
    store.save("Coconut is the release codename.", importance=1.0)
    # one word of five: under the floor, though the memory is brand new and pinned
    assert ids(store, "coconut staging database password rotation") == []
    assert markdown_score.clears_floor(markdown_score.match("x", "y", [], W), W) is False


def test_short_or_vague_queries_retrieve_little(store: MarkdownStore) -> None:
    store.save("Okay is what the user says when they approve a plan.")
    assert store.search("ok?").hits == []
    assert store.search("is it?").hits == []


def test_top_k_bounds_the_hits(store: MarkdownStore) -> None:
    for number in range(6):
        store.save(f"Durian fact number {number}.")
    assert len(store.search("durian fact", top_k=2).hits) == 2
    assert len(store.search("durian fact", top_k=50).hits) == 6


# -- decay ------------------------------------------------------------------------------------


def test_decay_formula_at_zero_and_one_half_life() -> None:
    assert markdown_score.decay(0, 60, 0.5) == 1.0
    assert markdown_score.decay(60, 60, 0.5) == 0.5
    assert markdown_score.decay(120, 60, 0.5) == 0.25
    assert markdown_score.decay(30, 60, 0.5) == pytest.approx(0.5**0.5)


def test_importance_changes_the_half_life_not_the_score() -> None:
    assert markdown_score.effective_half_life(60, 0.7) == 120
    assert markdown_score.effective_half_life(60, 0.3) == 30
    assert markdown_score.effective_half_life(60, 0.5) == 60
    assert markdown_score.decay(0, 60, 0.7) == 1.0  # starts at 1, like any other
    assert markdown_score.decay(120, 60, 0.7) == 0.5
    assert markdown_score.decay(30, 60, 0.3) == 0.5


def test_pinned_at_09_never_decays_or_archives(store: MarkdownStore, clock: FrozenClock) -> None:
    pinned = store.save("Never force-push to main.", importance=0.9)
    assert markdown_score.decay(10_000, 60, 0.9) == 1.0
    clock.advance(days=3650)
    store.save("A later save sweeps.")
    assert pinned.path is not None and pinned.path.exists()


def test_age_runs_from_latest_of_updated_and_last_cited_else_created(
    store: MarkdownStore, tmp_path: Path, clock: FrozenClock
) -> None:
    entries = tmp_path / "memory" / "entries"
    old = "2026-01-01T00:00:00.000Z"
    recent = "2026-08-20T00:00:00.000Z"
    write(entries, "a.md", hand_file("created-only", "Alpha.", created=old))
    write(entries, "b.md", hand_file("updated", "Beta.", created=old, updated=recent))
    write(
        entries, "c.md", hand_file("cited", "Gamma.", created=old, updated=old, last_cited=recent)
    )
    store.save("Sweep now.")
    assert all_md(tmp_path / "memory" / "archive") == ["a.md"]
    assert (entries / "b.md").exists() and (entries / "c.md").exists()
    now = clock.now()
    fresh = markdown_score.age_days(
        now,
        created=markdown_module.parse_time(old),
        updated=markdown_module.parse_time(old),
        last_cited=markdown_module.parse_time(recent),
    )
    assert fresh == pytest.approx((now - markdown_module.parse_time(recent)).days, abs=1)


def test_archive_candidate_below_025_about_120_days(
    store: MarkdownStore, clock: FrozenClock
) -> None:
    memory = store.save("Guava is the old codename.")
    clock.advance(days=119)
    store.save("Sweep at 119 days.")
    assert memory.path is not None and memory.path.exists()
    clock.advance(days=2)
    store.save("Sweep at 121 days.")
    assert not memory.path.exists()
    assert markdown_score.is_archive_candidate(0.2499, 0.5)
    assert not markdown_score.is_archive_candidate(0.25, 0.5)


def test_half_life_setting_drives_decay(tmp_path: Path, clock: FrozenClock) -> None:
    quick = MarkdownStore(tmp_path, clock=clock, half_life_days=1)
    memory = quick.save("Lychee lasts two days.")
    clock.advance(days=2, hours=1)
    quick.save("Sweep.")
    assert memory.path is not None and not memory.path.exists()


def test_important_memories_live_twice_as_long_unimportant_half(
    store: MarkdownStore, clock: FrozenClock
) -> None:
    high = store.save("High importance.", importance=0.7)
    low = store.save("Low importance.", importance=0.3)
    normal = store.save("Normal importance.")
    clock.advance(days=61)  # past two halved half-lives (60 d)
    store.save("Sweep.")
    assert [m.path.exists() for m in (high, low, normal)] == [True, False, True]  # type: ignore[union-attr]
    clock.advance(days=180)  # 241 d: past two doubled half-lives (240 d)
    store.save("Sweep.")
    assert not high.path.exists()  # type: ignore[union-attr]


def test_retrieval_resets_the_clock_and_never_touches_updated(
    store: MarkdownStore, clock: FrozenClock
) -> None:
    kept = store.save("Jackfruit runs the nightly export.")
    ignored = store.save("Unrelated memory about rambutan.")
    clock.advance(days=100)
    found = store.search("jackfruit nightly export")
    assert [hit.entry.id for hit in found.hits] == [kept.id]
    text = kept.path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert "citations: 1\n" in text
    assert "last-cited: 2026-12-06T19:30:00.000Z\n" in text
    assert "updated: 2026-08-28T19:30:00.000Z\n" in text
    store.search("jackfruit")
    assert "citations: 2\n" in kept.path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    clock.advance(days=100)  # 200 d old, 100 d since cited: 0.31, stays; the other 0.099
    store.save("Sweep.")
    assert kept.path.exists() and not ignored.path.exists()  # type: ignore[union-attr]


def test_archived_hits_are_not_refreshed(
    store: MarkdownStore, clock: FrozenClock, tmp_path: Path
) -> None:
    memory = store.save("Kumquat was the codename in 2026.")
    clock.advance(days=200)
    store.save("Sweep.")
    archived = tmp_path / "memory" / "archive" / f"{memory.id}.md"
    before = archived.read_text(encoding="utf-8")
    found = store.search("kumquat codename", include_archived=True)
    assert [hit.entry.archived for hit in found.hits] == [True]
    assert archived.read_text(encoding="utf-8") == before


def test_decay_and_importance_reorder_but_never_suppress_a_strong_match(
    store: MarkdownStore, clock: FrozenClock
) -> None:
    old_strong = store.save("Mangosteen deploys need the blue-green switch.")
    clock.advance(days=110)  # decay ≈ 0.28: still hot
    fresh_same = store.save("Mangosteen deploys happen on Tuesdays.")
    fresh_weak = store.save("Mangosteen is a fruit.", importance=1.0)
    # comparable matches: the fresher one goes first (record=False: no clock reset)
    assert ids(store, "mangosteen deploys", record=False)[:2] == [fresh_same.id, old_strong.id]
    order = ids(store, "mangosteen deploys blue-green switch", record=False)
    assert order[0] == old_strong.id  # strong beats fresh and important weaker matches
    assert set(order) >= {old_strong.id, fresh_same.id}
    assert fresh_weak.id in ids(store, "mangosteen", record=False)


# -- archive ----------------------------------------------------------------------------------


BANNER_RE = (
    r"^> \*\*⚠️ From cold storage — this was true at one time, but it may not be true now\.\*\*\n"
    r"> Archived \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z; unverified since\. "
    r"Reason: decayed out \(score 0\.\d{3} after \d+d\)\.\n\n"
)


def test_archiving_moves_the_file_with_the_banner(
    store: MarkdownStore, clock: FrozenClock, tmp_path: Path
) -> None:
    memory = store.save("Nectarine runs the billing cron.", tags=["billing"])
    clock.advance(days=141)
    moved = store.sweep()
    assert [m.id for m in moved] == [memory.id]
    target = tmp_path / "memory" / "archive" / f"{memory.id}.md"
    assert not memory.path.exists() and target.exists()  # type: ignore[union-attr]
    entry = parse_entry(target.read_text(encoding="utf-8"), archived=True)
    import re

    assert re.match(BANNER_RE, entry.body), entry.body
    assert "(score 0.196 after 141d)" in entry.body
    assert entry.body.endswith("\n\nNectarine runs the billing cron.\n")
    assert entry.tags == ("billing",) and entry.created == memory.created


def test_the_sweep_runs_on_save_never_on_search(store: MarkdownStore, clock: FrozenClock) -> None:
    memory = store.save("Olive is deprecated.")
    clock.advance(days=400)
    store.search("olive deprecated", top_k=1, record=False)
    store.search("anything else")
    assert memory.path.exists()  # type: ignore[union-attr]
    store.save("Now a save.")
    assert not memory.path.exists()  # type: ignore[union-attr]


def test_nothing_is_ever_deleted(store: MarkdownStore, clock: FrozenClock, tmp_path: Path) -> None:
    made = [store.save(f"Quince fact {n}.", importance=0.1 * (n % 10)) for n in range(12)]
    for _ in range(5):
        clock.advance(days=90)
        store.search("quince fact", include_archived=True)
        store.save("Another save.")
    names = all_md(tmp_path / "memory")
    assert all(f"{m.id}.md" in names for m in made)
    assert len(names) == 12 + 5


def test_archived_memories_are_excluded_unless_asked(
    store: MarkdownStore, clock: FrozenClock
) -> None:
    memory = store.save("Raspberry was the staging host.")
    clock.advance(days=200)
    store.save("Sweep.")
    assert ids(store, "raspberry staging host") == []
    found = store.search("raspberry staging host", include_archived=True)
    assert [hit.entry.id for hit in found.hits] == [memory.id]
    assert found.hits[0].entry.text.startswith(BANNER_HEADLINE)


def test_the_folder_decides_archived_not_the_frontmatter(
    store: MarkdownStore, clock: FrozenClock, tmp_path: Path
) -> None:
    root = tmp_path / "memory"
    memory = store.save("Satsuma was the staging host.")
    clock.advance(days=200)
    store.save("Sweep.")
    # moved back by hand: hot again, shown without the stale banner
    archived = root / "archive" / f"{memory.id}.md"
    archived.rename(root / "entries" / archived.name)
    found = store.search("satsuma staging host")
    assert [hit.entry.archived for hit in found.hits] == [False]
    assert found.hits[0].entry.text == "Satsuma was the staging host."
    # a hot file moved into archive/ by hand is cold, and carries a banner wherever it goes
    other = store.save("Tangelo owns the DNS zone.")
    other.path.rename(root / "archive" / other.path.name)  # type: ignore[union-attr]
    assert ids(store, "tangelo dns zone") == []
    cold = store.search("tangelo dns zone", include_archived=True).hits
    assert cold[0].entry.archived and cold[0].entry.text.startswith(BANNER_HEADLINE)


# -- retrieval log ----------------------------------------------------------------------------


def test_retrieval_log_has_one_line_per_search_in_the_spec_shape(
    store: MarkdownStore, tmp_path: Path
) -> None:
    kept = store.save("Ugli fruit policy: one topic branch per plan.")
    for n in range(3):
        store.save(f"Filler {n}.")
    store.search("ugli policy")
    store.search("nothing matches this")
    lines = (tmp_path / "memory" / "retrieval-log.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert list(first) == ["ts", "query", "provider", "target", "loaded", "trimmed", "kept"]
    assert first == {
        "ts": "2026-08-28T19:30:00.000Z",
        "query": "ugli policy",
        "provider": "builtin-markdown",
        "target": {"scope": {}, "destination": "main-context"},
        "loaded": 4,
        "trimmed": 3,
        "kept": [kept.id],
    }
    assert lines[0] == json.dumps(first, ensure_ascii=False, separators=(",", ":"))
    assert json.loads(lines[1])["kept"] == []


def test_retrieval_log_never_records_memory_content(store: MarkdownStore, tmp_path: Path) -> None:
    store.save("The vault passphrase hint is zebra-umbrella-quartz.", tags=["vault"])
    store.search("vault hint")
    log = (tmp_path / "memory" / "retrieval-log.jsonl").read_text(encoding="utf-8")
    assert "zebra" not in log and "umbrella" not in log and "passphrase" not in log


def test_retrieval_log_redacts_a_secret_in_the_query_and_keeps_its_start(
    store: MarkdownStore, tmp_path: Path
) -> None:
    key = "AKIA" + "Q7XK2M4P9RTV3WZB"
    store.save("Deploys run on Fridays.")
    store.search(f"why does deploy fail with {key}? " + "log line " * 5_000)
    (line,) = (tmp_path / "memory" / "retrieval-log.jsonl").read_text(encoding="utf-8").splitlines()
    query = json.loads(line)["query"]
    assert key not in line and query.startswith("why does deploy fail with [REDACTED:")
    assert len(query) == LOGGED_QUERY_CHARS  # not the 45,000 characters pasted


def _search_often(workspace: Path, times: int) -> None:
    store = MarkdownStore(workspace)
    for _ in range(times):
        store.search("branching policy")


def test_two_processes_searching_one_store_lose_no_citation(tmp_path: Path) -> None:
    """Each hook run is a process: two searching at once re-read and rewrite the same file
    under the store's cross-process lock (with a thread lock alone, 39 of 200 bumps were lost);
    the lock a parent used works in a forked child too."""
    saved = MarkdownStore(tmp_path).save("Our branching policy: one topic branch per plan.")
    fork = multiprocessing.get_context("fork")
    workers = [fork.Process(target=_search_often, args=(tmp_path, 40)) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert saved.path is not None
    assert parse_entry(saved.path.read_text(encoding="utf-8")).citations == 80
    log = (tmp_path / "memory" / "retrieval-log.jsonl").read_text(encoding="utf-8")
    assert len(log.splitlines()) == 80


def test_scoped_memories_are_found_only_from_their_scope(
    store: MarkdownStore, tmp_path: Path
) -> None:
    shared = store.save("Vanilla builds use the shared cache.")
    mine = store.save("Vanilla builds in session one use a scratch dir.", scope={"session": "one"})
    turn = store.save("Vanilla builds this turn.", scope={"session": "one", "turn": "t1"})
    assert set(ids(store, "vanilla builds", scope={"session": "one"})) == {shared.id, mine.id}
    assert ids(store, "vanilla builds", scope={"session": "two"}) == [shared.id]
    assert set(ids(store, "vanilla builds", scope={"session": "one", "turn": "t1"})) == {
        shared.id,
        mine.id,
        turn.id,
    }
    assert "session: one\n" in mine.path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    last = json.loads(
        (tmp_path / "memory" / "retrieval-log.jsonl").read_text(encoding="utf-8").splitlines()[-1]
    )
    assert last["target"]["scope"] == {"session": "one", "turn": "t1"}


def test_entry_text_of_hot_memory_is_its_body() -> None:
    entry = MarkdownEntry(id="x", body="Hello there.\n")
    assert entry.text == "Hello there." and entry.weight == 0.5


def test_module_doctests() -> None:
    for module in (markdown_score, markdown_module):
        assert doctest.testmod(module).failed == 0


def test_importance_can_be_edited_by_hand(
    store: MarkdownStore, clock: FrozenClock, tmp_path: Path
) -> None:
    memory = store.save("Yuzu is the payments service.")
    assert memory.path is not None
    text = memory.path.read_text(encoding="utf-8")
    memory.path.write_text(text.replace("importance: 0.5", "importance: 0.95"), encoding="utf-8")
    clock.advance(days=1000)
    store.save("Sweep.")
    assert memory.path.exists()  # pinned by the hand edit


def test_a_hand_written_comment_and_unknown_key_survive_a_retrieval(
    store: MarkdownStore,
) -> None:
    memory = store.save("Quince is the billing service.")
    assert memory.path is not None
    text = memory.path.read_text(encoding="utf-8")
    memory.path.write_text(
        text.replace("---\n\n", "# reviewed by legal, keep\nowner: payments team\n---\n\n", 1),
        encoding="utf-8",
    )
    assert ids(store, "quince billing") == [memory.id]  # the retrieval rewrites the file
    after = memory.path.read_text(encoding="utf-8")
    assert "# reviewed by legal, keep\n" in after and "owner: payments team\n" in after
    assert "citations: 1\n" in after


def test_deleting_the_file_is_what_removes_a_memory(store: MarkdownStore) -> None:
    memory = store.save("Zucchini is the old build box.")
    assert ids(store, "zucchini build box") == [memory.id]
    memory.path.unlink()  # type: ignore[union-attr]
    assert ids(store, "zucchini build box") == []


def test_a_retrieval_never_resurrects_or_clobbers_a_file_changed_meanwhile(
    store: MarkdownStore,
) -> None:
    edited = store.save("Apricot ships on Wednesdays.")
    gone = store.save("Apricot used to ship on Mondays.")
    assert edited.path is not None and gone.path is not None
    hits = store.search("apricot ships", record=False).hits
    # between the search's load and its refresh: a hand edit and a hand delete
    edited.path.write_text(
        edited.path.read_text(encoding="utf-8").replace("Wednesdays", "Thursdays"),
        encoding="utf-8",
    )
    gone.path.unlink()
    store._refresh(hits, store.clock.now())
    text = edited.path.read_text(encoding="utf-8")
    assert "Thursdays" in text and "citations: 1" in text
    assert not gone.path.exists()
