"""``Config`` is keyword-only and made of frozen sections; every value is checked with a message
that shows it and what is allowed; presets scored by another system are refused (issue 10)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

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
