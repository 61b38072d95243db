// orcamem dashboard: one page over the public REST API (/api), no framework, no build step.
// Everything stored is written with textContent (el() below): memory text is never markup.
"use strict";

const KEY = "orcamem.key";
const PAGE = 20;
const main = document.getElementById("main");
const statusBox = document.getElementById("status");

// -- helpers --------------------------------------------------------------------------------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "class") node.className = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function say(message, kind) {
  statusBox.textContent = message;
  statusBox.className = kind || "info";
  statusBox.hidden = !message;
}

function apiUrl(path, params) {
  const url = new URL(path, location.origin);
  for (const [name, value] of Object.entries(params || {})) {
    if (value !== null && value !== undefined && value !== "") url.searchParams.set(name, value);
  }
  return url;
}

async function call(method, path, params, body) {
  const headers = { accept: "application/json" };
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const reply = await fetch(apiUrl(path, params), {
    method, headers, body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (reply.status === 204) return null;
  const type = reply.headers.get("content-type") || "";
  const data = type.includes("json") ? await reply.json() : await reply.text();
  if (!reply.ok) {
    const message = data && data.error ? data.error.message : `${reply.status} ${reply.statusText}`;
    throw new Error(message);
  }
  return data;
}

const get = (path, params) => call("GET", path, params);

function table(headings, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headings.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows));
}

function breakdown(scores) {
  const parts = Object.entries(scores || {})
    .filter(([, v]) => v !== 0)
    .map(([k, v]) => `${k} ${Number(v).toFixed(3)}`);
  return el("span", { class: "breakdown" }, parts.join(" · ") || "—");
}

function size(bytes) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
}
function day(stamp) { return stamp ? stamp.slice(0, 19).replace("T", " ") : "—"; }

function hitRows(hits) {
  return hits.map((hit) => el("tr", { "data-hit": hit.id },
    el("td", {}, el("span", { class: `badge ${hit.kind === "rule" ? "rule" : ""}` }, hit.kind)),
    el("td", { class: "text" }, hit.text),
    el("td", { class: "num" }, Number(hit.score).toFixed(3)),
    el("td", {}, breakdown(hit.breakdown))));
}

async function guarded(work) {
  try {
    await work();
  } catch (error) {
    say(error.message, "error");
  }
}

// -- spaces -----------------------------------------------------------------------------------

async function spacesPage() {
  const { spaces } = await get("/api/spaces");
  main.replaceChildren(el("h1", {}, "Spaces"));
  if (!spaces.length) {
    main.append(el("p", { class: "muted" },
      "No space this key may use has been written yet (or the key is missing)."));
    return;
  }
  const rows = spaces.map((s) => {
    const confirmBox = el("div", { class: "confirm", hidden: true });
    const row = el("tr", { "data-space": s.name },
      el("td", {}, el("a", { href: `#/space/${encodeURIComponent(s.name)}` }, s.name)),
      el("td", { class: "num" }, s.episodes),
      el("td", { class: "num" }, s.lines),
      el("td", { class: "num" }, s.memories),
      el("td", { class: "num" }, size(s.size_bytes)),
      el("td", {}, s.embedder_id || "—"),
      el("td", {}, day(s.created_at)),
      el("td", {}, day(s.last_activity)),
      el("td", {}, el("div", { class: "actions" },
        el("button", { type: "button", onclick: () => guarded(() => exportSpace(s.name)) }, "Export"),
        el("button", { type: "button", class: "danger",
          onclick: () => { confirmBox.hidden = false; confirmBox.querySelector("input").focus(); } },
        "Delete…")), confirmBox));
    const typed = el("input", { "aria-label": `type ${s.name} to confirm`, placeholder: s.name });
    const go = el("button", { type: "button", class: "danger", disabled: true }, "Delete forever");
    typed.addEventListener("input", () => { go.disabled = typed.value !== s.name; });
    go.addEventListener("click", () => guarded(async () => {
      const done = await call("DELETE", `/api/spaces/${encodeURIComponent(s.name)}`,
        { confirm: typed.value });
      say(`Deleted space ${done.space}: ${done.deleted.episodes} episodes, ` +
        `${done.deleted.memories} memories.`, "info");
      await spacesPage();
    }));
    confirmBox.append(
      el("p", {}, "This deletes every episode, memory, rule and audit entry of ",
        el("strong", {}, s.name), ". Export it first to keep a copy. Type its name:"),
      el("div", { class: "row" }, typed, go));
    return row;
  });
  main.append(table(["Space", "Episodes", "Lines", "Memories", "Size", "Embedder", "Created",
    "Last activity", ""], rows));
}

