"""The PostgreSQL schema: append-only, numbered migrations, as for SQLite. Never edit a shipped
one; add the next number.

Version 1 is the SQLite schema at its migration 7, in PostgreSQL terms: the FTS5 indexes are
``tsv`` columns (``tsvector``, weights A/B/C for the FTS5 columns) with a GIN index, filled with
the token count ``doc_len`` by a trigger; vectors are ``halfvec`` (the float16 the SQLite file
stores), indexed by HNSW per dimension (:func:`hnsw_index`) until migration 7; ``fts_stats`` and
``spaces.line_count`` are kept by statement triggers so BM25 needs no count at query time.
"""

from __future__ import annotations

__all__ = ["LATEST", "MIGRATIONS", "TABLES", "TEXT_CONFIG", "above", "hnsw_index"]

TEXT_CONFIG = "orcamem"
"""The text search configuration: PostgreSQL's parser, an English snowball stemmer with no
stop words (FTS5 ``porter`` keeps every token too), compound words only as their parts."""


def above(space: str, after: str, alias: str = "") -> str:
    """The rows of a space past an id, as only the ``(space, id)`` index answers them (order
    them by ``space, id`` too). As ``space = … AND id > …`` the planner, its statistics
    older than the newest ids, may walk the primary key from ``after`` and filter by space:
    a space written before another read every later line of the other (60 ms a search for a
    10,000-line space beside a 100,000-line one, in the vector cache's refresh). Row
    comparisons bound the scan on both sides (with ``space =``, the index would start at the
    space's first entry). The planner estimates a row comparison at a row or two, so a
    statement that reads a known id range in bulk keeps both plain bounds (the lexical
    index's load). ``space``/``after``: the SQL of the two values."""
    a = f"{alias}." if alias else ""
    return (
        f"({a}space, {a}id) > ({space}, {after}) "
        f"AND ({a}space, {a}id) <= ({space}, 9223372036854775807)"
    )


PENDING_KB = 64
"""GIN's pending list per ``tsv`` index (migration 7): what a search may scan unmerged."""

_COUNT = {
    "lines": "UPDATE spaces s SET line_count = s.line_count {op} d.n FROM "
    "(SELECT space, count(*) AS n FROM changed GROUP BY space) d WHERE s.name = d.space;",
    "memories": "",
}


def _stats(table: str) -> list[str]:
    """Statement triggers that keep ``fts_stats`` (and a space's line count) exact."""
    statements = []
    for event, op in (("INSERT", "+"), ("DELETE", "-")):
        name = f"{table}_{event.lower()}_stats"
        statements += [
            f"""CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                UPDATE fts_stats SET docs = docs {op} (SELECT count(*) FROM changed),
                    tokens = tokens {op} (SELECT coalesce(sum(doc_len), 0) FROM changed)
                WHERE name = '{table}';
                {_COUNT[table].format(op=op)}
                RETURN NULL; END $$""",
            f"""CREATE TRIGGER {name} AFTER {event} ON {table}
                REFERENCING {"NEW" if event == "INSERT" else "OLD"} TABLE AS changed
                FOR EACH STATEMENT EXECUTE FUNCTION {name}()""",
        ]
    return statements


def _terms(table: str) -> list[str]:
    """Statement triggers that keep ``fts_terms`` exact: per lexeme, the rows of ``table``
    whose ``tsv`` holds it (BM25's ``n``, over the whole table as in FTS5). Writes hold the
    write lock, so two upserts of one lexeme never race."""
    counted = "SELECT u.lexeme, count(*) AS n FROM changed c, unnest(c.tsv) u GROUP BY 1"
    return [
        f"""CREATE FUNCTION {table}_insert_terms() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            INSERT INTO fts_terms (name, lexeme, docs) SELECT '{table}', d.lexeme, d.n
                FROM ({counted}) d ORDER BY d.lexeme
                ON CONFLICT (name, lexeme) DO UPDATE SET docs = fts_terms.docs + excluded.docs;
            RETURN NULL; END $$""",
        f"""CREATE TRIGGER {table}_insert_terms AFTER INSERT ON {table}
            REFERENCING NEW TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_insert_terms()""",
        f"""CREATE FUNCTION {table}_delete_terms() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            UPDATE fts_terms t SET docs = t.docs - d.n FROM ({counted}) d
                WHERE t.name = '{table}' AND t.lexeme = d.lexeme;
            RETURN NULL; END $$""",
        f"""CREATE TRIGGER {table}_delete_terms AFTER DELETE ON {table}
            REFERENCING OLD TABLE AS changed FOR EACH STATEMENT
            EXECUTE FUNCTION {table}_delete_terms()""",
    ]


