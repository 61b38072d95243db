/**
 * The client against a real `orcamem serve` (a child process on a free loopback port, its
 * own SQLite file in a temporary directory). The Python that runs it is `$ORCAMEM_PYTHON`
 * (default `python3`), so CI runs the checkout's orcamem.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";

import { OrcamemClient, OrcamemError } from "../src/index.js";

const PYTHON = process.env.ORCAMEM_PYTHON ?? "python3";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

async function waitForHealth(url: string, server: ChildProcess, log: () => string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if (server.exitCode !== null) throw new Error(`orcamem serve exited: ${log()}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`orcamem serve never answered /healthz: ${log()}`);
}

describe("OrcamemClient against orcamem serve", () => {
  let server: ChildProcess;
  let dir: string;
  let url: string;
  let output = "";

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "orcamem-ts-"));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawn(
      PYTHON,
      ["-m", "orcamem", "serve", "--db", join(dir, "m.db"), "--port", String(port), "--no-auto-sleep"],
      { env: { ...process.env, ORCA_HOME: join(dir, "home") }, stdio: ["ignore", "pipe", "pipe"] },
    );
    server.stdout?.on("data", (chunk) => (output += chunk));
    server.stderr?.on("data", (chunk) => (output += chunk));
    await waitForHealth(url, server, () => output);
  });

  after(() => {
    server.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  });

  it("appends, pages, reads and deletes episodes", async () => {
    const alice = new OrcamemClient({ baseUrl: url, space: "ts_episodes" });
    const note = await alice.add("Alice runs the data platform team.");
    const turn = await alice.observe("user", "I moved to Porto in May.", { session_id: "s1" });
    assert.equal(turn.role, "user");
    assert.equal(turn.session_id, "s1");
    const page = await alice.episodes({ limit: 1 });
    assert.deepEqual(page.episodes.map((e) => e.id), [note.id]);
    assert.equal(page.next_after, note.id);
    assert.equal((await alice.episode(turn.id)).text, "I moved to Porto in May.");
    await alice.deleteEpisode(note.id);
    assert.deepEqual((await alice.episodes()).episodes.map((e) => e.id), [turn.id]);
  });

  it("remembers, recalls, searches and forgets", async () => {
    const bob = new OrcamemClient({ baseUrl: url, space: "ts_memories" });
    const memory = await bob.remember({ text: "Bob is allergic to peanuts.", category: "fact" });
    assert.match(memory.id, /^mem-[0-9a-f]{8}$/);
    await bob.forbid("Never suggest peanut recipes.");
    const block = await bob.recall("What should I cook for Bob tonight?");
    assert.match(block, /peanuts/);
    assert.match(block, /FORBIDDEN/);
    const found = await bob.search("allergic", { topK: 3 });
    assert.ok(found.hits.some((hit) => hit.text.includes("peanuts")));
    const built = await bob.context([{ role: "user", content: "Any snack ideas for Bob?" }]);
    assert.equal(built.messages[0].role, "system");
    assert.equal(built.messages[0].content, built.block);
    assert.equal((await bob.memory(memory.id)).content, "Bob is allergic to peanuts.");
    await bob.forget(memory.id);
    assert.ok(!(await bob.facts()).some((fact) => fact.id === memory.id));
  });

  it("moves a space with export and import, and lists spaces", async () => {
    const source = new OrcamemClient({ baseUrl: url, space: "ts_move" });
    await source.add("The launch is on 3 March.");
    const copy = source.in("ts_move_copy");
    assert.deepEqual(await copy.import(await source.export()), {
      episodes: 1,
      memories: 0,
      updated: 0,
      skipped: 0,
    });
    assert.equal((await copy.import(await source.export())).skipped, 1);
    const names = (await source.spaces()).map((space) => space.name);
    assert.ok(names.includes("ts_move") && names.includes("ts_move_copy"));
    assert.equal((await copy.stats()).episodes, 1);
  });

  it("throws orcamem's errors with their type, status and what to do", async () => {
    const bad = new OrcamemClient({ baseUrl: url, space: "no/slashes" });
    await assert.rejects(bad.add("x"), (error: unknown) => {
      assert.ok(error instanceof OrcamemError);
      assert.equal(error.status, 422);
      assert.equal(error.type, "InvalidRequest");
      assert.match(error.message, /space/);
      return true;
    });
    const client = new OrcamemClient({ baseUrl: url });
    await assert.rejects(client.memory("mem-00000000"), (error: unknown) => {
      assert.ok(error instanceof OrcamemError);
      assert.equal(error.status, 404);
      return true;
    });
    await assert.rejects(client.add("   "), (error: unknown) => {
      assert.ok(error instanceof OrcamemError);
      assert.equal(error.type, "InvalidInputError");
      assert.equal(error.status, 400);
      return true;
    });
    assert.throws(() => new OrcamemClient({ baseUrl: "localhost:8080" }), /http/);
  });

  it("calls only operations the server's OpenAPI document has", async () => {
    const live = (await (await fetch(`${url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const used: Array<[string, string]> = [
      ["post", "/api/episodes"], ["get", "/api/episodes"], ["get", "/api/episodes/{episode_id}"],
      ["delete", "/api/episodes/{episode_id}"], ["post", "/api/search"], ["get", "/api/context"],
      ["post", "/api/context"], ["post", "/api/memories"], ["get", "/api/facts"],
      ["get", "/api/memories"], ["get", "/api/memories/{memory_id}"],
      ["delete", "/api/memories/{memory_id}"], ["post", "/api/sleep"], ["get", "/api/stats"],
      ["get", "/api/spaces"], ["get", "/api/export"], ["post", "/api/import"],
    ];
    const missing = used.filter(([method, path]) => !live.paths[path]?.[method]);
    assert.deepEqual(missing, [], "regenerate: npm run generate after updating openapi.json");
  });
});

describe("examples/quickstart.ts (the one in docs/integrations.md)", () => {
  it("runs against orcamem serve", async () => {
    const dir = mkdtempSync(join(tmpdir(), "orcamem-ts-"));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    let output = "";
    const server = spawn(
      PYTHON,
      ["-m", "orcamem", "serve", "--db", join(dir, "m.db"), "--port", String(port), "--no-auto-sleep"],
      { env: { ...process.env, ORCA_HOME: join(dir, "home") }, stdio: ["ignore", "pipe", "pipe"] },
    );
    server.stdout?.on("data", (chunk) => (output += chunk));
    server.stderr?.on("data", (chunk) => (output += chunk));
    try {
      await waitForHealth(url, server, () => output);
      process.env.ORCAMEM_URL = url;
      const printed: string[] = [];
      const log = console.log;
      console.log = (...args: unknown[]) => printed.push(args.join(" "));
      try {
        await import("../examples/quickstart.js");
      } finally {
        console.log = log;
      }
      assert.match(printed.join("\n"), /nurse in Lyon/);
      const alice = new OrcamemClient({ baseUrl: url, space: "user_alice" });
      assert.equal((await alice.facts())[0].content, "Alice prefers short answers.");
    } finally {
      server.kill("SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