async function exportSpace(name) {
  const headers = {};
  const key = sessionStorage.getItem(KEY);
  if (key) headers.authorization = `Bearer ${key}`;
  const reply = await fetch(apiUrl("/api/export", { space: name }), { headers });
  if (!reply.ok) throw new Error(`export failed: ${reply.status}`);
  const link = el("a", {
    href: URL.createObjectURL(await reply.blob()), download: `${name}.orcamem.jsonl`,
  });
  document.body.append(link);
  link.click();
  link.remove();
}

// -- one space --------------------------------------------------------------------------------

const TABS = [["memories", "Memories"], ["episodes", "Episodes"], ["search", "Search"],
  ["audit", "Consolidation audit"], ["blocks", "Injected blocks"]];

async function spacePage(name, tab) {
  const info = await get(`/api/spaces/${encodeURIComponent(name)}`);
  const body = el("section", { id: "tab" });
  main.replaceChildren(
    el("h1", {}, `Space ${info.name}`),
    el("p", { class: "muted" },
      `${info.episodes} episodes · ${info.lines} lines · ${info.memories} memories · ` +
      `embedder ${info.embedder_id || "—"}`),
    el("div", { class: "tabs" }, TABS.map(([id, label]) => el("a", {
      href: `#/space/${encodeURIComponent(name)}/${id}`, class: id === tab ? "active" : null,
    }, label))),
    body);
  await { memories: memoriesTab, episodes: episodesTab, search: searchTab, audit: auditTab,
    blocks: blocksTab }[tab](name, body);
}

function memoryKind(m) {
  if (m.prohibited) return "rule";
  if (m.condition) return "exception";
  if (m.category === "event") return "event";
  return "state";
}

function statusBadge(m) {
  if (m.active) return el("span", { class: "badge current" }, "current");
  if (m.superseded_by) return el("span", { class: "badge closed" }, `superseded by ${m.superseded_by}`);
  return el("span", { class: "badge closed" }, "closed");
}

function memoryRow(space, m, history) {
  // as the block shows it: a state edited to new words has no separate value any more
  const subject = m.attribute ? `${m.entity || "user"} · ${m.attribute}: ${m.value ?? m.content}` : null;
  const older = lineage(m, history);
  const editor = m.active ? editForm(space, m) : null;
  return el("tr", { "data-memory": m.id },
    el("td", {}, el("code", {}, m.id)),
    el("td", { class: "text" }, subject ? el("div", {}, el("strong", {}, subject)) : null,
      m.content, m.condition ? el("div", { class: "muted" }, `only when: ${m.condition}`) : null,
      older.length ? el("ul", { class: "lineage" }, older.map((o) => el("li", { class: "muted" },
        `replaced ${o.id} (${o.value ?? o.content}, since ${day(o.created_at)}) `,
        el("button", { type: "button", class: "danger", "data-forget": o.id,
          onclick: () => guarded(async () => {
            await call("DELETE", `/api/memories/${o.id}`, { space });
            say(`Forgot ${o.id}.`, "info");
            await route();
          }) }, "Forget this version")))) : null,
      editor),
    el("td", {}, statusBadge(m), m.pinned ? el("span", { class: "badge pinned" }, "pinned") : null,
      el("span", { class: "badge" }, m.category),
      el("span", { class: "badge" }, `confidence ${Number(m.confidence).toFixed(2)}`)),
    el("td", {}, `since ${day(m.event_date || m.created_at)}`,
      m.cited_lines.length ? el("div", { class: "muted" }, `cites lines ${m.cited_lines.join(", ")}`) : null),
    el("td", {}, el("div", { class: "actions" },
      editor ? el("button", { type: "button", onclick: () => {
        editor.hidden = false;
        editor.querySelector("textarea").focus();
      } }, "Edit") : null,
      m.active ? el("button", { type: "button", "aria-pressed": m.pinned ? "true" : "false",
        onclick: () => guarded(async () => {
          await call("PUT", `/api/memories/${m.id}/pin`, { space }, { pinned: !m.pinned });
          say(`${m.pinned ? "Unpinned" : "Pinned"} ${m.id}.`, "info");
          await route();
        }) }, m.pinned ? "Unpin" : "Pin") : null,
      el("button", { type: "button", class: "danger",
        onclick: () => guarded(async () => {
          await call("DELETE", `/api/memories/${m.id}`, { space });
          say(`Forgot ${m.id}.`, "info");
          await route();
        }) }, "Forget"))));
}