def _unlinks() -> list[str]:
    """The entity graph's links go with their line, memory or entity by triggers rather than
    foreign keys (migration 7): a foreign key checks and share-locks both parents of every
    link as it is written, and inside an import's savepoints each such lock makes a
    multixact, 3.4 of a 10,000-turn import's 11 s. Links are only ever written by this store,
    from rows of the same transaction, and ``orcamem check`` counts them (graph drift)."""
    statements = [
        f"ALTER TABLE {table} DROP CONSTRAINT {table}_{column}_fkey"
        for table, column in (
            ("entity_lines", "entity_id"), ("entity_lines", "line_id"),
            ("entity_memories", "entity_id"), ("entity_memories", "memory_id"),
        )
    ]  # fmt: skip
    for parent, links, column in (("lines", "entity_lines", "line_id"),
                                  ("memories", "entity_memories", "memory_id")):  # fmt: skip
        statements += [  # a statement's deleted rows at once (a space's delete is thousands)
            f"""CREATE FUNCTION {parent}_unlink() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                DELETE FROM {links} l USING gone g WHERE l.{column} = g.id;
                RETURN NULL; END $$""",
            f"""CREATE TRIGGER {parent}_unlink AFTER DELETE ON {parent}
                REFERENCING OLD TABLE AS gone FOR EACH STATEMENT
                EXECUTE FUNCTION {parent}_unlink()""",
        ]
    return [  # an entity row by row: entity_unlinked deletes one each time its fan reaches 0
        *statements,
        """CREATE FUNCTION entities_unlink() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            DELETE FROM entity_lines WHERE entity_id = OLD.id;
            DELETE FROM entity_memories WHERE entity_id = OLD.id;
            RETURN NULL; END $$""",
        """CREATE TRIGGER entities_unlink AFTER DELETE ON entities
            FOR EACH ROW EXECUTE FUNCTION entities_unlink()""",
    ]


def _rewritten(table: str, column: str) -> list[str]:
    """Row triggers that keep a row's ``tsv`` and BM25's counts exact when ``column`` is
    rewritten (only a forget rewrites one: a statement trigger may not name the column): the
    insert trigger's own function makes ``tsv`` and ``doc_len`` again, then each lexeme's
    ``fts_terms`` count and the table's ``fts_stats`` tokens move from the old to the new."""
    return [
        f"""CREATE TRIGGER {table}_tsv_{column} BEFORE UPDATE OF {column} ON {table}
            FOR EACH ROW EXECUTE FUNCTION {table}_tsv()""",
        f"""CREATE FUNCTION {table}_{column}_terms() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            UPDATE fts_terms t SET docs = t.docs - 1 FROM unnest(OLD.tsv) u
                WHERE t.name = '{table}' AND t.lexeme = u.lexeme;
            INSERT INTO fts_terms (name, lexeme, docs)
                SELECT '{table}', u.lexeme, 1 FROM unnest(NEW.tsv) u ORDER BY u.lexeme
                ON CONFLICT (name, lexeme) DO UPDATE SET docs = fts_terms.docs + 1;
            UPDATE fts_stats SET tokens = tokens - OLD.doc_len + NEW.doc_len
                WHERE name = '{table}';
            RETURN NULL; END $$""",
        f"""CREATE TRIGGER {table}_{column}_terms AFTER UPDATE OF {column} ON {table}
            FOR EACH ROW EXECUTE FUNCTION {table}_{column}_terms()""",
    ]


