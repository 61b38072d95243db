"""Append-only, numbered schema migrations. Never edit a shipped one; add the next number."""

from __future__ import annotations


def _unfan(table: str) -> str:
    """The trigger that takes a deleted link of ``table`` off its entity's fan, and drops an
    entity no link names any more (migrations 6 and 11)."""
    return f"""CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN
        UPDATE entities SET fan = fan - 1 WHERE id = old.entity_id;
        DELETE FROM entities WHERE id = old.entity_id AND fan <= 0;
    END"""


def _unlinked_graph() -> list[str]:
    """Migration 11: the link tables again, without foreign keys and ``WITHOUT ROWID``.

    A foreign key looked up both parents of every link as it was written, and a rowid table
    kept a fourth B-tree beside the key and the two indexes: with neither, a 100,000-turn
    import took 9.2 s instead of 10.4 (its links 2.7 s of CPU instead of 3.6). Links are
    only written by this store, from rows of the same transaction; triggers take them away
    with their line, memory or entity as the cascades did, and ``orcamem check`` finds a
    link whose line, memory or entity is gone (``check._LINKS``)."""
    tables = {  # table: its columns and key, and its indexes
        "entity_lines": (
            "entity_id INTEGER NOT NULL, line_id INTEGER NOT NULL, episode_id INTEGER NOT NULL, "
            "PRIMARY KEY (entity_id, episode_id, line_id)",
            {"entity_lines_line": "line_id", "entity_lines_episode": "episode_id, entity_id"},
        ),
        "entity_memories": (
            "entity_id INTEGER NOT NULL, memory_id TEXT NOT NULL, "
            "PRIMARY KEY (entity_id, memory_id)",
            {"entity_memories_memory": "memory_id"},
        ),
    }
    statements = []
    for table, (columns, indexes) in tables.items():
        statements += [
            f"CREATE TABLE {table}_new ({columns}) WITHOUT ROWID",
            f"INSERT INTO {table}_new SELECT * FROM {table}",
            f"DROP TABLE {table}",  # its indexes and trigger with it; no trigger fires
            f"ALTER TABLE {table}_new RENAME TO {table}",
            *(f"CREATE INDEX {name} ON {table}({on})" for name, on in indexes.items()),
            _unfan(table),
        ]
    return [
        *statements,
        """CREATE TRIGGER lines_unlink AFTER DELETE ON lines BEGIN
            DELETE FROM entity_lines WHERE line_id = old.id;
        END""",
        """CREATE TRIGGER memories_unlink AFTER DELETE ON memories BEGIN
            DELETE FROM entity_memories WHERE memory_id = old.id;
        END""",
        """CREATE TRIGGER entities_unlink AFTER DELETE ON entities BEGIN
            DELETE FROM entity_lines WHERE entity_id = old.id;
            DELETE FROM entity_memories WHERE entity_id = old.id;
        END""",
    ]


MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "episodes, lines, memories, spaces, FTS5",
        [
            """CREATE TABLE spaces (
                name TEXT PRIMARY KEY,
                created_at TEXT NOT NULL,
                embedder_id TEXT,
                dim INTEGER,
                vector_epoch INTEGER NOT NULL DEFAULT 0
            )""",
            """CREATE TABLE episodes (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
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
            """CREATE TRIGGER episodes_append_only BEFORE UPDATE ON episodes
               BEGIN SELECT RAISE(ABORT, 'episodes are append-only'); END""",
            """CREATE TABLE lines (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                episode_id INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
                space TEXT NOT NULL,
                seq INTEGER NOT NULL,
                text TEXT NOT NULL,
                context TEXT NOT NULL DEFAULT '',
                vector BLOB,
                UNIQUE (episode_id, seq)
            )""",
            "CREATE INDEX lines_space ON lines(space, id)",
            """CREATE VIRTUAL TABLE lines_fts USING fts5(
                text, context, content='lines', content_rowid='id',
                tokenize='porter unicode61 remove_diacritics 2'
            )""",
            """CREATE TRIGGER lines_ai AFTER INSERT ON lines BEGIN
                INSERT INTO lines_fts(rowid, text, context) VALUES (new.id, new.text, new.context);
            END""",
            """CREATE TRIGGER lines_ad AFTER DELETE ON lines BEGIN
                INSERT INTO lines_fts(lines_fts, rowid, text, context)
                VALUES ('delete', old.id, old.text, old.context);
            END""",
            """CREATE TABLE memories (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                id TEXT NOT NULL UNIQUE,
                space TEXT NOT NULL REFERENCES spaces(name),
                category TEXT NOT NULL,
                content TEXT NOT NULL,
                summary TEXT,
                confidence REAL NOT NULL,
                importance REAL NOT NULL,
                tags TEXT NOT NULL DEFAULT '[]',
                source TEXT NOT NULL,
                entity TEXT,
                attribute TEXT,
                value TEXT,
                condition TEXT,
                prohibited INTEGER NOT NULL DEFAULT 0,
                event_date TEXT,
                session_id TEXT,
                turn_id TEXT,
                cited_lines TEXT NOT NULL DEFAULT '[]',
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                last_accessed_at TEXT,
                access_count INTEGER NOT NULL DEFAULT 0,
                staleness REAL NOT NULL DEFAULT 0,
                archived_at TEXT,
                active INTEGER NOT NULL DEFAULT 1,
                superseded_by TEXT,
                vector BLOB
            )""",
            "CREATE INDEX memories_space ON memories(space, active)",
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                content, tags, content='memories', content_rowid='seq',
                tokenize='porter unicode61 remove_diacritics 2'
            )""",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts(rowid, content, tags)
                VALUES (new.seq, new.content, new.tags);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, content, tags)
                VALUES ('delete', old.seq, old.content, old.tags);
            END""",
        ],
    ),
    (
        2,
        "durable jobs, consolidation audit and progress",
        [
            """CREATE TABLE jobs (
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
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                space TEXT NOT NULL,
                job_id TEXT,
                item TEXT NOT NULL,
                reason TEXT NOT NULL,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX consolidation_audit_space ON consolidation_audit(space, id)",
            """CREATE TABLE consolidation_progress (
                space TEXT PRIMARY KEY,
                last_episode_id INTEGER NOT NULL DEFAULT 0,
                updated_at TEXT NOT NULL
            )""",
        ],
    ),
    (
        3,
        "memory citations; memories searchable by their source words",
        [
            """CREATE TABLE memory_citations (
                memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                line_id INTEGER NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
                PRIMARY KEY (line_id, memory_id)
            )""",
            """INSERT OR IGNORE INTO memory_citations (memory_id, line_id)
               SELECT m.id, j.value FROM memories m, json_each(m.cited_lines) j
               WHERE j.value IN (SELECT id FROM lines)""",
            # memories are also found by the words of what they were distilled from (summary)
            "DROP TRIGGER memories_ai",
            "DROP TRIGGER memories_ad",
            "DROP TABLE memories_fts",
            """CREATE VIRTUAL TABLE memories_fts USING fts5(
                content, tags, summary, content='memories', content_rowid='seq',
                tokenize='porter unicode61 remove_diacritics 2'
            )""",
            "INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')",
            """CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                INSERT INTO memories_fts(rowid, content, tags, summary)
                VALUES (new.seq, new.content, new.tags, new.summary);
            END""",
            """CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, content, tags, summary)
                VALUES ('delete', old.seq, old.content, old.tags, old.summary);
            END""",
        ],
    ),
    (
        4,
        "API keys (hashed, scoped to spaces) and automation notes",
        [
            """CREATE TABLE api_keys (
                id TEXT PRIMARY KEY,
                hash TEXT NOT NULL UNIQUE,
                name TEXT NOT NULL DEFAULT '',
                spaces TEXT NOT NULL DEFAULT '[]',
                admin INTEGER NOT NULL DEFAULT 0,
                created_at TEXT NOT NULL,
                revoked_at TEXT
            )""",
            """CREATE TABLE automation_notes (
                automation_id TEXT PRIMARY KEY,
                note TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
        ],
    ),
    (
        5,
        "episodes by turn id (the proxy's exchanges: a turn and its reply, found once)",
        ["CREATE INDEX episodes_space_turn ON episodes(space, turn_id) WHERE turn_id IS NOT NULL"],
    ),
    (
        6,
        "entity graph: entities of a space and their links to lines and memories, both ways",
        [
            """CREATE TABLE entities (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                space TEXT NOT NULL,
                name TEXT NOT NULL,
                fan INTEGER NOT NULL DEFAULT 0,
                UNIQUE (space, name)
            )""",
            """CREATE TABLE entity_lines (
                entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
                line_id INTEGER NOT NULL REFERENCES lines(id) ON DELETE CASCADE,
                episode_id INTEGER NOT NULL,
                PRIMARY KEY (entity_id, episode_id, line_id)
            )""",  # the key holds all three: an entity's mentions are read from it alone
            "CREATE INDEX entity_lines_line ON entity_lines(line_id)",
            "CREATE INDEX entity_lines_episode ON entity_lines(episode_id, entity_id)",
            """CREATE TABLE entity_memories (
                entity_id INTEGER NOT NULL REFERENCES entities(id) ON DELETE CASCADE,
                memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
                PRIMARY KEY (entity_id, memory_id)
            )""",
            "CREATE INDEX entity_memories_memory ON entity_memories(memory_id)",
            # fan = links of an entity (added by the writer, engine.store.graph, in bulk); an
            # entity nothing names any more is gone (forgetting the last line that named
            # "Dr. Rao" forgets the name too)
            *(_unfan(table) for table in ("entity_lines", "entity_memories")),
        ],
    ),
    (
        7,
        "an event's last day (a range said as 'last week' or 'in March')",
        ["ALTER TABLE memories ADD COLUMN event_end TEXT"],
    ),
    (
        8,
        "the spec that rebuilds a space's embedder (a space opens with its own embedder)",
        ["ALTER TABLE spaces ADD COLUMN embedder_spec TEXT"],
    ),
    (
        9,
        "pinned memories, and the opt-in log of injected blocks",
        [
            "ALTER TABLE memories ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",
            """CREATE TABLE injected_blocks (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
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
        10,
        "a filtered search's episodes, read from one covering index (role, time, session, meta)",
        # covering: a role or time filter seeks or scans it without the rows' text (a scan of
        # the episodes themselves took ~60 ms at 10k turns; this one under 1 ms)
        ["CREATE INDEX episodes_filter ON episodes(space, role, occurred_at, session_id, meta)"],
    ),
    (
        11,
        "entity links without foreign keys (delete triggers instead), their key as their table",
        _unlinked_graph(),
    ),
    (
        12,
        "a forgotten turn's words out of the next turn's context and its memories' summaries",
        [
            """CREATE TRIGGER lines_au AFTER UPDATE OF context ON lines BEGIN
                INSERT INTO lines_fts(lines_fts, rowid, text, context)
                VALUES ('delete', old.id, old.text, old.context);
                INSERT INTO lines_fts(rowid, text, context) VALUES (new.id, new.text, new.context);
            END""",
            """CREATE TRIGGER memories_au AFTER UPDATE OF summary ON memories BEGIN
                INSERT INTO memories_fts(memories_fts, rowid, content, tags, summary)
                VALUES ('delete', old.seq, old.content, old.tags, old.summary);
                INSERT INTO memories_fts(rowid, content, tags, summary)
                VALUES (new.seq, new.content, new.tags, new.summary);
            END""",
        ],
    ),
]

LATEST = MIGRATIONS[-1][0]

FTS_TABLES: dict[str, str] = {"lines_fts": "lines", "memories_fts": "memories"}
"""Every FTS5 index the migrations create, and the table whose rows it indexes (its content)."""