// Every older version under the current one, newest first: A -> B -> C showed only B, so A
// could be neither seen nor forgotten here.
function lineage(m, history) {
  const chain = [];
  const seen = new Set([m.id]);
  let wave = [m.id];
  while (wave.length) {
    const next = history.filter((h) => wave.includes(h.superseded_by) && !seen.has(h.id));
    next.forEach((h) => { seen.add(h.id); chain.push(h); });
    wave = next.map((h) => h.id);
  }
  return chain;
}

// An edit writes a new version (PATCH): the old one stays in the lineage, superseded by it.
function editForm(space, m) {
  const text = el("textarea", { "aria-label": `new text of ${m.id}` }, m.content);
  const form = el("form", { class: "edit", hidden: true, onsubmit: (event) => {
    event.preventDefault();
    guarded(async () => {
      const edited = await call("PATCH", `/api/memories/${m.id}`, { space }, { text: text.value });
      say(`Saved ${edited.id}; ${m.id} is kept as its history.`, "info");
      await route();
    });
  } }, text, el("div", { class: "row" },
    el("button", { type: "submit", class: "primary" }, "Save as new version"),
    el("button", { type: "button", onclick: () => { form.hidden = true; text.value = m.content; } },
      "Cancel")));
  return form;
}

async function memoriesTab(space, body) {
  const { facts } = await get("/api/facts", { space, include_history: true });
  const sections = [["state", "States and facts"], ["event", "Events"],
    ["rule", "Forbidden rules"], ["exception", "Conditional exceptions"]];
  body.replaceChildren();
  if (!facts.length) body.append(el("p", { class: "muted" }, "No memories yet: run sleep to consolidate episodes."));
  for (const [kind, title] of sections) {
    const shown = facts.filter((m) => memoryKind(m) === kind && (m.active || !m.superseded_by));
    if (!shown.length) continue;
    body.append(el("h2", {}, title),
      table(["Id", "Memory", "State", "When", ""], shown.map((m) => memoryRow(space, m, facts))));
  }
}

async function episodesTab(space, body, cursor) {
  const session = body.dataset.session || "";
  const cursors = body.cursors || [0];
  body.cursors = cursors;
  const after = cursor ?? cursors[cursors.length - 1];
  const page = await get("/api/episodes", { space, after, limit: PAGE, session_id: session });
  const filter = el("input", { id: "session", placeholder: "session id", value: session });
  const rows = page.episodes.map((e) => el("tr", { "data-episode": e.id },
    el("td", { class: "num" }, e.id), el("td", {}, day(e.occurred_at)),
    el("td", {}, e.session_id || "—"), el("td", {}, e.role || e.kind),
    el("td", { class: "text" }, e.text)));
  body.replaceChildren(
    el("form", { class: "row", onsubmit: (event) => {
      event.preventDefault();
      body.dataset.session = filter.value.trim();
      body.cursors = [0];
      guarded(() => episodesTab(space, body));
    } }, filter, el("button", { type: "submit" }, "Filter by session")),
    rows.length ? table(["Id", "When", "Session", "Role", "Text"], rows)
      : el("p", { class: "muted" }, "No episodes."),
    el("div", { class: "row" },
      el("button", { type: "button", disabled: cursors.length < 2, onclick: () => {
        cursors.pop();
        guarded(() => episodesTab(space, body));
      } }, "Previous page"),
      el("button", { type: "button", disabled: page.next_after === null, onclick: () => {
        cursors.push(page.next_after);
        guarded(() => episodesTab(space, body));
      } }, "Next page")));
}

