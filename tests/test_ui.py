"""The dashboard in a real browser: Playwright driving Debian's chromium against a real
``orcamem up`` subprocess on 127.0.0.1 with a seeded database and keys required.

Every page loads with no console error and no request leaving 127.0.0.1 (anything else is
aborted and recorded: the network is closed); a key for one space sees nothing of another; the
flows work end to end. The screenshots in docs/ui/ are written by this run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from orcamem import Memory
from orcamem._kernel.clock import FrozenClock
from servers import child_env, free_port
from test_ui_api import NOW, seed

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "ui"
VIEWPORT = {"width": 1280, "height": 860}


@dataclass
class Server:
    url: str
    admin: str
    alice: str
    db: Path
    workspace: Path


def _seed(db: Path) -> tuple[str, str]:
    """alice's story (and two copies to change: dora to forget in, carol to delete), bob's."""
    with Memory(db, clock=FrozenClock(NOW)) as mem:
        seed(mem)
        for space in ("dora", "carol"):
            mem.observe("user", "I live in Berlin.", session_id="d1", space=space)
            mem.observe("user", "I moved to Lisbon last month.", session_id="d2", space=space)
            mem.sleep(space=space)
        mem.remember(
            "Gift from my manager: a Swiss knife.",
            category="event",
            event_date="2026-11-01",
            space="alice",
        )
        mem.remember(
            "Prefers the window seat.",
            entity="user",
            attribute="seat",
            value="window",
            condition="on flights longer than four hours",
            category="preference",
            space="alice",
        )
        # a note (not a person's turn) that implies a rule: consolidation refuses the rule
        mem.add("I am allergic to peanuts.", session_id="s3", space="alice")
        mem.sleep(space="alice")
        for day in range(1, 25):
            mem.observe(
                "user", f"Standup note {day}: the release is on track.", session_id="work",
                occurred_at=f"2026-10-{day:02d}T09:00:00Z", space="alice",
            )  # fmt: skip
        _, admin = mem.keys.create(spaces=[], admin=True, name="ops", now=NOW)
        _, alice = mem.keys.create(spaces=["alice"], admin=False, name="alice-app", now=NOW)
    return admin, alice


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (scripts/test does)")
    home = tmp_path_factory.mktemp("ui")
    db = home / "memory.db"
    admin, alice = _seed(db)
    (home / "profiles.json").write_text('[{"name": "researcher", "tools": ["@memory"]}]')
    (home / "ws").mkdir()
    port = free_port()
    env = {
        **child_env(ORCA_HOME=str(home), HOME=str(home)),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    command = [
        sys.executable, "-m", "orcamem", "up", "--db", str(db), "--port", str(port),
        "--require-keys", "--no-browser", "--no-auto-sleep", "--workspace", str(home / "ws"),
        "--log-blocks",
    ]  # fmt: skip
    log = (home / "server.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, process, home / "server.log")
        for content, category in (
            ("Cites sources with DOIs.", "preference"),
            ("Works on protein folding.", "context"),
        ):
            saved = httpx.post(
                f"{url}/api/profiles/researcher/memories",
                json={"content": content, "category": category},
                headers={"authorization": f"Bearer {admin}"},
                timeout=30,
            )
            assert saved.status_code == 201, saved.text
        yield Server(url, admin, alice, db, home / "ws")
    finally:
        process.terminate()
        process.wait(30)
        log.close()


def _wait_for(url: str, process: subprocess.Popen, log: Path) -> None:
    for _ in range(1200):  # bounded by attempts, not a clock window
        if process.poll() is not None:
            pytest.fail(f"orcamem up exited: {log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    pytest.fail(f"orcamem up did not answer: {log.read_text()}")


@dataclass
class Watch:
    """What a page did that it must not: console errors, uncaught exceptions, requests
    that would leave 127.0.0.1 (aborted)."""

    errors: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any, server: Server) -> Iterator[tuple[Any, Watch]]:
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    watch = Watch()

    def gate(route: Any) -> None:
        url = route.request.url
        if url.startswith((server.url + "/", "data:", "blob:")):
            route.continue_()
        else:
            watch.outside.append(url)
            route.abort()

    context.route("**/*", gate)
    tab = context.new_page()
    tab.on("console", lambda m: watch.errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda exc: watch.errors.append(f"uncaught: {exc}"))
    try:
        yield tab, watch
    finally:
        context.close()


def use_key(tab: Any, server: Server, key: str) -> None:
    """Open the dashboard with the key already typed in this tab (as after "Use key"; that
    form is driven in the no-key test): no first request goes out without it."""
    tab.add_init_script(f"sessionStorage.setItem('orcamem.key', {json.dumps(key)})")
    tab.goto(f"{server.url}/ui")
    tab.wait_for_selector("main h1")


def shot(tab: Any, name: str, *, full_page: bool = True) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=full_page)


def api(server: Server, path: str, **params: str) -> Any:
    headers = {"authorization": f"Bearer {server.admin}"}
    return httpx.get(f"{server.url}{path}", params=params, headers=headers, timeout=30).json()


# -- the pages ----------------------------------------------------------------------------------


def test_docs_render_with_the_network_closed(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    tab.goto(f"{server.url}/docs")
    tab.wait_for_selector(".swagger-ui .opblock-summary", timeout=60_000)
    assert tab.locator(".swagger-ui .opblock").count() > 20  # every route rendered
    assert "orcamem" in tab.inner_text(".swagger-ui .info")
    shot(tab, "docs", full_page=False)
    assert watch.outside == [] and watch.errors == []


def test_every_dashboard_page_loads_clean_and_keeps_to_loopback(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    rows = tab.locator("tr[data-space]")
    names = set(rows.evaluate_all("rs => rs.map(r => r.dataset.space)"))
    assert {"alice", "bob", "dora"} <= names  # carol and mallory come and go in later tests
    shot(tab, "spaces")

    tab.click("a[href='#/space/alice']")
    tab.wait_for_selector("tr[data-memory]")
    text = tab.inner_text("#tab")
    assert "home city: Lisbon" in text and "replaced" in text and "Berlin" in text  # lineage
    assert "Never suggest peanut recipes." in text and "only when: on flights" in text
    assert "Gift from my manager" in text
    shot(tab, "memories")

    tab.click(".tabs >> text=Episodes")
    tab.wait_for_selector("tr[data-episode]")
    assert tab.locator("tr[data-episode]").count() == 20  # a page
    first = tab.locator("tr[data-episode]").first.get_attribute("data-episode")
    episodes = tab.locator("tr[data-episode]")
    tab.click("text=Next page")
    expect(episodes.first).not_to_have_attribute("data-episode", first)
    tab.click("text=Previous page")
    expect(episodes.first).to_have_attribute("data-episode", first)
    tab.fill("#session", "s2")
    tab.click("text=Filter by session")
    expect(episodes).to_have_count(1)
    assert "I moved to Lisbon" in tab.inner_text("#tab")
    shot(tab, "episodes")

    tab.click(".tabs >> text=Search")
    tab.fill("#query", "Which city do I live in?")
    tab.click("#tab button[type=submit]")
    tab.wait_for_selector("tr[data-hit]")
    found = tab.inner_text("#tab")
    assert "home city: Lisbon" in found and "recency" in found  # each hit says why
    shot(tab, "search")

    tab.click("text=Consolidation audit")
    expect(tab.locator("#tab")).to_contain_text("rules come only from a person's own turns")
    shot(tab, "audit")
    assert watch.outside == [] and watch.errors == []


def test_why_this_block_shows_the_exact_block_and_what_was_left_out(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    tab.click("nav >> text=Why this block")
    tab.select_option("#why-space", "alice")
    message = "Which city do I live in?"
    tab.fill("#why-message", message)
    tab.click("text=Show the block")
    tab.wait_for_selector("#why-tokens")
    expected = api(server, "/api/context", space="alice", q=message)["block"]
    assert tab.inner_text("#why-block") == expected
    why = api(server, "/api/explain", space="alice", q=message)
    assert f"{why['tokens']} of 400 tokens" in tab.inner_text("#why-tokens")
    body = tab.inner_text("#why-out")
    assert "home city: Lisbon" in body
    left_out = {hit["text"]: hit["reason"] for hit in why["cut"]}
    assert left_out.get("I live in Berlin.") == "outdated", left_out
    assert "I live in Berlin." in body and "outdated" in body  # left out, and why
    for hit in why["cut"]:  # each in words: "below the score cut: 0.31 of the best, …"
        reason = tab.locator(f"tr[data-hit='{hit['id']}'] td[data-reason]")
        assert reason.inner_text() == hit["detail"]
        assert reason.get_attribute("data-reason") == hit["reason"]
    shot(tab, "why")
    assert watch.outside == [] and watch.errors == []


def test_export_downloads_the_space(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    with tab.expect_download() as download:
        tab.click("tr[data-space='bob'] >> text=Export")
    lines = Path(download.value.path()).read_text().splitlines()
    assert json.loads(lines[0])["space"] == "bob"
    assert any("Heron" in line for line in lines)
    assert watch.outside == [] and watch.errors == []


def test_the_memory_bank_page_lists_searches_saves_and_deletes(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    tab.click("nav >> text=Memory Bank")
    tab.wait_for_selector("tr[data-profile='researcher']")
    tab.click("a[href='#/bank/researcher']")
    tab.wait_for_selector("tr[data-bank-memory]")
    assert tab.locator("tr[data-bank-memory]").count() == 2
    tab.fill("#bank-query", "which sources to cite")
    tab.click("#bank form >> text=Search")
    tab.wait_for_selector("#bank-results table")  # the search's own table, not the listing
    hits = tab.locator("#bank-results table").inner_text()
    assert "Cites sources with DOIs." in hits and "topic" in hits  # the relevance breakdown
    tab.select_option("#bank-only", "context")  # the same search, only that category
    tab.click("#bank form >> text=Search")
    expect(tab.locator("#bank-results")).to_contain_text("No memory shares a topic")
    tab.select_option("#bank-only", "preference")
    tab.click("#bank form >> text=Search")
    expect(tab.locator("#bank-results table")).to_contain_text("Cites sources with DOIs.")
    tab.fill("#bank-content", "Prefers metric units.")
    tab.select_option("#bank-category", "preference")
    tab.click("#bank form >> text=Save")
    tab.wait_for_selector("#status.info")
    rows = tab.locator("#bank > table").last.locator("tr[data-bank-memory]")
    expect(rows).to_have_count(3)
    shot(tab, "bank")
    saved = tab.inner_text("#status").split()[1]
    tab.locator(f"#bank > table >> nth=-1 >> tr[data-bank-memory='{saved}'] >> text=Delete").click()
    expect(tab.locator("#bank > table").last.locator("tr[data-bank-memory]")).to_have_count(2)

    tab.click("nav >> text=Memory Bank")
    tab.fill("#automation", "nightly")
    tab.fill("#note", "Stopped at issue 41.")
    tab.click("text=Save >> nth=-1")
    tab.wait_for_selector("#note-block:not([hidden])")
    assert "Stopped at issue 41." in tab.inner_text("#note-block")
    tab.click("section.card >> text=Clear")
    expect(tab.locator("#note")).to_have_value("")
    assert watch.outside == [] and watch.errors == []


def test_set_a_setting_and_see_the_badge_change_then_clear_it(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    tab.click("nav >> text=Settings")
    row = tab.locator("tr[data-setting='topK']")
    expect(row).to_contain_text("Instance default")
    assert tab.inner_text("#provider-state") == "Ready"  # one real call to the provider
    row.locator("input").fill("80")
    row.locator("text=Set").click()
    tab.wait_for_selector("#status.error")
    assert "must be a whole number from 1 to 50" in tab.inner_text("#status")
    row.locator("input").fill("8")
    row.locator("text=Set").click()
    expect(row).to_contain_text("Workspace override")
    assert json.loads((server.workspace / "config.json").read_text()) == {
        "defaults": {"memory": {"topK": 8}}
    }
    shot(tab, "settings")
    row.locator("text=Clear").click()
    expect(row).to_contain_text("Instance default")
    assert row.locator("text=Clear").count() == 0
    assert watch.outside == []
    assert all("400" in error for error in watch.errors), watch.errors  # only the refusal


def test_stored_markup_is_shown_as_text_and_never_runs(
    page: tuple[Any, Watch], server: Server
) -> None:
    """What memory holds came from users and models: a stored tag is text on every page."""
    tab, watch = page
    hostile = (
        '<img src="x" onerror="document.title=\'pwned\'"><script>document.title="pwned"</script>'
    )
    headers = {"authorization": f"Bearer {server.admin}"}
    for path, body in (
        ("/api/episodes", {"text": f"Markup test {hostile}", "role": "user"}),
        ("/api/memories", {"text": f"Markup fact {hostile}"}),
    ):
        stored = httpx.post(
            f"{server.url}{path}", params={"space": "mallory"}, json=body, headers=headers
        )
        assert stored.status_code == 201, stored.text
    loaded: list[str] = []
    tab.on("request", lambda request: loaded.append(request.url))
    use_key(tab, server, server.admin)
    for hash_, ready in (
        ("#/space/mallory/memories", "tr[data-memory]"),
        ("#/space/mallory/episodes", "tr[data-episode]"),
    ):
        tab.goto(f"{server.url}/ui{hash_}")
        tab.wait_for_selector(ready)
        assert "<script>" in tab.inner_text("#tab") and '<img src="x"' in tab.inner_text("#tab")
        assert tab.locator("#tab img, #tab script").count() == 0
    tab.goto(f"{server.url}/ui#/why")
    tab.select_option("#why-space", "mallory")
    tab.fill("#why-message", "Markup test fact")
    tab.click("text=Show the block")
    tab.wait_for_selector("#why-tokens")
    assert tab.locator("#why-out img, #why-out script").count() == 0
    assert tab.title() == "orcamem"
    assert not [url for url in loaded if url.endswith("/x")]  # no <img src="x"> was made
    assert watch.outside == [] and watch.errors == []


# -- keys ---------------------------------------------------------------------------------------


def test_a_key_for_space_a_sees_nothing_of_space_b(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    use_key(tab, server, server.alice)
    names = tab.locator("tr[data-space]").evaluate_all("rs => rs.map(r => r.dataset.space)")
    assert names == ["alice"]
    tab.click("nav >> text=Why this block")
    tab.wait_for_selector("#why-space")
    options = tab.locator("#why-space option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["alice"]
    tab.fill("#why-message", "what does Bob drink? Heron codename tea")
    tab.click("text=Show the block")
    tab.wait_for_selector("#why-tokens")
    assert "Heron" not in tab.inner_text("body") and "tea over coffee" not in tab.inner_text("body")
    tab.goto(f"{server.url}/ui#/space/bob")  # typed by hand: refused, and says why
    tab.wait_for_selector("#status.error")
    assert "not allowed to use space 'bob'" in tab.inner_text("#status")
    assert "Heron" not in tab.inner_text("body")
    assert watch.outside == []
    assert all("403" in error for error in watch.errors), watch.errors  # only the refusal


def test_without_a_key_the_page_loads_and_shows_no_memory(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    tab.goto(f"{server.url}/ui")
    tab.wait_for_selector("#status.error")
    assert "requires an API key" in tab.inner_text("#status")
    assert tab.locator("tr[data-space]").count() == 0
    tab.fill("#key", server.alice)
    tab.click("#key-form button")
    tab.wait_for_selector("tr[data-space='alice']")
    assert tab.locator("tr[data-space]").count() == 1
    assert watch.outside == []
    assert all("401" in error for error in watch.errors), watch.errors  # only the refusal


# -- changing memory ----------------------------------------------------------------------------


def test_forget_a_state_and_see_the_lineage_update(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    tab.goto(f"{server.url}/ui#/space/dora/memories")
    tab.wait_for_selector("tr[data-memory]")
    facts = api(server, "/api/facts", space="dora", include_history="true")["facts"]
    lisbon = next(m for m in facts if m["value"] == "Lisbon")
    berlin = next(m for m in facts if m["value"] == "Berlin")
    row = tab.locator(f"tr[data-memory='{lisbon['id']}']")
    assert f"replaced {berlin['id']}" in row.inner_text()
    assert tab.locator(f"tr[data-memory='{berlin['id']}']").count() == 0  # under Lisbon

    row.locator(".actions button", has_text="Forget").click()
    tab.wait_for_selector(f"tr[data-memory='{berlin['id']}']")
    assert tab.locator(f"tr[data-memory='{lisbon['id']}']").count() == 0
    assert "closed" in tab.inner_text(f"tr[data-memory='{berlin['id']}']")  # no successor now
    assert f"Forgot {lisbon['id']}" in tab.inner_text("#status")
    after = api(server, "/api/facts", space="dora", include_history="true")["facts"]
    assert [(m["id"], m["active"], m["superseded_by"]) for m in after if m["value"]] == [
        (berlin["id"], False, None)
    ]
    assert watch.outside == [] and watch.errors == []


def test_delete_a_space_with_typed_confirmation_and_see_it_gone(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    assert api(server, "/api/search", space="carol", q="Lisbon")["hits"]
    row = tab.locator("tr[data-space='carol']")
    row.locator("text=Delete…").click()
    go = row.locator("text=Delete forever")
    assert go.is_disabled()
    row.locator("input").fill("carl")
    assert go.is_disabled()
    row.locator("input").fill("carol")
    go.click()
    tab.wait_for_selector("#status.info")
    assert "Deleted space carol: 2 episodes" in tab.inner_text("#status")
    expect(tab.locator("tr[data-space='carol']")).to_have_count(0)
    assert api(server, "/api/search", space="carol", q="Lisbon")["hits"] == []
    names = [s["name"] for s in api(server, "/api/spaces")["spaces"]]
    assert "carol" not in names and {"alice", "bob", "dora"} <= set(names)  # the others stay
    assert watch.outside == [] and watch.errors == []


# -- edit in place, pin, the injected-block log (issue 17 items 2-3) ------------------------------


def _remember(server: Server, space: str, **body: Any) -> dict:
    saved = httpx.post(
        f"{server.url}/api/memories",
        params={"space": space},
        json=body,
        headers={"authorization": f"Bearer {server.admin}"},
        timeout=30,
    )
    assert saved.status_code == 201, saved.text
    return saved.json()


def test_edit_a_memory_and_see_the_new_version_with_its_history(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    old = _remember(
        server, "erin", text="I live in Porto.", category="state", entity="user",
        attribute="home_city", value="Porto",
    )  # fmt: skip
    use_key(tab, server, server.admin)
    tab.goto(f"{server.url}/ui#/space/erin/memories")
    row = tab.locator(f"tr[data-memory='{old['id']}']")
    row.locator("button", has_text="Edit").click()
    row.locator("textarea").fill("I live in Faro.")
    row.locator("text=Save as new version").click()
    tab.wait_for_selector("#status.info")
    facts = api(server, "/api/facts", space="erin", include_history="true")["facts"]
    [new] = [m for m in facts if m["active"]]
    was = next(m for m in facts if m["id"] == old["id"])
    assert (was["active"], was["superseded_by"]) == (False, new["id"])
    shown = tab.locator(f"tr[data-memory='{new['id']}']")
    expect(shown).to_contain_text("user · home_city: I live in Faro.")
    expect(shown).to_contain_text(f"replaced {old['id']} (Porto")  # the history, under it
    expect(tab.locator(f"tr[data-memory='{old['id']}']")).to_have_count(0)
    assert f"{old['id']} is kept as its history" in tab.inner_text("#status")
    assert watch.outside == [] and watch.errors == []


def test_every_older_version_shows_under_the_current_one_and_can_be_forgotten(
    page: tuple[Any, Watch], server: Server
) -> None:
    """After A -> B -> C the tab listed only B under C: A could be neither seen nor forgotten
    from the dashboard."""
    tab, watch = page
    first = _remember(server, "fern", text="Works at Acme.", category="fact")
    versions = [first]
    for text in ("Works at Globex.", "Works at Initech."):
        edited = httpx.patch(
            f"{server.url}/api/memories/{versions[-1]['id']}",
            params={"space": "fern"},
            json={"text": text},
            headers={"authorization": f"Bearer {server.admin}"},
            timeout=30,
        )
        assert edited.status_code == 200, edited.text
        versions.append(edited.json())
    use_key(tab, server, server.admin)
    tab.goto(f"{server.url}/ui#/space/fern/memories")
    current = tab.locator(f"tr[data-memory='{versions[2]['id']}']")
    expect(current).to_contain_text(f"replaced {versions[1]['id']}")
    expect(current).to_contain_text(f"replaced {first['id']} (Works at Acme.")
    current.locator(f"button[data-forget='{first['id']}']").click()
    expect(tab.locator("#status")).to_contain_text(f"Forgot {first['id']}")
    expect(tab.locator(f"tr[data-memory='{versions[2]['id']}']")).not_to_contain_text(first["id"])
    left = api(server, "/api/facts", space="fern", include_history="true")["facts"]
    assert sorted(m["id"] for m in left) == sorted(v["id"] for v in versions[1:])
    assert watch.outside == [] and watch.errors == []


def test_pin_and_unpin_a_memory(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    made = _remember(server, "erin", text="Our cat is called Pepper.")
    use_key(tab, server, server.admin)
    tab.goto(f"{server.url}/ui#/space/erin/memories")
    row = tab.locator(f"tr[data-memory='{made['id']}']")
    row.locator("button", has_text="Pin").click()
    expect(row.locator(".badge.pinned")).to_have_text("pinned")
    expect(row.locator("button[aria-pressed=true]")).to_have_text("Unpin")
    assert api(server, f"/api/memories/{made['id']}", space="erin")["pinned"] is True
    row.locator("button", has_text="Unpin").click()
    expect(row.locator(".badge.pinned")).to_have_count(0)
    assert api(server, f"/api/memories/{made['id']}", space="erin")["pinned"] is False
    assert watch.outside == [] and watch.errors == []


def test_the_injected_blocks_tab_lists_a_block_without_its_text(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    made = _remember(server, "finn", text="My home city is Bangalore.")
    injected = httpx.post(
        f"{server.url}/api/context",
        params={"space": "finn"},
        json={"messages": [{"role": "user", "content": "Which city is my home?"}]},
        headers={"authorization": f"Bearer {server.admin}"},
        timeout=30,
    ).json()
    assert "Bangalore" in injected["block"]
    use_key(tab, server, server.admin)
    tab.goto(f"{server.url}/ui#/space/finn/blocks")
    row = tab.locator("tr[data-block]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("rest")
    expect(row).to_contain_text(made["id"])
    expect(row).to_contain_text("sha256:")
    assert "Bangalore" not in row.inner_text()  # no memory text in the log
    note = tab.inner_text("#blocks-note")
    assert "no memory text" in note and "the last 1000 per space, 7 days" in note
    shot(tab, "blocks")
    assert watch.outside == [] and watch.errors == []


# -- local agent memory (issue 17, item 6) -----------------------------------------------------


def _local_project(server: Server, name: str, *, facts: tuple[str, ...] = ()) -> str:
    """A project under the server's $ORCA_HOME/memory: facts, two ledger entries from a real
    job run (the rule-based extractor) and one job still queued; its id."""
    from local_memory_helpers import turn
    from orcamem.local import JsonlTranscript, LocalMemory

    home = server.db.parent
    cwd = home / "projects" / name
    cwd.mkdir(parents=True)
    transcript = JsonlTranscript(home / f"{name}.jsonl")
    turn(transcript, "t1", "I prefer pytest over unittest. Never commit directly to main.", "Ok.")
    turn(transcript, "t2", "I prefer dark mode.", "Noted.")
    clock = FrozenClock(NOW)
    with LocalMemory(
        cwd, root=home / "memory", session_id="s1", transcript=transcript, clock=clock,
        start=False,
    ) as memory:  # fmt: skip
        for fact in facts:
            memory.remember(fact)
        memory.finish_turn("t1")
        assert [r.outcome for r in memory.run_jobs()] == ["done"]
        clock.advance(minutes=1)
        memory.finish_turn("t2")  # queued: no worker runs in the server
        return memory.identity.id


def _open_local_project(tab: Any, server: Server, project: str) -> None:
    use_key(tab, server, server.admin)
    tab.click("nav >> text=Local memory")
    tab.click(f"tr[data-project='{project}'] a")
    tab.wait_for_selector("tr[data-entry]")


def test_the_local_memory_page_shows_projects_facts_ledger_and_jobs(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    hostile = '<img src="x" onerror="document.title=\'pwned\'">'
    project = _local_project(
        server, "shop", facts=("project: We deploy with Helm on Fridays.", f"project: {hostile}")
    )
    use_key(tab, server, server.admin)
    tab.click("nav >> text=Local memory")
    row = tab.locator(f"tr[data-project='{project}']")
    expect(row).to_contain_text("shop")
    assert str(server.db.parent / "projects" / "shop") in row.inner_text()  # last seen in
    row.locator("a").click()
    tab.wait_for_selector("tr[data-entry]")
    body = tab.inner_text("main")
    assert "We deploy with Helm on Fridays." in body and hostile in body  # text, not markup
    assert "null" not in body and "undefined" not in body
    assert tab.locator("main img").count() == 0 and tab.title() == "orcamem"
    ledger = api(server, f"/api/local/projects/{project}/ledger")
    shown = tab.locator("tr[data-entry]").evaluate_all("rs => rs.map(r => r.dataset.entry)")
    assert shown == [e["id"] for e in ledger["entries"]] and len(shown) == 2
    entry = tab.inner_text(f"tr[data-entry='{shown[0]}']")
    assert "Never commit directly to main." in entry
    assert "session s1 · turn t1" in entry and "extractor rules" in entry  # provenance
    assert f"Automatic memory ledger · revision {ledger['revision']}" in body
    jobs = tab.locator("tr[data-job]")
    expect(jobs).to_have_count(2)
    assert "queued" in jobs.nth(0).inner_text() and "done" in jobs.nth(1).inner_text()
    assert "1 queued · 1 done" in tab.inner_text("#job-counts")
    shot(tab, "local")
    assert watch.outside == [] and watch.errors == []


def test_delete_a_ledger_entry_and_see_it_gone(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    project = _local_project(server, "cart")
    _open_local_project(tab, server, project)
    before = api(server, f"/api/local/projects/{project}/ledger")
    gone = next(e for e in before["entries"] if e["text"] == "The user prefers pytest.")
    row = tab.locator(f"tr[data-entry='{gone['id']}']")
    row.locator("text=Delete…").click()
    row.locator("text=Delete entry").click()
    expect(tab.locator("tr[data-entry]")).to_have_count(1)
    assert tab.locator(f"tr[data-entry='{gone['id']}']").count() == 0
    status = tab.inner_text("#status")
    assert f"Deleted {gone['id']}: the ledger is at revision {before['revision'] + 1}" in status
    after = api(server, f"/api/local/projects/{project}/ledger")
    assert [e["text"] for e in after["entries"]] == ["Never commit directly to main."]
    derived = server.db.parent / "memory" / "projects" / project / "auto-memory.md"
    assert "pytest" not in derived.read_text()  # the projection follows the ledger
    assert watch.outside == [] and watch.errors == []


def test_a_stale_revision_says_the_ledger_changed_and_deletes_nothing(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    project = _local_project(server, "stale")
    _open_local_project(tab, server, project)
    seen = api(server, f"/api/local/projects/{project}/ledger")
    first = seen["entries"][0]["id"]
    other = seen["entries"][1]["id"]
    moved = httpx.delete(  # another client changes the ledger after the page loaded
        f"{server.url}/api/local/projects/{project}/ledger/{other}",
        params={"revision": seen["revision"]},
        headers={"authorization": f"Bearer {server.admin}"},
    )
    assert moved.status_code == 200, moved.text
    row = tab.locator(f"tr[data-entry='{first}']")
    row.locator("text=Delete…").click()
    row.locator("text=Delete entry").click()
    tab.wait_for_selector("#status.error")
    message = tab.inner_text("#status")
    assert (
        "the ledger changed" in message and "reload" in message and "nothing was deleted" in message
    )
    assert first in [
        e["id"] for e in api(server, f"/api/local/projects/{project}/ledger")["entries"]
    ]
    tab.click("main button >> text=Reload")
    expect(tab.locator("tr[data-entry]")).to_have_count(1)  # the current ledger
    assert watch.outside == []
    assert watch.errors and all("409" in error for error in watch.errors), watch.errors


def test_a_key_scoped_to_spaces_sees_no_local_memory(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    project = _local_project(server, "private", facts=("project: The launch is on 3 March.",))
    use_key(tab, server, server.alice)
    tab.goto(f"{server.url}/ui#/local/{project}")
    tab.wait_for_selector("#status.error")
    assert "needs an admin key" in tab.inner_text("#status")
    assert "launch" not in tab.inner_text("body") and "pytest" not in tab.inner_text("body")
    assert watch.outside == []
    assert all("403" in error for error in watch.errors), watch.errors


def test_the_search_tab_filters_by_session(page: tuple[Any, Watch], server: Server) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    tab.click("a[href='#/space/alice']")
    tab.wait_for_selector("tr[data-memory]")
    tab.click(".tabs >> text=Search")
    tab.fill("#query", "Where did I live, Berlin or Lisbon?")
    tab.click("#tab button[type=submit]")
    hits = tab.locator("tr[data-hit]")
    expect(hits).to_have_count(3)  # the Lisbon state, and a turn of each session
    tab.fill("#filter-session", "s1")
    tab.click("#tab button[type=submit]")
    expect(hits).to_have_count(1)
    assert "I live in Berlin." in hits.first.inner_text()
    assert "s1" in hits.first.inner_text() and "Lisbon." not in tab.inner_text("#tab table")
    tab.select_option("#filter-kind", "memory")
    tab.click("#tab button[type=submit]")
    expect(tab.locator("#tab")).to_contain_text("Nothing recalled for that.")
    assert watch.outside == [] and watch.errors == []


def test_the_spaces_list_shows_what_each_space_holds(
    page: tuple[Any, Watch], server: Server
) -> None:
    tab, watch = page
    use_key(tab, server, server.admin)
    spaces = {s["name"]: s for s in api(server, "/api/spaces")["spaces"]}
    row = tab.locator("tr[data-space='alice']")
    cells = row.locator("td").all_inner_texts()
    headings = tab.locator("th").all_inner_texts()
    assert headings[:6] == ["Space", "Episodes", "Lines", "Memories", "Size", "Embedder"]
    assert spaces["alice"]["size_bytes"] > 0
    shown = cells[headings.index("Size")]
    assert shown.endswith(("B", "KB", "MB")) and shown.split()[0][0].isdigit()
    assert watch.outside == [] and watch.errors == []
