/**
 * A TypeScript client for orcamem's REST API (`orcamem serve`), typed by the server's own
 * OpenAPI document: `src/schema.ts` is generated from `openapi.json` (`npm run generate`),
 * and every request and answer below is one of its schemas.
 *
 * Errors: a non-2xx answer throws {@link OrcamemError} with orcamem's own `type`, `message`
 * (which says what to do next) and `status`.
 */
import type { components } from "./schema.js";

export type Schemas = components["schemas"];
export type EpisodeIn = Schemas["EpisodeIn"];
export type Episode = Schemas["EpisodeOut"];
export type MemoryIn = Schemas["MemoryIn"];
export type Memory = Schemas["MemoryOut"];
export type SearchResult = Schemas["SearchOut"];
export type ChatMessage = Schemas["ChatMessage"];

export interface ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An orcamem API key (servers started with `--require-keys`). */
  apiKey?: string;
  /** The space every call uses unless it names another (default `default`). */
  space?: string;
  /** Milliseconds before a request is abandoned (default 30 000). */
  timeoutMs?: number;
  fetch?: typeof fetch;
}

type Query = Record<string, string | number | boolean | undefined>;

/** An error answer from orcamem: `{"error": {"type", "message", "status"}}`. */
export class OrcamemError extends Error {
  readonly type: string;
  readonly status: number;

  constructor(type: string, message: string, status: number) {
    super(message);
    this.name = "OrcamemError";
    this.type = type;
    this.status = status;
  }
}

export class OrcamemClient {
  readonly baseUrl: string;
  readonly space: string;
  private readonly apiKey?: string;
  private readonly timeoutMs: number;
  private readonly fetcher: typeof fetch;