async function searchTab(space, body) {
  // The filters go to POST /api/search as `filters`: the store ranks only what matches.
  const query = el("input", { id: "query", placeholder: "what to recall", size: 50 });
  const field = (id, label, attrs) => [el("label", { for: id }, label), el("input", { id, ...attrs })];
  const kind = el("select", { id: "filter-kind" },
    [["", "passages and memories"], ["passage", "passages"], ["memory", "memories"]]
      .map(([value, label]) => el("option", { value }, label)));
  const filters = el("div", { class: "row", id: "search-filters" },
    el("label", { for: "filter-kind" }, "Kind"), kind,
    field("filter-session", "Session", { size: 10 }),
    field("filter-role", "Role", { size: 10, placeholder: "user" }),
    field("filter-since", "Since", { type: "date" }),
    field("filter-until", "Until", { type: "date" }),
    field("filter-category", "Category", { size: 10, placeholder: "fact" }),
    field("filter-meta", "Metadata", { size: 18, placeholder: "key=value, key=value" }));
  const value = (id) => body.querySelector(`#${id}`).value.trim() || undefined;
  const metadata = () => Object.fromEntries((value("filter-meta") || "").split(",")
    .map((pair) => pair.trim()).filter(Boolean)
    .map((pair) => [pair.split("=")[0].trim(), pair.slice(pair.indexOf("=") + 1).trim()]));
  const results = el("div", {});
  body.replaceChildren(el("form", { onsubmit: (event) => {
    event.preventDefault();
    guarded(async () => {
      const wanted = {
        kind: kind.value || undefined, session: value("filter-session"),
        role: value("filter-role"), since: value("filter-since"),
        until: value("filter-until") && `${value("filter-until")}T23:59:59.999999Z`, // the whole day
        category: value("filter-category"), metadata: metadata(),
      };
      if (!Object.keys(wanted.metadata).length) delete wanted.metadata;
      const found = await call("POST", "/api/search", { space },
        { query: query.value, filters: JSON.parse(JSON.stringify(wanted)) });
      const rows = hitRows(found.hits);
      rows.forEach((row, i) => row.append(el("td", { class: "muted" },
        [found.hits[i].session_id, day(found.hits[i].occurred_at)].filter(Boolean).join(" · "))));
      results.replaceChildren(found.hits.length
        ? table(["Kind", "Text", "Score", "Why (per signal)", "Session · when"], rows)
        : el("p", { class: "muted" }, "Nothing recalled for that."));
    });
  } }, el("div", { class: "row" }, query, el("button", { type: "submit", class: "primary" }, "Search")),
  filters), results);
}

async function auditTab(space, body) {
  const { entries } = await get("/api/audit", { space });
  body.replaceChildren(entries.length
    ? table(["When", "Reason", "Claim"], entries.map((e) => el("tr", {},
      el("td", {}, day(e.created_at)), el("td", {}, e.reason),
      el("td", { class: "text breakdown" }, JSON.stringify(e.item)))))
    : el("p", { class: "muted" }, "Nothing rejected or closed yet."));
}

