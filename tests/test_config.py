"""``Config`` is keyword-only and made of frozen sections; every value is checked with a message
that shows it and what is allowed; presets scored by another system are refused (issue 10)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import mcp  # noqa: F401 - before any CliRunner swaps sys.stderr: mcp binds it as a default
import pytest
from typer.testing import CliRunner

from orcamem import Config, InvalidInputError, Memory
from orcamem.engine import PackConfig, RecallConfig, SignalsConfig, SleepConfig, StorageConfig
from orcamem.interfaces.cli.main import app
from orcamem.recall.presets import ENGINE_PRESETS, PRESETS, engine_preset

SECTIONS = {
    "recall": RecallConfig,
    "signals": SignalsConfig,
    "pack": PackConfig,
    "sleep": SleepConfig,
    "storage": StorageConfig,
}
SRC = Path(__file__).resolve().parents[1] / "src" / "orcamem"


def test_config_is_keyword_only_and_made_of_the_five_sections() -> None:
    assert [f.name for f in dataclasses.fields(Config)] == list(SECTIONS)
    config = Config()
    for name, section in SECTIONS.items():
        assert type(getattr(config, name)) is section
    with pytest.raises(TypeError):
        Config(RecallConfig())  # type: ignore[misc]
    with pytest.raises(TypeError):
        RecallConfig(5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        Config(top_k=5)  # type: ignore[call-arg]  # the flat fields are gone: one way


def test_sections_are_frozen_and_their_repr_shows_what_changed() -> None:
    config = Config(recall=RecallConfig(top_k=5), sleep=SleepConfig(timezone="Asia/Kolkata"))
    assert repr(config) == (
        "Config(recall=RecallConfig(top_k=5), sleep=SleepConfig(timezone='Asia/Kolkata'))"
    )
    assert repr(Config()) == "Config()" and repr(PackConfig()) == "PackConfig()"
    assert eval(repr(config)) == config  # the repr is how you would build it
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.recall.top_k = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.recall = RecallConfig()  # type: ignore[misc]


def test_with_copies_a_section_or_swaps_sections_and_refuses_unknown_names() -> None:
    config = Config()
    changed = config.with_(recall=config.recall.with_(top_k=5))
    assert changed.recall.top_k == 5 and config.recall.top_k == 10
    assert changed.signals is config.signals
    with pytest.raises(InvalidInputError, match="RecallConfig has no field topk: use one of"):
        config.recall.with_(topk=5)
    with pytest.raises(InvalidInputError, match="Config has no section recal: use one of recall"):
        config.with_(recal=RecallConfig())  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"recall.top_k=0: use an integer from 1 to 1000"):
        config.recall.with_(top_k=0)


def test_a_section_must_be_its_class_not_a_dict() -> None:
    with pytest.raises(InvalidInputError) as caught:
        Config(recall={"top_k": 5})  # type: ignore[arg-type]
    assert "pass a RecallConfig" in str(caught.value)
    assert "from orcamem.engine import RecallConfig" in str(caught.value)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: RecallConfig(top_k=0), "recall.top_k=0: use an integer from 1 to 1000"),
        (lambda: RecallConfig(top_k=2.5), "recall.top_k=2.5: use an integer from 1 to 1000"),
        (lambda: RecallConfig(fusion="zscore"), "recall.fusion='zscore': use 'minmax' or 'rrf'"),
        (
            lambda: RecallConfig(novelty_threshold=0.0),
            "recall.novelty_threshold=0.0: use a number from 0 (excluded) to 1",
        ),
        (
            lambda: RecallConfig(noise_floor_percentile=101),
            "recall.noise_floor_percentile=101: use a number from 0 to 100",
        ),
        (
            lambda: SignalsConfig(neighbour_weights_after=(1.5,)),
            "signals.neighbour_weights_after=(1.5,): use up to 10 shares from 0 to 1",
        ),
        (
            lambda: SignalsConfig(recency_half_life_days=0),
            "signals.recency_half_life_days=0: use a finite number above 0",
        ),
        (
            lambda: SignalsConfig(speaker_weight=float("nan")),
            "signals.speaker_weight=nan: use a finite number of at least 0",
        ),
        (lambda: SignalsConfig(enable_hawkes=1), "signals.enable_hawkes=1: use True or False"),
        (
            lambda: PackConfig(context_budget_tokens=10),
            "pack.context_budget_tokens=10: use an integer from 32 to 1000000",
        ),
        (
            lambda: SleepConfig(timezone="Mars/Olympus"),
            "sleep.timezone='Mars/Olympus': use an IANA zone name such as 'UTC'",
        ),
        (lambda: SleepConfig(idle_seconds=0), "sleep.idle_seconds=0: use a finite number above 0"),
        (
            lambda: StorageConfig(synchronous="SOMETIMES"),
            "storage.synchronous='SOMETIMES': use 'OFF', 'NORMAL', 'FULL' or 'EXTRA'",
        ),
    ],
)
def test_each_message_shows_the_value_given_and_what_is_allowed(build, message: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        build()
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("section", "field"),
    [(name, f.name) for name, cls in SECTIONS.items() for f in dataclasses.fields(cls)],
)
def test_every_field_is_checked(section: str, field: str) -> None:
    """A value of the wrong type is refused by every field, naming it, never stored."""
    default = next(f.default for f in dataclasses.fields(SECTIONS[section]) if f.name == field)
    wrong: object = 12345 if isinstance(default, str) else "twelve"
    with pytest.raises(InvalidInputError) as caught:
        SECTIONS[section](**{field: wrong})
    assert str(caught.value).startswith(f"{section}.{field}={wrong!r}: use ")


@pytest.mark.parametrize(
    ("section", "field"),
    [(name, f.name) for name, cls in SECTIONS.items() for f in dataclasses.fields(cls)],
)
def test_every_field_is_read_by_the_engine(section: str, field: str) -> None:
    """No dead switch: each field is read somewhere in src as ``config.<section>.<field>``."""
    pattern = re.compile(rf"config\.{section}\.{field}\b")
    assert any(pattern.search(p.read_text(encoding="utf-8")) for p in SRC.rglob("*.py"))


def test_values_are_normalised_to_what_the_engine_reads() -> None:
    assert SignalsConfig(neighbour_weights_before=[0.5, 0.2]).neighbour_weights_before == (0.5, 0.2)
    assert StorageConfig(synchronous="normal").synchronous == "NORMAL"


def test_only_presets_the_engine_runs_are_selectable() -> None:
    assert ENGINE_PRESETS == ("hybrid", "lexical", "vector")
    assert {name for name, p in PRESETS.items() if p.elsewhere} == {"markdown", "bank"}
    for name in ENGINE_PRESETS:
        assert engine_preset(name) is PRESETS[name]


@pytest.mark.parametrize(
    ("preset", "message"),
    [
        ("bank", "the bank preset is the Memory Bank's composite score: use orcamem.MemoryBank"),
        ("markdown", "the markdown preset is the Markdown provider's lexical score: use "),
        ("bm25", "recall.preset='bm25': use one of 'hybrid', 'lexical', 'vector'"),
    ],
)
def test_memory_refuses_a_preset_it_does_not_run(tmp_path: Path, preset: str, message: str) -> None:
    db = tmp_path / "refused.db"
    with pytest.raises(InvalidInputError) as caught:
        Memory(db, config=Config(recall=RecallConfig(preset=preset)))
    assert message in str(caught.value)
    assert not db.exists()  # refused before the file is opened


def test_a_preset_swapped_in_later_is_refused_at_search(mem: Memory) -> None:
    mem.add("The bank preset ranks nothing here.")
    mem.config = Config(recall=RecallConfig(preset="bank"))
    with pytest.raises(InvalidInputError, match=r"use orcamem\.MemoryBank"):
        mem.search("bank preset")


def test_the_bench_cli_refuses_a_foreign_preset(tmp_path: Path) -> None:
    data = tmp_path / "locomo.json"
    data.write_text("[]")
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(data), "--preset", "bank"])
    assert result.exit_code == 2
    assert "use orcamem.MemoryBank" in result.output


# -- one settings model for every command and server (issue 16 item 6) ---------------------------


def _home() -> Path:
    home = Path(os.environ["ORCA_HOME"])  # the test's own home (conftest)
    home.mkdir(parents=True, exist_ok=True)
    return home


def _show(*args: str, env: dict[str, str] | None = None) -> dict:
    result = CliRunner().invoke(app, ["config", "show", "--json", *args], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_each_setting_comes_from_default_file_env_or_flag_and_says_which(tmp_path: Path) -> None:
    config = _home() / "config.toml"
    config.write_text(
        'auto_memory = false\n[orcamem]\ntimezone = "Asia/Kolkata"\ncontext_budget = 200\n'
        f'db = "{tmp_path / "file.db"}"\n',
        encoding="utf-8",
    )
    shown = _show(
        "--model",
        "llama3.2:3b",
        env={
            "ORCAMEM_CONTEXT_BUDGET": "120",
            "ORCAMEM_AUTO_SLEEP": "no",
            "ORCAMEM_LOG_BLOCKS": "1",
        },
    )
    assert {name: (row["value"], row["origin"]) for name, row in shown.items()} == {
        "db": (str(tmp_path / "file.db"), "file"),
        "embedder": ("static", "default"),
        "timezone": ("Asia/Kolkata", "file"),
        "context_budget": (120, "env"),  # the environment beats the file
        "auto_sleep": (False, "env"),
        "log_blocks": (True, "env"),
        "log_block_content": (False, "default"),
        "upstream": (None, "default"),
        "model": ("llama3.2:3b", "flag"),
        "require_keys": (False, "default"),
        "proxy_max_body_mb": (32.0, "default"),
        "upstream_timeout": (600.0, "default"),
        "openai_api_key": (None, "default"),
        "anthropic_api_key": (None, "default"),
    }
    assert shown["timezone"]["where"] == f"{config} [orcamem]"
    assert shown["context_budget"]["where"] == "ORCAMEM_CONTEXT_BUDGET"
    flagged = _show("--context-budget", "64", env={"ORCAMEM_CONTEXT_BUDGET": "120"})
    assert (flagged["context_budget"]["value"], flagged["context_budget"]["origin"]) == (64, "flag")
    # ORCAMEM_CONFIG names another file; the default db is the home's
    other = tmp_path / "other.toml"
    other.write_text('[orcamem]\nembedder = "st:all-MiniLM-L6-v2"\n', encoding="utf-8")
    moved = _show(env={"ORCAMEM_CONFIG": str(other)})
    assert moved["embedder"] == {
        "value": "st:all-MiniLM-L6-v2",
        "origin": "file",
        "where": f"{other} [orcamem]",
        "env": "ORCAMEM_EMBEDDER",
    }
    assert moved["db"]["value"] == str(_home() / "memory.db")


@pytest.mark.parametrize(
    "text", ["auto_memory = false\n", "auto_memory = false\n[orcamem]\n"], ids=["no-table", "empty"]
)
def test_a_config_file_without_settings_leaves_the_defaults(text: str) -> None:
    (_home() / "config.toml").write_text(text, encoding="utf-8")  # local memory's keys only
    assert {row["origin"] for row in _show().values()} == {"default"}


def test_a_settings_table_that_is_not_a_table_is_refused() -> None:
    config = _home() / "config.toml"
    config.write_text('orcamem = "db.sqlite"\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["config", "show"])
    assert result.exit_code == 2
    assert f"{config}: [orcamem] must be a table of settings" in " ".join(result.stderr.split())


def test_config_show_prints_one_line_per_setting_and_never_a_key() -> None:
    result = CliRunner().invoke(
        app, ["config", "show", "--no-auto-sleep"], env={"OPENAI_API_KEY": "sk-very-secret"}
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 14
    assert "auto_sleep = False  (flag --no-auto-sleep)" in lines
    assert "openai_api_key = ********  (env OPENAI_API_KEY)" in lines
    assert "sk-very-secret" not in result.output
    assert "sk-very-secret" not in json.dumps(_show(env={"OPENAI_API_KEY": "sk-very-secret"}))
    flag = CliRunner().invoke(app, ["recall", "anything", "--budget", "5"])
    assert flag.exit_code == 2
    assert "context_budget=5 (from --context-budget): use an integer from 32" in flag.stderr


def test_config_show_hides_the_password_of_a_url() -> None:
    env = {
        "ORCAMEM_DB": "postgresql://orca:S3cretPassw0rd@db.internal:5432/orca",
        "ORCAMEM_UPSTREAM": "https://bob:sk-live-abcdef123456@llm.example.com/v1",
    }
    result = CliRunner().invoke(app, ["config", "show"], env=env)
    assert result.exit_code == 0, result.output
    assert "db = postgresql://orca:…@db.internal:5432/orca  (env ORCAMEM_DB)" in result.stdout
    assert "upstream = https://bob:…@llm.example.com/v1  (env ORCAMEM_UPSTREAM)" in result.stdout
    shown = result.output + json.dumps(_show(env=env))
    assert "S3cretPassw0rd" not in shown and "sk-live-abcdef123456" not in shown
    bad = CliRunner().invoke(
        app, ["config", "show"], env={"ORCAMEM_UPSTREAM": "ftp://bob:hunter2hunter2@x/v1"}
    )
    assert bad.exit_code == 2 and "ftp://bob:…@x/v1" in bad.stderr
    assert "hunter2hunter2" not in bad.output


def test_a_settings_file_named_by_the_environment_must_exist(tmp_path: Path) -> None:
    (tmp_path / "orcamem.toml").write_text("[orcamem]\nrequire_keys = true\n", encoding="utf-8")
    for named, said in ((tmp_path / "orcamem.tml", "does not exist"), (tmp_path, "is a directory")):
        result = CliRunner().invoke(app, ["config", "show"], env={"ORCAMEM_CONFIG": str(named)})
        assert result.exit_code == 2
        assert f"ORCAMEM_CONFIG={named} {said}: point it at your settings file" in " ".join(
            result.stderr.split()
        )
    shown = _show(env={"ORCAMEM_CONFIG": str(tmp_path / "orcamem.toml")})
    assert shown["require_keys"]["value"] is True


@pytest.mark.parametrize(
    ("file", "env", "message"),
    [
        (
            None,
            {"ORCAMEM_CONTEXT_BUDGET": "ten"},
            "context_budget='ten' (from ORCAMEM_CONTEXT_BUDGET): ",
        ),
        (
            None,
            {"ORCAMEM_CONTEXT_BUDGET": "10"},
            "context_budget='10' (from ORCAMEM_CONTEXT_BUDGET): use an integer from 32 to 1000000",
        ),
        (
            '[orcamem]\ntimezone = "Mars/Olympus"\n',
            None,
            "timezone='Mars/Olympus' (from {config} [orcamem]): use an IANA zone name",
        ),
        (
            None,
            {"ORCAMEM_UPSTREAM": "ftp://models"},
            "upstream='ftp://models' (from ORCAMEM_UPSTREAM): upstream 'ftp://models' must be an "
            "http(s) URL",
        ),
        (
            None,
            {"ORCAMEM_EMBEDDER": "word2vec"},
            "embedder='word2vec' (from ORCAMEM_EMBEDDER): unknown embedder spec 'word2vec': use",
        ),
        (
            None,
            {"ORCAMEM_AUTO_SLEEP": "sometimes"},
            "auto_sleep='sometimes' (from ORCAMEM_AUTO_SLEEP): ",
        ),
        (
            "[orcamem]\ncontext_budgt = 200\n",
            None,
            "context_budgt (from {config} [orcamem]) is not a setting: use one of db, embedder,",
        ),
        (
            '[orcamem]\nopenai_api_key = "sk-in-a-file"\n',
            None,
            "openai_api_key in {config}: keep API keys out of files; set OPENAI_API_KEY",
        ),
        ("[orcamem\n", None, "cannot read the settings in {config} ("),
    ],
    ids=[
        "not-a-number",
        "out-of-range",
        "zone",
        "upstream",
        "embedder",
        "bool",
        "typo",
        "key",
        "toml",
    ],
)
def test_a_bad_setting_is_refused_with_where_it_came_from_and_the_rule(
    tmp_path: Path, file: str | None, env: dict[str, str] | None, message: str
) -> None:
    config = _home() / "config.toml"
    if file is not None:
        config.write_text(file, encoding="utf-8")
    db = tmp_path / "never.db"
    for command in (["config", "show"], ["add", "hello there", "--db", str(db)], ["serve"]):
        result = CliRunner().invoke(app, command, env=env)
        assert result.exit_code == 2, (command, result.output)
        said = " ".join(result.stderr.split())
        assert said.startswith("error: ") and message.format(config=config) in said, said
        assert "sk-in-a-file" not in said
    assert not db.exists()  # refused before anything was opened


def test_commands_and_servers_run_with_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi import FastAPI

    from orcamem.interfaces.http import server as http_server
    from orcamem.interfaces.http.settings import ServerSettings

    db = tmp_path / "configured.db"
    (_home() / "config.toml").write_text(
        f'[orcamem]\ndb = "{db}"\ntimezone = "Asia/Kolkata"\ncontext_budget = 64\n'
        "require_keys = true\n",
        encoding="utf-8",
    )
    runner = CliRunner()
    added = runner.invoke(app, ["add", "I keep the spare key under the blue flower pot."])
    assert added.exit_code == 0, added.output
    assert db.is_file()  # the file's db, with no --db
    stats = runner.invoke(app, ["stats", "--json"], env={"ORCAMEM_DB": str(db)})
    assert json.loads(stats.stdout)["episodes"] == 1

    seen: dict = {}

    def inspect(served: FastAPI, settings: ServerSettings) -> None:
        memory = served.state.memory
        seen.update(
            path=memory.path,
            budget=memory.config.pack.context_budget_tokens,
            zone=memory.config.sleep.timezone,
            auto=memory.config.sleep.auto,
            keys=settings.require_keys,
            body=settings.proxy_max_body_bytes,
            wait=settings.upstream_timeout_s,
        )

    monkeypatch.setattr(http_server, "run", inspect)
    big = {"ORCAMEM_AUTO_SLEEP": "false", "ORCAMEM_PROXY_MAX_BODY_MB": "64",
           "ORCAMEM_UPSTREAM_TIMEOUT": "90"}  # fmt: skip
    served = runner.invoke(app, ["serve"], env=big)
    assert served.exit_code == 0, served.output
    assert seen == {"path": str(db), "budget": 64, "zone": "Asia/Kolkata", "auto": False,
                    "keys": True, "body": 64 * 2**20, "wait": 90.0}  # fmt: skip
    nan = runner.invoke(app, ["serve"], env={"ORCAMEM_UPSTREAM_TIMEOUT": "nan"})
    assert nan.exit_code == 2 and "use a positive number" in nan.stderr
    flagged = runner.invoke(app, ["serve", "--no-require-keys", "--auto-sleep"])
    assert flagged.exit_code == 0, flagged.output
    assert (seen["keys"], seen["auto"]) == (False, True)


# -- a space remembers its embedder (issue 16 item 6) -------------------------------------------


def _other_static(tmp_path: Path) -> str:
    """A spec of another static model: the shipped files under another folder name (so
    another embedder id), linked, not copied."""
    from orcamem._kernel.embed import DEFAULT_MODEL_DIR

    folder = tmp_path / "m2v-other"
    folder.mkdir()
    for item in DEFAULT_MODEL_DIR.iterdir():
        (folder / item.name).symlink_to(item)
    return f"static:{folder}"


def test_a_reembedded_space_opens_with_its_own_embedder_in_every_command_and_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import httpx
    from fastapi import FastAPI

    from orcamem.interfaces.http import server as http_server
    from orcamem.interfaces.http.settings import ServerSettings
    from servers import serve

    db = str(tmp_path / "m.db")
    spec = _other_static(tmp_path)
    runner = CliRunner()
    for text in ("I moved to Pune last spring.", "My sister Asha lives in Lisbon."):
        assert runner.invoke(app, ["add", text, "--db", db, "--space", "alice"]).exit_code == 0
    assert runner.invoke(app, ["add", "Bob drives a red van.", "--db", db]).exit_code == 0
    done = runner.invoke(app, ["reembed", "--db", db, "--space", "alice", "--embedder", spec])
    assert done.exit_code == 0, done.output
    assert "with static:m2v-other@" in done.stdout

    found = runner.invoke(
        app, ["search", "When did I move to Pune?", "--db", db, "-s", "alice", "--json"]
    )
    assert found.exit_code == 0, found.output
    assert json.loads(found.stdout)["hits"][0]["text"] == "I moved to Pune last spring."
    block = runner.invoke(app, ["recall", "Where does my sister live?", "--db", db, "-s", "alice"])
    assert block.exit_code == 0 and "Lisbon" in block.stdout, block.output
    stats = json.loads(runner.invoke(app, ["stats", "--db", db, "-s", "alice", "--json"]).stdout)
    assert stats["embedder"] == stats["space_embedder"] and "m2v-other@" in stats["embedder"]

    answers: dict[str, object] = {}

    def ask(served: FastAPI, settings: ServerSettings) -> None:
        with serve(served) as url:
            for space, query in (
                ("alice", "When did I move to Pune?"),
                ("default", "What does Bob drive?"),
            ):
                hits = httpx.get(f"{url}/api/search", params={"space": space, "q": query})
                assert hits.status_code == 200, hits.text
                answers[space] = hits.json()["hits"][0]["text"]
            added = httpx.post(
                f"{url}/api/episodes",
                params={"space": "alice"},
                json={"episodes": [{"text": "Asha visits in June."}]},
            )
            assert added.status_code == 201, added.text
            block = httpx.get(
                f"{url}/api/context", params={"space": "alice", "q": "When does Asha visit?"}
            )
            answers["block"] = block.json()["block"]

    monkeypatch.setattr(http_server, "run", ask)
    for command in (["serve"], ["up", "--no-browser"]):
        answers.clear()
        result = runner.invoke(app, [*command, "--db", db, "--no-auto-sleep"])
        assert result.exit_code == 0, result.output
        assert answers["alice"] == "I moved to Pune last spring."  # the space's own embedder
        assert answers["default"] == "Bob drives a red van."  # beside a space of the default
        assert "Asha visits in June." in str(answers["block"])


def test_an_embedder_set_explicitly_still_refuses_a_space_made_by_another(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    assert runner.invoke(app, ["add", "I moved to Pune.", "--db", db]).exit_code == 0
    other = _other_static(tmp_path)
    refused = runner.invoke(app, ["search", "Pune", "--db", db], env={"ORCAMEM_EMBEDDER": other})
    assert refused.exit_code == 1
    assert "orcamem reembed" in " ".join(refused.stderr.split())


def test_a_reembedded_space_consolidates_imports_and_repairs_with_its_own_embedder(
    tmp_path: Path,
) -> None:
    """Every write of the space after ``reembed`` uses its embedder: ``check`` stays clean."""
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    turns = ("I live in Pune.", "Actually I moved to Bangalore last week.", "I drink black coffee.")
    for text in turns:
        added = runner.invoke(app, ["add", text, "--db", db, "-s", "alice", "--role", "user"])
        assert added.exit_code == 0, added.output
    spec = _other_static(tmp_path)
    for args in (["reembed", "--embedder", spec], ["add", "I now drink green tea."]):
        done = runner.invoke(app, [*args, "--db", db, "-s", "alice"])
        assert done.exit_code == 0, done.output
    slept = runner.invoke(app, ["sleep", "--db", db, "-s", "alice", "--json"])
    assert slept.exit_code == 0, slept.output
    assert json.loads(slept.stdout)["stored"]  # states, with vectors by the space's embedder
    header = runner.invoke(app, ["export", "--db", db, "-s", "alice"]).stdout.splitlines()[0]
    assert '"embedder": "static:m2v-other@' in header
    bob = tmp_path / "bob.jsonl"  # a space of the default embedder, imported into alice
    assert (
        runner.invoke(app, ["add", "Bob drives a red van.", "--db", db, "-s", "bob"]).exit_code == 0
    )
    assert runner.invoke(app, ["export", "--db", db, "-s", "bob", "-o", str(bob)]).exit_code == 0
    imported = runner.invoke(app, ["import", str(bob), "--db", db, "-s", "alice"])
    assert imported.exit_code == 0 and "imported 1 episodes" in imported.stdout, imported.output
    checked = runner.invoke(app, ["check", "--db", db, "--json"])
    assert checked.exit_code == 0, checked.output  # every vector is the space's embedder's
    assert json.loads(checked.stdout)["ok"] is True