  constructor(options: ClientOptions) {
    if (!/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError(
        `baseUrl must be an http(s) URL such as http://127.0.0.1:8080, got ${options.baseUrl}`,
      );
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.space = options.space ?? "default";
    this.apiKey = options.apiKey;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.fetcher = options.fetch ?? fetch;
  }

  /** A client for another space on the same server. */
  in(space: string): OrcamemClient {
    return new OrcamemClient({
      baseUrl: this.baseUrl,
      apiKey: this.apiKey,
      space,
      timeoutMs: this.timeoutMs,
      fetch: this.fetcher,
    });
  }

  // -- episodes ------------------------------------------------------------------------------

  /** Append one episode (a note by default; a `turn` with a `role`), indexed at once. */
  async add(episode: EpisodeIn | string): Promise<Episode> {
    const body = typeof episode === "string" ? { text: episode } : episode;
    const out = await this.call<Schemas["EpisodesOut"]>("POST", "/api/episodes", { body });
    return out.episodes[0];
  }

  /** Append up to 512 episodes, all or nothing. */
  async addMany(episodes: EpisodeIn[]): Promise<Episode[]> {
    const out = await this.call<Schemas["EpisodesOut"]>("POST", "/api/episodes", {
      body: { episodes },
    });
    return out.episodes;
  }

  /** One conversation turn. */
  async observe(
    role: string,
    text: string,
    fields: Omit<EpisodeIn, "text" | "role" | "kind"> = {},
  ): Promise<Episode> {
    return this.add({ ...fields, text, role, kind: "turn" });
  }

  /** A page of episodes, oldest first, after the id cursor `after`. */
  async episodes(
    options: { after?: number; limit?: number; sessionId?: string } = {},
  ): Promise<Schemas["EpisodePage"]> {
    return this.call("GET", "/api/episodes", {
      query: { after: options.after, limit: options.limit, session_id: options.sessionId },
    });
  }

  async episode(id: number): Promise<Episode> {
    return this.call("GET", `/api/episodes/${id}`);
  }

  async deleteEpisode(id: number): Promise<void> {
    await this.call("DELETE", `/api/episodes/${id}`);
  }

  // -- recall --------------------------------------------------------------------------------

  /** Ranked hits with the per-signal breakdown, and the space's forbidden rules. */
  async search(query: string, options: { topK?: number } = {}): Promise<SearchResult> {
    return this.call("POST", "/api/search", { body: { query, top_k: options.topK } });
  }

  /** The memory block a chat would get for `query` (`""`: nothing to recall). */
  async recall(query: string): Promise<string> {
    const out = await this.call<Schemas["RecallOut"]>("GET", "/api/context", { query: { q: query } });
    return out.block ?? "";
  }

  /** The messages with the memory block prepended, and the block. */
  async context(
    messages: ChatMessage[],
    options: { automationId?: string } = {},
  ): Promise<Schemas["ContextOut"]> {
    return this.call("POST", "/api/context", {
      body: { messages, automation_id: options.automationId },
    });
  }

  // -- memories ------------------------------------------------------------------------------

  /** Store an explicit memory (a fact, preference, rule, …). */
  async remember(memory: MemoryIn | string): Promise<Memory> {
    const body = typeof memory === "string" ? { text: memory } : memory;
    return this.call("POST", "/api/memories", { body });
  }

  /** A forbidden rule, hoisted first where it bears on a query (everywhere with `always`). */
  async forbid(rule: string, options: { always?: boolean } = {}): Promise<Memory> {
    return this.remember({
      text: rule,
      forbidden: true,
      tags: options.always ? ["always"] : [],
    });
  }

  async facts(options: { includeHistory?: boolean } = {}): Promise<Memory[]> {
    const out = await this.call<Schemas["FactsOut"]>("GET", "/api/facts", {
      query: { include_history: options.includeHistory },
    });
    return out.facts;
  }

  async memories(
    options: { category?: string; forbidden?: boolean; offset?: number; limit?: number } = {},
  ): Promise<Schemas["MemoryPage"]> {
    return this.call("GET", "/api/memories", { query: options });
  }

  async memory(id: string): Promise<Memory> {
    return this.call("GET", `/api/memories/${encodeURIComponent(id)}`);
  }

  async forget(id: string): Promise<void> {
    await this.call("DELETE", `/api/memories/${encodeURIComponent(id)}`);
  }

  // -- the space -----------------------------------------------------------------------------

  /** Consolidate the space now (states, events, facts and rules from its episodes). */
  async sleep(options: { retryFailed?: boolean } = {}): Promise<Schemas["SleepOut"]> {
    return this.call("POST", "/api/sleep", { query: { retry_failed: options.retryFailed } });
  }

  async stats(): Promise<Schemas["StatsOut"]> {
    return this.call("GET", "/api/stats");
  }

  async spaces(): Promise<Schemas["SpacesOut"]["spaces"]> {
    const out = await this.call<Schemas["SpacesOut"]>("GET", "/api/spaces", { space: false });
    return out.spaces;
  }

  /** The space as JSON lines (`orcamem export`). */
  async export(): Promise<string> {
    return this.call("GET", "/api/export", { raw: true });
  }

  /** Load an export into this space; what is already there is skipped. */
  async import(exported: string): Promise<Schemas["ImportOut"]> {
    return this.call("POST", "/api/import", { body: exported, ndjson: true });
  }

  // -- transport -----------------------------------------------------------------------------

  private async call<T>(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; space?: boolean; raw?: boolean; ndjson?: boolean } = {},
  ): Promise<T> {
    const url = new URL(this.baseUrl + path);
    const query: Query = { ...(options.query ?? {}) };
    if (options.space !== false) query.space = this.space;
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = options.ndjson ? "application/x-ndjson" : "application/json";
      body = options.ndjson ? String(options.body) : JSON.stringify(options.body);
    }
    const answer = await this.fetcher(url, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(this.timeoutMs),
    });
    if (!answer.ok) throw await errorOf(answer);
    if (answer.status === 204) return undefined as T;
    return (options.raw ? await answer.text() : await answer.json()) as T;
  }
}

async function errorOf(answer: Response): Promise<OrcamemError> {
  const text = await answer.text();
  try {
    const { error } = JSON.parse(text) as Schemas["ErrorBody"];
    return new OrcamemError(error.type, error.message, error.status);
  } catch {
    return new OrcamemError("HTTPError", `HTTP ${answer.status}: ${text.slice(0, 200)}`, answer.status);
  }
}