async function blocksTab(space, body) {
  const { entries, logging, keep, retention_days: days } = await get("/api/blocks", { space });
  const note = logging
    ? "Blocks injected before turns (proxy, SDK, REST, MCP), newest first: ids and token counts, and the query's hash — no memory text unless the log_block_content setting is on. " +
      `Kept: the last ${keep} per space, ${days} days.`
    : "The block log is off: start the server with --log-blocks (ORCAMEM_LOG_BLOCKS=1) to record which blocks are injected.";
  body.replaceChildren(el("p", { class: "muted", id: "blocks-note" }, note),
    entries.length
      ? table(["When", "Surface", "Items", "Tokens", "Query"], entries.map((e) => el("tr", { "data-block": e.id },
        el("td", {}, day(e.created_at)), el("td", {}, el("span", { class: "badge" }, e.surface)),
        el("td", { class: "breakdown" }, e.item_ids.join(", ")), el("td", { class: "num" }, e.tokens),
        el("td", { class: "text" }, e.query ?? el("code", { class: "breakdown" }, e.query_hash.slice(0, 19)),
          e.block ? el("pre", { class: "block" }, e.block) : null))))
      : el("p", { class: "muted" }, "No injected block logged yet."));
}

// -- why this block ---------------------------------------------------------------------------

async function whyPage() {
  const { spaces } = await get("/api/spaces");
  const space = el("select", { id: "why-space" },
    spaces.map((s) => el("option", { value: s.name }, s.name)));
  const message = el("textarea", { id: "why-message", placeholder: "the user's next message" });
  const out = el("div", { id: "why-out" });
  main.replaceChildren(el("h1", {}, "Why this block"),
    el("p", { class: "muted" },
      "The exact block the next turn would get for a message, what went in and why, and what was left out. A preview: nothing is marked accessed."),
    el("form", { onsubmit: (event) => {
      event.preventDefault();
      guarded(async () => showWhy(await get("/api/explain", { space: space.value, q: message.value }), out));
    } }, el("div", { class: "row" }, el("label", { for: "why-space" }, "Space"), space),
    message, el("div", { class: "row" }, el("button", { type: "submit", class: "primary" }, "Show the block"))),
    out);
}

function showWhy(why, out) {
  out.replaceChildren(
    el("h2", {}, "The block"),
    el("p", { id: "why-tokens", class: "muted" },
      `${why.tokens} of ${why.budget_tokens} tokens · ${why.included.length} items in, ` +
      `${why.cut.length} left out, ${why.rules.length} forbidden rules · past the first ` +
      `${why.min_block_tokens} tokens an item needs ${why.relative_score} of the best score`),
    why.block ? el("pre", { class: "block", id: "why-block" }, why.block)
      : el("p", { class: "muted", id: "why-block" }, "Nothing would be injected: no memory bears on this message."),
    el("h2", {}, "In the block"),
    table(["Kind", "Text", "Score", "Why (per signal)"], hitRows([...why.rules, ...why.included])),
    el("h2", {}, "Ranked but left out"),
    why.cut.length ? table(["Kind", "Text", "Score", "Why (per signal)", "Left out because"],
      hitRows(why.cut).map((row, i) => {
        row.append(el("td", { "data-reason": why.cut[i].reason }, why.cut[i].detail));
        return row;
      }))
      : el("p", { class: "muted" }, "Nothing ranked was left out."));
}

// -- Memory Bank ------------------------------------------------------------------------------

async function bankPage(profile) {
  const chooser = el("input", { id: "profile", placeholder: "profile name", value: profile || "" });
  main.replaceChildren(el("h1", {}, "Memory Bank"),
    el("form", { class: "row", onsubmit: (event) => {
      event.preventDefault();
      location.hash = `#/bank/${encodeURIComponent(chooser.value.trim())}`;
    } }, chooser, el("button", { type: "submit" }, "Open profile")));
  const body = el("section", { id: "bank" });
  main.append(body);
  if (!profile) {
    await guarded(async () => {
      const stats = await get("/api/memory-bank/stats");
      body.append(el("p", { class: "muted" },
        `${stats.totalMemories} memories in ${stats.profilesWithMemory} profiles · storage ` +
        `${stats.storage}${stats.durable ? "" : " (in memory only: lost at exit)"}`),
      table(["Profile", "Memories"], Object.entries(stats.perProfile).map(([name, count]) =>
        el("tr", { "data-profile": name },
          el("td", {}, el("a", { href: `#/bank/${encodeURIComponent(name)}` }, name)),
          el("td", { class: "num" }, count)))));
    });
    main.append(notesPanel());
    return;
  }
  await bankProfile(profile, body);
}