def _tsv(table: str, columns: dict[str, str]) -> list[str]:
    vector = " || ".join(
        f"setweight(to_tsvector('{TEXT_CONFIG}', coalesce(NEW.{column}, '')), '{weight}')"
        for column, weight in columns.items()
    )
    return [
        f"""CREATE FUNCTION {table}_tsv() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
            NEW.tsv := {vector};
            NEW.doc_len := (SELECT coalesce(sum(cardinality(positions)), 0) FROM unnest(NEW.tsv));
            RETURN NEW; END $$""",
        f"""CREATE TRIGGER {table}_tsv BEFORE INSERT ON {table}
            FOR EACH ROW EXECUTE FUNCTION {table}_tsv()""",
        # fastupdate off: a fresh write is searchable by the index itself, never by a scan of
        # GIN's pending list (which grows until a vacuum and slows every query meanwhile)
        f"CREATE INDEX {table}_tsv ON {table} USING gin (tsv) WITH (fastupdate = off)",
        # a row's tsv and vector stay in the row (scored for every match), its texts go to
        # TOAST first: a detoasted tsv per matching row was half of a lexical query
        f"ALTER TABLE {table} ALTER COLUMN tsv SET STORAGE MAIN",
        f"ALTER TABLE {table} ALTER COLUMN vector SET STORAGE PLAIN",
    ]


MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "episodes, lines, memories, spaces, jobs, keys, notes, entity graph (SQLite schema 7)",
        [
            "CREATE EXTENSION IF NOT EXISTS vector",
            f"CREATE TEXT SEARCH DICTIONARY {TEXT_CONFIG}_stem "
            "(TEMPLATE = snowball, Language = english)",
            f"CREATE TEXT SEARCH CONFIGURATION {TEXT_CONFIG} (COPY = simple)",
            f"ALTER TEXT SEARCH CONFIGURATION {TEXT_CONFIG} ALTER MAPPING FOR asciiword, word, "
            f"numword, hword_asciipart, hword_part, hword_numpart WITH {TEXT_CONFIG}_stem",
            f"ALTER TEXT SEARCH CONFIGURATION {TEXT_CONFIG} DROP MAPPING FOR asciihword, hword, "
            "numhword, email, url, host, url_path, file",
            """CREATE TABLE spaces (
                name TEXT PRIMARY KEY,
                created_at TEXT NOT NULL,
                embedder_id TEXT,
                dim INTEGER,
                vector_epoch BIGINT NOT NULL DEFAULT 0,
                line_count BIGINT NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE episodes (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                space TEXT NOT NULL REFERENCES spaces(name),
                kind TEXT NOT NULL,
                role TEXT,
                text TEXT NOT NULL,
                session_id TEXT,
                session_seq INTEGER,
                turn_id TEXT,
                occurred_at TEXT NOT NULL,
                created_at TEXT NOT NULL,
                digest TEXT NOT NULL,
                meta TEXT NOT NULL DEFAULT '{}'
            )""",
            "CREATE INDEX episodes_space_session ON episodes(space, session_id, session_seq)",
            "CREATE INDEX episodes_space_digest ON episodes(space, digest)",
            "CREATE INDEX episodes_space_turn ON episodes(space, turn_id) "
            "WHERE turn_id IS NOT NULL",
            "CREATE INDEX episodes_space_id ON episodes(space, id)",
            """CREATE FUNCTION episodes_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
               BEGIN RAISE EXCEPTION 'episodes are append-only'; END $$""",
            """CREATE TRIGGER episodes_append_only BEFORE UPDATE ON episodes
               FOR EACH ROW EXECUTE FUNCTION episodes_append_only()""",
            """CREATE TABLE lines (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                episode_id BIGINT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
                space TEXT NOT NULL,
                seq INTEGER NOT NULL,
                text TEXT NOT NULL,
                context TEXT NOT NULL DEFAULT '',
                vector halfvec,
                tsv tsvector NOT NULL DEFAULT ''::tsvector,
                doc_len INTEGER NOT NULL DEFAULT 0,
                UNIQUE (episode_id, seq)
            )""",
            "CREATE INDEX lines_space ON lines(space, id)",
            *_tsv("lines", {"text": "A", "context": "B"}),
            """CREATE TABLE memories (
                seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id TEXT NOT NULL UNIQUE,
                space TEXT NOT NULL REFERENCES spaces(name),
                category TEXT NOT NULL,
                content TEXT NOT NULL,
                summary TEXT,
                confidence DOUBLE PRECISION NOT NULL,
                importance DOUBLE PRECISION NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                source TEXT NOT NULL,
                entity TEXT,
                attribute TEXT,
                value TEXT,
                condition TEXT,
                prohibited BOOLEAN NOT NULL DEFAULT false,
                event_date TEXT,
                session_id TEXT,
                turn_id TEXT,
                cited_lines TEXT NOT NULL DEFAULT '[]',
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                last_accessed_at TEXT,
                access_count INTEGER NOT NULL DEFAULT 0,
                staleness DOUBLE PRECISION NOT NULL DEFAULT 0,
                archived_at TEXT,
                active BOOLEAN NOT NULL DEFAULT true,
                superseded_by TEXT,
                vector halfvec,
                event_end TEXT,
                tsv tsvector NOT NULL DEFAULT ''::tsvector,
                doc_len INTEGER NOT NULL DEFAULT 0
            )""",
            "CREATE INDEX memories_space ON memories(space, active)",
            *_tsv("memories", {"content": "A", "tags": "B", "summary": "C"}),
            """CREATE TABLE fts_stats (
                name TEXT PRIMARY KEY, docs BIGINT NOT NULL, tokens BIGINT NOT NULL
            )""",
            "INSERT INTO fts_stats VALUES ('lines', 0, 0), ('memories', 0, 0)",
            *_stats("lines"),
            *_stats("memories"),
            """CREATE TABLE memory_citations (
                memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                line_id BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
                PRIMARY KEY (line_id, memory_id)
            )""",
            "CREATE INDEX memory_citations_memory ON memory_citations(memory_id)",
            """CREATE TABLE jobs (
                seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
                id TEXT PRIMARY KEY,
                space TEXT NOT NULL,
                kind TEXT NOT NULL,
                session_id TEXT,
                turn_id TEXT,
                source_digest TEXT NOT NULL,
                payload TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending',
                attempts INTEGER NOT NULL DEFAULT 0,
                max_attempts INTEGER NOT NULL DEFAULT 3,
                lease_owner TEXT,
                lease_expires_at TEXT,
                fence INTEGER NOT NULL DEFAULT 0,
                not_before TEXT,
                error TEXT,
                result TEXT,
                provenance TEXT NOT NULL DEFAULT '{}',
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE UNIQUE INDEX jobs_idempotency ON jobs(
                space, kind, coalesce(session_id, ''), coalesce(turn_id, ''), source_digest
            )""",
            "CREATE INDEX jobs_ready ON jobs(status, not_before)",
            """CREATE TABLE consolidation_audit (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                space TEXT NOT NULL,
                job_id TEXT,
                item TEXT NOT NULL,
                reason TEXT NOT NULL,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX consolidation_audit_space ON consolidation_audit(space, id)",
            """CREATE TABLE consolidation_progress (
                space TEXT PRIMARY KEY,
                last_episode_id BIGINT NOT NULL DEFAULT 0,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                hash TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL DEFAULT '',
                spaces TEXT NOT NULL DEFAULT '[]',
                admin BOOLEAN NOT NULL DEFAULT false,
                created_at TEXT NOT NULL,
                revoked_at TEXT
            )""",
            """CREATE TABLE automation_notes (
                automation_id TEXT PRIMARY KEY,
                note TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
            """CREATE TABLE entities (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                space TEXT NOT NULL,
                name TEXT NOT NULL,
                fan INTEGER NOT NULL DEFAULT 0,
                UNIQUE (space, name)
            )""",
            """CREATE TABLE entity_lines (
                entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
                line_id BIGINT NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
                episode_id BIGINT NOT NULL,
                PRIMARY KEY (entity_id, episode_id, line_id)
            )""",
            "CREATE INDEX entity_lines_line ON entity_lines(line_id)",
            "CREATE INDEX entity_lines_episode ON entity_lines(episode_id, entity_id)",
            """CREATE TABLE entity_memories (
                entity_id BIGINT NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
                memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                PRIMARY KEY (entity_id, memory_id)
            )""",
            "CREATE INDEX entity_memories_memory ON entity_memories(memory_id)",
            # fan = links of an entity; an entity nothing names any more is gone
            """CREATE FUNCTION entity_unlinked() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                UPDATE entities SET fan = fan - 1 WHERE id = OLD.entity_id;
                DELETE FROM entities WHERE id = OLD.entity_id AND fan <= 0;
                RETURN NULL; END $$""",
            *(
                f"""CREATE TRIGGER {table}_ad AFTER DELETE ON {table}
                    FOR EACH ROW EXECUTE FUNCTION entity_unlinked()"""
                for table in ("entity_lines", "entity_memories")
            ),
        ],
    ),
    (
        2,
        "the spec that rebuilds a space's embedder (SQLite schema 8)",
        ["ALTER TABLE spaces ADD COLUMN embedder_spec TEXT"],
    ),
    (
        3,
        "pinned memories, and the opt-in log of injected blocks (SQLite schema 9)",
        [
            "ALTER TABLE memories ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT FALSE",
            """CREATE TABLE injected_blocks (
                id BIGSERIAL PRIMARY KEY,
                space TEXT NOT NULL,
                created_at TEXT NOT NULL,
                surface TEXT NOT NULL,
                item_ids TEXT NOT NULL,
                tokens INTEGER NOT NULL,
                query_hash TEXT NOT NULL,
                query TEXT,
                block TEXT
            )""",
            "CREATE INDEX injected_blocks_space ON injected_blocks(space, id)",
        ],
    ),
    (
        4,
        "keys list in the order they were made, as SQLite's rowid gives (store.rows TIE_ORDER)",
        ["ALTER TABLE api_keys ADD COLUMN seq BIGINT GENERATED ALWAYS AS IDENTITY"],
    ),
    (
        5,
        "a filtered search's episodes by role and time (SQLite schema 10)",
        ["CREATE INDEX episodes_filter ON episodes(space, role, occurred_at) INCLUDE (session_id)"],
    ),
    (
        6,
        "BM25's document frequencies kept per lexeme (fts_terms), not counted at each query",
        [
            """CREATE TABLE fts_terms (
                name TEXT NOT NULL, lexeme TEXT NOT NULL, docs BIGINT NOT NULL,
                PRIMARY KEY (name, lexeme)
            )""",
            *_terms("lines"),
            *_terms("memories"),
            *(
                f"INSERT INTO fts_terms SELECT '{table}', u.lexeme, count(*) FROM {table} t, "
                "unnest(t.tsv) u GROUP BY u.lexeme"
                for table in ("lines", "memories")
            ),
        ],
    ),
    (
        7,
        "writes without HNSW upkeep (searches are exact, in the line cache), GIN fast update",
        [
            # every line went into HNSW as it was written, 11 of a bulk load's 18 s; searches
            # score the line cache (vectors.LineCache) and memories are always scanned
            # exactly, so the index served only a space too big for the cache: an operator
            # who has one makes it with hnsw_index() (docs/storage.md)
            """DO $$ DECLARE found record; BEGIN
                FOR found IN SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
                    AND indexname ~ '^(lines|memories)_hnsw_[0-9]+$'
                LOOP EXECUTE format('DROP INDEX %I', found.indexname); END LOOP; END $$""",
            # a row's lexemes go to GIN's pending list and are merged in bulk when it passes
            # PENDING_KB (the smallest PostgreSQL allows), by the write that fills it: a
            # search scans at most that much unmerged; each row merged alone was 1.8 of a
            # bulk load's 2.6 s in COPY lines (migration 1 turned fast update off)
            *(
                f"ALTER INDEX {table}_tsv SET (fastupdate = on, "
                f"gin_pending_list_limit = {PENDING_KB})"
                for table in ("lines", "memories")
            ),
            *_unlinks(),
        ],
    ),
    (
        8,
        "a forgotten turn's words out of the next turn's context and its memories' summaries",
        [*_rewritten("lines", "context"), *_rewritten("memories", "summary")],
    ),
]

LATEST = MIGRATIONS[-1][0]

TABLES = (
    "schema_version", "spaces", "episodes", "lines", "memories", "fts_stats", "fts_terms",
    "memory_citations",
    "jobs", "consolidation_audit", "consolidation_progress", "api_keys", "automation_notes",
    "entities", "entity_lines", "entity_memories", "injected_blocks",
)  # fmt: skip
"""Every table the migrations make (what ``size_bytes`` counts)."""


def hnsw_index(table: str, dim: int) -> str:
    """The HNSW index of ``table``'s vectors of one dimension, which orcamem no longer makes
    (migration 7): an operator whose spaces outgrow the line cache runs it (``CONCURRENTLY``
    added) to speed their uncached searches (a ``halfvec`` column without a fixed size cannot
    be indexed whole; each dimension gets its partial index)."""
    dim = int(dim)
    return (
        f"CREATE INDEX IF NOT EXISTS {table}_hnsw_{dim} ON {table} USING hnsw "
        f"((vector::halfvec({dim})) halfvec_ip_ops) WHERE vector_dims(vector) = {dim}"
    )
