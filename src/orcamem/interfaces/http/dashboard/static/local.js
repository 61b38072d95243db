// orcamem dashboard: the Local memory page (seed 000) over /api/local (admin keys).
// Loaded before app.js and only declares functions: they use app.js's helpers (el, call, get,
// guarded, say, table, day, main) when route() calls localPage. Stored text goes through el()
// (textContent): never markup.
"use strict";

async function localPage(project) {
  if (project) await localProject(project);
  else await localProjects();
}

function jobCounts(jobs) {
  const parts = Object.entries(jobs || {}).filter(([, n]) => n)
    .map(([status, n]) => `${n} ${JOB_STATES[status] || status}`);
  return parts.join(" · ") || "none";
}

async function localProjects() {
  const found = await get("/api/local/projects");
  main.replaceChildren(el("h1", {}, "Local memory"),
    el("p", { class: "muted" },
      `The agent CLI's local memory in ${found.root}: ${found.user_facts} user-wide facts ` +
      "(user.md), and one folder a project."));
  if (!found.projects.length) {
    main.append(el("p", { class: "muted" },
      "No project has local memory yet (`orcamem remember \"project: …\"`, or an agent turn)."));
    return;
  }
  main.append(table(["Project", "Identity", "Last seen in", "Candidates", "Revision",
    "Project facts", "Jobs", "Last seen"], found.projects.map((p) => el("tr", { "data-project": p.id },
    el("td", {}, el("a", { href: `#/local/${p.id}` }, p.name),
      el("div", { class: "muted breakdown" }, p.id.slice(0, 12))),
    el("td", { class: "text" }, p.identity || "—",
      p.identity_kind ? el("div", { class: "muted" }, p.identity_kind) : null,
      p.problems.map((problem) => el("div", { class: "muted" }, problem))),
    el("td", { class: "text" }, p.last_seen_cwd || "—"),
    el("td", { class: "num" }, p.candidates),
    el("td", { class: "num" }, p.revision),
    el("td", { class: "num" }, p.project_facts),
    el("td", {}, jobCounts(p.jobs)),
    el("td", {}, day(p.updated_at))))));
}

async function localProject(id) {
  const base = `/api/local/projects/${encodeURIComponent(id)}`;
  const [project, facts, ledger, jobs] = await Promise.all(
    ["", "/facts", "/ledger", "/jobs"].map((part) => get(base + part)));
  main.replaceChildren(el("section", { id: "local-project" },  // el() drops the empty parts
    el("h1", {}, `Project ${project.name}`),
    el("p", { class: "muted" }, `${project.identity || "identity unknown"} · ` +
      `${project.identity_kind || "—"} · last seen in ${project.last_seen_cwd || "—"} · id ${project.id}`),
    project.problems.length ? el("ul", {}, project.problems.map((p) => el("li", { class: "muted" }, p))) : null,
    el("h2", {}, "Explicit facts"),
    el("p", { class: "muted" }, "What every session of this project loads at start (8 KiB of each file)."),
    factList("User facts (user.md, every project)", facts.user),
    factList("Project facts (memory.md)", facts.project_facts),
    el("h2", {}, `Automatic memory ledger · revision ${ledger.revision}`),
    el("p", { class: "muted" }, "Candidates extracted from finished turns, newest first: the " +
      "authority auto-memory.md and the search index are derived from. Deleting names this " +
      "revision; if the ledger changed since, nothing is deleted."),
    el("div", { class: "row" }, el("button", { type: "button", onclick: () => guarded(route) }, "Reload")),
    ledger.entries.length ? table(["Entry", "Provenance", "Recorded", ""],
      ledger.entries.map((entry) => ledgerRow(base, ledger.revision, entry)))
      : el("p", { class: "muted" }, "No automatic memory in this project."),
    [...ledger.corrupt_lines.map((line) => `unreadable ledger ${line} (kept as it is)`),
      ...ledger.stale_projections.map((file) => `${file} does not match the ledger yet (the next write rebuilds it)`)]
      .map((note) => el("p", { class: "muted" }, note)),
    el("h2", {}, "Extraction jobs"),
    el("p", { class: "muted", id: "job-counts" }, jobCounts(jobs.counts)),
    jobs.jobs.length ? table(["Job", "State", "Attempts", "Lease", "Extractor", "Last error", "Updated"],
      jobs.jobs.map(jobRow)) : el("p", { class: "muted" }, "No extraction job."),
    jobs.problems.map((p) => el("p", { class: "muted" }, p))));
}

function factList(title, file) {
  return el("div", { class: "card" }, el("strong", {}, title),
    el("div", { class: "muted breakdown" }, file.path),
    file.facts.length ? el("ul", {}, file.facts.map((fact) => el("li", { class: "text" }, fact)))
      : el("p", { class: "muted" }, "No facts."),
    file.truncated ? el("p", { class: "muted" },
      `Only ${file.loaded} of ${file.size} bytes are loaded: shorten the file.`) : null);
}

function ledgerRow(base, revision, entry) {
  const confirmBox = el("div", { class: "confirm", hidden: true });
  confirmBox.append(el("p", {}, "Delete this entry? Sessions stop recalling it; the job that " +
    "produced it stays for audit."),
  el("div", { class: "row" },
    el("button", { type: "button", class: "danger", onclick: () => guarded(async () => {
      const done = await call("DELETE", `${base}/ledger/${encodeURIComponent(entry.id)}`,
        { revision });
      say(`Deleted ${entry.id}: the ledger is at revision ${done.revision}.`, "info");
      await route();
    }) }, "Delete entry"),
    el("button", { type: "button", onclick: () => { confirmBox.hidden = true; } }, "Cancel")));
  return el("tr", { "data-entry": entry.id },
    el("td", { class: "text" }, el("span", { class: "badge" }, entry.category), entry.text),
    el("td", { class: "breakdown" }, `session ${entry.session_id || "—"} · turn ${entry.turn_id || "—"}`,
      el("div", {}, `extractor ${entry.extractor || "—"} · job ${entry.job_id || "—"}`),
      el("div", {}, `${entry.id} · added at revision ${entry.revision}`)),
    el("td", {}, day(entry.recorded_at)),
    el("td", {}, el("button", { type: "button", class: "danger",
      onclick: () => { confirmBox.hidden = false; } }, "Delete…"), confirmBox));
}

const JOB_STATES = { pending: "queued", running: "leased", done: "done", failed: "failed" };

function jobRow(job) {
  const badge = job.status === "done" ? "current" : job.status === "failed" ? "rule" : "closed";
  const lease = job.status === "running"
    ? `${job.lease_owner} until ${day(job.lease_expires_at)}${job.lease_expired ? " (expired: a worker takes it over)" : ""}`
    : "—";
  return el("tr", { "data-job": job.id },
    el("td", { class: "breakdown" }, job.id,
      el("div", {}, `session ${job.session_id || "—"} · turn ${job.turn_id || "—"}`)),
    el("td", {}, el("span", { class: `badge ${badge}` }, JOB_STATES[job.status] || job.status)),
    el("td", { class: "num" }, `${job.attempts} of ${job.max_attempts}`),
    el("td", {}, lease),
    el("td", {}, job.extractor || "—"),
    el("td", { class: "text" }, job.error || "—"),
    el("td", {}, day(job.updated_at)));
}