function bankRows(profile, memories, scores) {
  return memories.map((m, i) => el("tr", { "data-bank-memory": m.id },
    el("td", { class: "text" }, m.processedContent,
      el("div", { class: "muted" }, m.summary)),
    el("td", {}, el("span", { class: "badge" }, m.category),
      el("span", { class: "badge" }, `confidence ${Number(m.confidence).toFixed(2)}`)),
    el("td", { class: "num" }, Number(m.stalenessScore).toFixed(2)),
    el("td", { class: "num" }, m.accessCount),
    el("td", {}, day(m.createdAt), el("div", { class: "muted" }, `last used ${day(m.lastAccessedAt)}`)),
    scores ? el("td", {}, breakdown(scores[i])) : null,
    el("td", {}, el("button", { type: "button", class: "danger", onclick: () => guarded(async () => {
      await call("DELETE", `/api/profiles/${encodeURIComponent(profile)}/memories/${m.id}`);
      say(`Deleted ${m.id} from ${profile}.`, "info");
      await route();
    }) }, "Delete"))));
}

const BANK_CATEGORIES = ["general", "preference", "fact", "behavior", "context"];
const BANK_HEAD = ["Memory", "Category", "Staleness", "Used", "Created"];

async function bankProfile(profile, body) {
  const base = `/api/profiles/${encodeURIComponent(profile)}/memories`;
  const page = await get(base, { limit: 50 });
  const query = el("input", { id: "bank-query", placeholder: "search this profile", size: 40 });
  const only = el("select", { id: "bank-only", "aria-label": "only this category" },
    el("option", { value: "" }, "any category"),
    ...BANK_CATEGORIES.map((c) => el("option", { value: c }, c)));
  const results = el("div", { id: "bank-results" });
  const content = el("input", { id: "bank-content", placeholder: "a memory to save", size: 50 });
  const category = el("select", { id: "bank-category" },
    BANK_CATEGORIES.map((c) => el("option", { value: c }, c)));
  body.replaceChildren(
    el("h2", {}, `Profile ${profile}`),
    el("form", { class: "row", onsubmit: (event) => {
      event.preventDefault();
      guarded(async () => {
        const found = await get(`${base}/search`,
          { q: query.value, minScore: 0, category: only.value || undefined });
        results.replaceChildren(found.hits.length
          ? table([...BANK_HEAD, "Why (relevance)", ""], bankRows(profile,
            found.hits.map((h) => h.memory),
            found.hits.map((h) => ({ score: h.score, recency: h.relevance.recency,
              usage: h.relevance.usage, topic: h.relevance.topic,
              confidence: h.relevance.confidenceMultiplier }))))
          : el("p", { class: "muted" }, "No memory shares a topic with that."));
      });
    } }, query, only, el("button", { type: "submit", class: "primary" }, "Search")),
    results,
    el("form", { class: "row", onsubmit: (event) => {
      event.preventDefault();
      guarded(async () => {
        const saved = await call("POST", base, undefined,
          { content: content.value, category: category.value });
        say(`Saved ${saved.id} to ${profile}.`, "info");
        await route();
      });
    } }, content, category, el("button", { type: "submit" }, "Save")),
    el("p", { class: "muted" }, `${page.total} memories, newest first`),
    page.memories.length ? table([...BANK_HEAD, ""], bankRows(profile, page.memories))
      : el("p", { class: "muted" }, "No memories in this profile."));
}

function notesPanel() {
  const id = el("input", { id: "automation", placeholder: "automation id" });
  const note = el("textarea", { id: "note", placeholder: "what the last run found and where it stopped" });
  const block = el("pre", { class: "block", id: "note-block", hidden: true });
  const show = (got) => {
    note.value = got.note;
    block.textContent = got.block;
    block.hidden = !got.block;
  };
  const path = () => `/api/automations/${encodeURIComponent(id.value.trim())}/memory`;
  return el("section", { class: "card" }, el("h2", {}, "Automation notes"),
    el("p", { class: "muted" }, "The one note an automation keeps between firings (admin keys)."),
    el("div", { class: "row" }, id,
      el("button", { type: "button", onclick: () => guarded(async () => show(await get(path()))) }, "Read"),
      el("button", { type: "button", onclick: () => guarded(async () => {
        show(await call("PUT", path(), undefined, { note: note.value }));
        say("Note saved.", "info");
      }) }, "Save"),
      el("button", { type: "button", class: "danger", onclick: () => guarded(async () => {
        await call("DELETE", path());
        show({ note: "", block: "" });
        say("Note cleared.", "info");
      }) }, "Clear")),
    note, block);
}

// -- memory settings (seed 004) -----------------------------------------------------------------

async function settingsPage() {
  const report = await get("/api/capability");
  const provider = report.provider;
  const rows = report.settings.fields.map((f) => {
    const input = el("input", { "aria-label": `new ${f.key}`, value: JSON.stringify(f.value), size: 16 });
    return el("tr", { "data-setting": f.key },
      el("td", {}, el("code", {}, f.key)),
      el("td", {}, JSON.stringify(f.value)),
      el("td", {}, el("span", { class: `badge ${f.origin === "workspace" ? "current" : ""}` }, f.badge)),
      el("td", {}, el("div", { class: "actions" }, input,
        el("button", { type: "button", onclick: () => guarded(async () => {
          let value = input.value.trim();
          try { value = JSON.parse(value); } catch { /* a bare string: provider names */ }
          await call("PUT", `/api/capability/settings/${f.key}`, undefined, { value });
          say(`Set ${f.key} in this workspace (sessions started from now on use it).`, "info");
          await settingsPage();
        }) }, "Set"),
        f.origin === "workspace" ? el("button", { type: "button", onclick: () => guarded(async () => {
          await call("DELETE", `/api/capability/settings/${f.key}`);
          say(`Cleared the ${f.key} override.`, "info");
          await settingsPage();
        }) }, "Clear") : null)));
  });
  main.replaceChildren(el("h1", {}, "Memory settings"),
    el("p", { class: "muted" }, `Workspace ${report.workspace}: memory is `,
      el("strong", {}, report.enabled ? "on" : "off")),
    el("div", { class: "card", id: "provider" },
      el("div", {}, el("strong", {}, provider.provider), " · ",
        el("span", { class: `badge ${provider.state === "ready" ? "current" : "closed"}`,
          id: "provider-state" }, provider.label)),
      el("p", {}, provider.detail),
      provider.action ? el("p", {}, `What to do: ${provider.action}`) : null,
      provider.notes.length ? el("ul", {}, provider.notes.map((n) => el("li", { class: "muted" }, n))) : null),
    table(["Setting", "Value", "Source", ""], rows),
    Object.entries(report.settings.layers).flatMap(([name, layer]) => layer.problems.map((p) =>
      el("p", { class: "muted" }, `${name} layer ${layer.path} discarded whole: ${p}`))));
}

// -- routing ----------------------------------------------------------------------------------

async function route() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const page = parts[0] || "spaces";
  for (const link of document.querySelectorAll("nav a[data-page]")) {
    link.classList.toggle("active", link.dataset.page === (page === "space" ? "spaces" : page));
  }
  await guarded(async () => {
    if (page === "space" && parts[1]) await spacePage(parts[1], parts[2] || "memories");
    else if (page === "why") await whyPage();
    else if (page === "bank") await bankPage(parts[1]);
    else if (page === "settings") await settingsPage();
    else if (page === "local") await localPage(parts[1]);
    else await spacesPage();
  });
}

document.getElementById("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = document.getElementById("key").value.trim();
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
  say(value ? "Key set for this tab." : "Key cleared.", "info");
  route();
});
window.addEventListener("hashchange", () => { say(""); route(); });
route();
