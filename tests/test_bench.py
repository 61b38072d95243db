"""The LoCoMo benches on a tiny synthetic file in the LoCoMo format: metrics, exclusions,
errors; and ``bench context``'s judge of the injected block on hand-made cases."""

from __future__ import annotations

import itertools
import json
import runpy
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from orcamem import InvalidInputError, Memory
from orcamem._kernel.text import STOPWORDS
from orcamem.bench.context import (
    FACTS,
    Fact,
    context_bench,
    false_injection,
    judge,
    load_unrelated,
    parse_conversations,
    quotes,
    wordpiece_tokens,
)
from orcamem.bench.proxy_loop import proxy_loop
from orcamem.bench.runs import _Texts, _vocabulary, locomo
from orcamem.interfaces.cli.main import app

KS = (1, 5, 10, 20)
METRICS = {
    *(f"recall_any@{k}" for k in KS),
    *(f"recall_all@{k}" for k in KS),
    "session_recall_any@5",
    "context_tokens",
}


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


SAMPLES: list[dict[str, Any]] = [
    {
        "sample_id": "synthetic-1",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Caroline", "D1:1", "Hey Mel! I just got back from my support group."),
                _turn("Melanie", "D1:2", "Nice! I have been painting a sunrise over the lake."),
                _turn(
                    "Caroline",
                    "D1:3",
                    "I adopted a golden retriever puppy named Biscuit last week.",
                ),
                _turn("Melanie", "D1:4", "My kids love going camping in the mountains."),
            ],
            "session_2_date_time": "8:30 am on 25 May, 2023",
            "session_2": [
                _turn("Caroline", "D2:1", "I plan to study counseling and mental health."),
                _turn("Melanie", "D2:2", "I signed up for a pottery class on Saturdays."),
                _turn("Caroline", "D2:3", "Biscuit chewed my favourite running shoes yesterday."),
                _turn("Melanie", "D2:4", "We went to a jazz concert on Friday night."),
            ],
        },
        "qa": [
            {
                "question": "When did Caroline adopt her golden retriever puppy Biscuit?",
                "answer": "the week before 8 May 2023",
                "evidence": ["D1:3"],
                "category": 2,
            },
            {
                "question": "What class did Melanie sign up for?",
                "answer": "pottery",
                "evidence": ["D2:2"],
                "category": 4,
            },
            {
                "question": "What has Caroline's puppy Biscuit done?",
                "answer": "chewed her running shoes",
                "evidence": ["D1:3", "D2:3"],
                "category": 1,
            },
            {
                "question": "What did Melanie paint at the art class?",
                "adversarial_answer": "a sunrise",
                "evidence": ["D1:2"],
                "category": 5,
            },
        ],
    },
    {
        "sample_id": "synthetic-2",
        "conversation": {
            "speaker_a": "Jon",
            "speaker_b": "Gina",
            "session_1_date_time": "7:55 pm on 20 January, 2023",
            "session_1": [
                _turn("Jon", "D1:1", "I lost my banking job, so I am opening a dance studio."),
                _turn("Gina", "D1:2", "I got fired from the clothing store too."),
                _turn("Jon", "D1:3", "Dancing has been my passion since I was a kid."),
            ],
            "session_2_date_time": "2:32 pm on 29 January, 2023",
            "session_2": [
                _turn("Gina", "D2:1", "I launched an online clothing store last Tuesday."),
                _turn("Jon", "D2:2", "I am searching for a downtown location for the studio."),
                _turn("Gina", "D2:3", "My favourite dance style is contemporary."),
            ],
        },
        "qa": [
            {
                "question": "What business is Jon opening?",
                "answer": "a dance studio",
                "evidence": ["D1:1"],
                "category": 1,
            },
            {
                "question": "What did Gina launch?",
                "answer": "an online clothing store",
                "evidence": ["D2:1"],
                "category": 4,
            },
            {
                "question": "Why is Jon looking downtown?",
                "answer": "for his dance studio",
                "evidence": ["D2:2; D1:1"],  # LoCoMo sometimes packs several ids in one string
                "category": 3,
            },
            {
                "question": "What is Jon's favourite dance style?",
                "adversarial_answer": "contemporary",
                "evidence": ["D2:3"],
                "category": 5,
            },
        ],
    },
]


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo-tiny.json"
    path.write_text(json.dumps(SAMPLES), encoding="utf-8")
    return path


def _check_row(row: dict[str, Any]) -> None:
    assert set(row) >= METRICS | {"questions"}
    for k in KS:
        assert 0.0 <= row[f"recall_all@{k}"] <= row[f"recall_any@{k}"] <= 1.0
    for smaller, larger in itertools.pairwise(KS):
        assert row[f"recall_any@{smaller}"] <= row[f"recall_any@{larger}"]
        assert row[f"recall_all@{smaller}"] <= row[f"recall_all@{larger}"]
    assert 0.0 <= row["session_recall_any@5"] <= 1.0
    assert row["context_tokens"] > 0


def test_locomo_reports_overall_and_by_category(locomo_file: Path, tmp_path: Path) -> None:
    result = locomo(locomo_file, workdir=str(tmp_path))
    overall, by_category = result["overall"], result["by_category"]
    _check_row(overall)
    assert overall["questions"] == 6  # the two category-5 questions are excluded
    assert set(by_category) == {"1", "2", "3", "4"}
    assert {k: v["questions"] for k, v in by_category.items()} == {"1": 2, "2": 1, "3": 1, "4": 2}
    for row in by_category.values():
        _check_row(row)
    # The only category-2 question names the turn almost word for word.
    assert by_category["2"]["recall_any@1"] == 1.0
    assert by_category["2"]["session_recall_any@5"] == 1.0
    # "D2:2; D1:1" is two evidence turns: one can be found at rank 1, never both.
    assert by_category["3"]["recall_any@5"] == 1.0
    assert by_category["3"]["recall_all@1"] == 0.0
    # Overall is the mean over questions, not over categories.
    for key in METRICS:
        weighted = sum(r[key] * r["questions"] for r in by_category.values()) / 6
        assert overall[key] == pytest.approx(weighted, abs=1e-3)
    # Six short turns per sample: everything said is within the top 20.
    assert overall["recall_any@10"] >= 0.8
    assert result["search_p50_ms"] > 0 and result["machine"]["cores"] >= 1
    assert list(tmp_path.iterdir()) == [locomo_file]  # the bench database was cleaned up


def test_locomo_limit_samples(locomo_file: Path) -> None:
    result = locomo(locomo_file, limit_samples=1)
    assert result["overall"]["questions"] == 3
    assert set(result["by_category"]) == {"1", "2", "4"}


def test_locomo_cli_json(locomo_file: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(locomo_file), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # one JSON object, nothing else on stdout
    assert data["overall"]["questions"] == 6
    assert set(data["overall"]) >= METRICS
    assert set(data["by_category"]) == {"1", "2", "3", "4"}
    assert data["by_category"]["2"]["recall_any@1"] == 1.0


def test_locomo_cli_ablates_spreading_activation(locomo_file: Path) -> None:
    args = ["bench", "locomo", "--data", str(locomo_file), "--json", "--no-spreading"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["overall"]["questions"] == 6


def test_the_sweep_script_scores_the_defaults_as_the_bench(
    locomo_file: Path, tmp_path: Path
) -> None:
    """``scripts/locomo_sweep.py`` builds conversation i in a file holding 0…i, as the bench's
    one file: its default line is the bench's whole-set turn recall."""
    script = runpy.run_path(str(Path(__file__).parents[1] / "scripts" / "locomo_sweep.py"))
    samples = json.loads(locomo_file.read_text(encoding="utf-8"))
    files = script["build"](samples, tmp_path)
    for index, path in enumerate(files):
        with Memory(path) as mem:
            assert sorted(mem.spaces()) == [f"locomo-{i}" for i in range(index + 1)]
    rows = script["searched"](samples, files, script["config_of"]("-"))
    overall = locomo(locomo_file)["overall"]
    keys = ("recall_any@5", "recall_any@10", "recall_all@10", "session_recall_any@5")
    assert script["recall_of"](rows) == " / ".join(f"{overall[key]:.3f}" for key in keys)
    tuned = script["config_of"]("signals.activation_weight=0.3,recall.top_k=5")
    assert (tuned.signals.activation_weight, tuned.recall.top_k) == (0.3, 5)


def test_locomo_cli_table(locomo_file: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(locomo_file)])
    assert result.exit_code == 0, result.output
    assert "overall" in result.stdout and "any@10" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read LoCoMo data"),
        ("this is not json", "cannot read LoCoMo data"),
        ('{"conversation": {}, "qa": []}', "not in the LoCoMo format"),
        ('[{"conversation": {}}]', "not in the LoCoMo format"),
    ],
    ids=["missing", "not-json", "object", "no-qa"],
)
def test_bad_locomo_file_is_a_clear_error(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message):
        locomo(path)
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(path), "--json"])
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.stdout == ""
    assert message in " ".join(result.stderr.split())


def _cli_error(tmp_path: Path, samples: Any) -> Any:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    result = CliRunner().invoke(app, ["bench", "locomo", "--data", str(path), "--json"])
    return result


def test_locomo_file_without_scorable_questions_is_a_clear_error(tmp_path: Path) -> None:
    sample = json.loads(json.dumps(SAMPLES[0]))
    sample["qa"] = [qa for qa in sample["qa"] if qa["category"] == 5]
    result = _cli_error(tmp_path, [sample])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and "error:" in result.stderr


@pytest.mark.parametrize(
    "session",
    [[{"speaker": "A", "dia_id": "D1:1"}], "not a list of turns"],
    ids=["turn-without-text", "session-not-a-list"],
)
def test_locomo_malformed_turns_are_a_clear_error(tmp_path: Path, session: Any) -> None:
    sample = {
        "conversation": {"session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session},
        "qa": [{"question": "q?", "evidence": ["D1:1"], "category": 1}],
    }
    result = _cli_error(tmp_path, [sample])
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 2 and "error:" in result.stderr


# -- bench context: the injected block itself ------------------------------------------------

PUPPY = "I adopted a golden retriever puppy named Biscuit last week."
SHOES = "Biscuit chewed my favourite running shoes yesterday."
TURNS = {"D1:3": PUPPY, "D2:3": SHOES, "D2:2": "I signed up for a pottery class on Saturdays."}


def test_quoted_is_format_independent() -> None:
    # the same turn as a dense log line, a bullet, or plain prose: quoted every time
    for block in (
        f"## Memory\n[LOG: 2023-05-08 Caroline: {PUPPY}]",
        f"Said before:\n- 2023-05-08 Caroline: {PUPPY.upper()}",
        f"Caroline told you: {PUPPY[:-10]}",
    ):
        assert quotes(block, PUPPY), block
    assert not quotes("## Memory\n[LOG: Caroline: I adopted a cat.]", PUPPY)
    assert not quotes("golden puppy retriever Biscuit adopted", PUPPY)  # order matters
    assert not quotes("Thanks Mel!", "Thanks, Mel!")  # under three content words: never counted


def test_judge_a_block_with_and_without_the_evidence() -> None:
    block = f"## Memory\n[LOG: 2023-05-08 Caroline: {PUPPY}][LOG: Melanie: {TURNS['D2:2']}]"
    row = judge(block, TURNS, ["D1:3"])
    assert (row["any"], row["all"], row["quoted"], row["evidence_quoted"]) == (True, True, 2, 1)
    row = judge(block, TURNS, ["D1:3", "D2:3"])  # one of two evidence turns
    assert (row["any"], row["all"], row["evidence_quoted"]) == (True, False, 1)
    row = judge(f"[LOG: {SHOES}]", TURNS, ["D2:2"])
    assert (row["any"], row["quoted"], row["evidence_quoted"]) == (False, 1, 0)
    assert judge("", TURNS, ["D1:3"])["quoted"] == 0


def test_judge_counts_a_fact_made_from_the_evidence_that_holds_its_value() -> None:
    """After sleep a block may say the evidence as a state or event: it counts when the fact
    cites an evidence turn and that turn holds its value, and precision counts it too."""
    pet = Fact("caroline pet golden retriever puppy", "golden retriever puppy", ("D1:3",))
    wrong = Fact("caroline pet grey cat", "grey cat", ("D1:3",))  # the right line, not its words
    other = Fact("caroline hobby pottery", "pottery", ("D2:2",))
    block = "## Memory\n[caroline.pet: golden retriever puppy][caroline.hobby: pottery]"
    row = judge(block, TURNS, ["D1:3"], [pet, other])
    assert (row["any"], row["all"], row["quoted"], row["evidence_quoted"]) == (True, True, 2, 1)
    assert row["facts_quoted"] == 2
    grouped = "## Memory\n[caroline.hobby: pottery; pet: golden retriever puppy]"  # one bracket
    assert judge(grouped, TURNS, ["D1:3"], [pet, other]) == {**row, "block": grouped}
    row = judge("## Memory\n[caroline.pet: grey cat]", TURNS, ["D1:3"], [wrong])
    assert (row["any"], row["quoted"], row["evidence_quoted"]) == (False, 1, 0)
    # a fact is quoted only as a run of all its words: a speaker before a line is not one
    spoken = Fact("caroline adopted golden retriever", "golden retriever", ("D1:3",))
    row = judge(f"[LOG: Caroline: {SHOES}]", TURNS, ["D1:3"], [spoken])
    assert (row["any"], row["facts_quoted"]) == (False, 0)


def test_false_injection_counts_blocks_that_quote_stored_text_or_hoist_a_rule() -> None:
    with Memory(":memory:", space="s") as mem:
        mem.remember("My home city is Bangalore and I love its parks.")
        mem.forbid("Never suggest recipes that contain peanuts.", always=True)
        found = false_injection(
            mem,
            "s",
            ["Which parks in Bangalore does my home city have?"],
            ["My home city is Bangalore and I love its parks."],
            ["Never suggest recipes that contain peanuts."],
        )
        assert [(quoted, rule) for quoted, rule, _ in found] == [(True, True)]
        assert found[0][2] == mem.recall("Which parks in Bangalore does my home city have?")
        empty = false_injection(mem, "elsewhere", ["Which parks?"], ["x"], [])
        assert [(q, r, b) for q, r, b in empty] == [(False, False, "")]  # nothing stored


def test_context_bench_report(locomo_file: Path, tmp_path: Path) -> None:
    unrelated = tmp_path / "unrelated.txt"
    unrelated.write_text("# trivia\nWhat is the capital of France?\n\nExplain quicksort.\n")
    work = tmp_path / "work"
    work.mkdir()
    result = context_bench(locomo_file, unrelated=unrelated, workdir=str(work))
    overall = result["overall"]
    assert overall["questions"] == 6  # category 5 excluded
    assert set(result["by_category"]) == {"1", "2", "3", "4"}
    # six short turns a conversation: every block quotes the evidence, and more besides
    assert overall["evidence_recall"] == 1.0
    assert 0.0 < overall["precision"] < 1.0
    assert 0 < overall["tokens_p50"] <= overall["tokens_p90"]
    assert overall["estimate_p50"] > 0 and overall["empty"] == 0.0
    episodes, memories = (result["false_injection"][k] for k in ("episodes", "memories"))
    assert episodes["blocks"] == 2 * 2 and memories["blocks"] == 2  # 2 queries, 2 spaces + 1
    for row in (episodes, memories):
        assert 0.0 <= row["quotes_stored"] <= 1.0 and 0.0 <= row["hoists_rule"] <= 1.0
    assert episodes["hoists_rule"] == 0.0  # no rule is stored in a conversation's space
    assert memories["fact_recall"] == 1.0  # each stated fact is quoted for its question
    assert result["unrelated_queries"] == 2 and result["machine"]["cores"] >= 1
    assert list(work.iterdir()) == []  # the bench database was cleaned up
    only = context_bench(locomo_file, unrelated=unrelated, conversations={1}, limit=2)
    assert only["conversations"] == [1] and only["overall"]["questions"] == 2


def test_unrelated_queries_and_conversation_filter() -> None:
    shipped = load_unrelated()
    assert len(shipped) >= 100 and "What is the capital of France?" in shipped
    assert parse_conversations("0-2") == {0, 1, 2}
    assert parse_conversations("3,4") == {3, 4}
    assert parse_conversations(None) is None
    with pytest.raises(InvalidInputError, match=r"e\.g\. 0-2"):
        parse_conversations("first")


def test_wordpiece_tokens_count_with_the_shipped_tokenizer() -> None:
    assert wordpiece_tokens("") == 0
    # WordPiece splits a rare word into pieces: more tokens than words
    assert wordpiece_tokens("unbelievably hippopotamuses") > 2


def test_context_cli_json_and_errors(locomo_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["bench", "context", "--data", str(locomo_file), "--limit", "1", "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["locomo"]
    assert data["overall"]["questions"] == 2 and data["unrelated_queries"] >= 100
    slept = runner.invoke(
        app, ["bench", "context", "--data", str(locomo_file), "--limit", "1", "--sleep", "--json"]
    )
    assert slept.exit_code == 0, slept.output
    assert json.loads(slept.stdout)["locomo"]["sleep"] is True and data["sleep"] is False
    table = runner.invoke(app, ["bench", "context", "--data", str(locomo_file), "--limit", "1"])
    assert table.exit_code == 0, table.output
    assert "machine:" in table.stdout and "WordPiece" in table.stdout  # words, not widths
    for args, message in (
        ([], "--data FILE"),
        (["--data", str(locomo_file), "--conversations", "x"], "e.g. 0-2"),
        (["--data", str(locomo_file), "--conversations", "7"], "match none"),
    ):
        failed = runner.invoke(app, ["bench", "context", *args])
        assert failed.exit_code == 2, failed.output
        assert message in " ".join(failed.stderr.split())


def test_proxy_loop_through_the_real_proxy(tmp_path: Path) -> None:
    """Memory does not poison itself: after 30 exchanges with a parrot that hallucinates and
    echoes its block, every stated fact is still in the block and assistant turns are a
    minority of what it quotes; no echo was stored, and the history each request re-sends was
    not stored again (only its latest user turn; a "Thanks" said twice is two turns)."""
    result = proxy_loop(30, conversations=3, workdir=str(tmp_path))
    assert result["exchanges"] == 30 and result["conversations"] == 3
    assert result["facts"] == len(FACTS) == len(result["probes"])
    assert result["stored_episodes"] <= 2 * (30 + len(FACTS))  # one question, one reply each
    assert result["stored_markup"] == 0
    assert 0 < result["injected"] <= 30
    assert result["facts_kept"] == 1.0 and result["assistant_share"] < 0.4
    for probe in result["probes"]:
        assert probe["assistant_quoted"] <= probe["quoted"]
        assert probe["tokens"] > 0 or not probe["kept"]  # an abstained probe keeps nothing
    with pytest.raises(InvalidInputError, match="at least"):
        proxy_loop(3)


def test_synthetic_turns_come_in_batches_and_questions_ask_what_was_said() -> None:
    """The latency corpus is made a batch at a time (a million turns in seconds, not the ~45
    minutes a word per call took), deterministically, in the shape the bench documents."""
    vocabulary = _vocabulary()
    made = _Texts(vocabulary).sentences(2000)
    assert made == _Texts(vocabulary).sentences(2000)  # the same seed, the same corpus
    assert len(made) == 2000 and len(set(made)) > 1990
    words = [sentence.rstrip(".").lower().split() for sentence in made]
    assert all(8 <= len(sentence) <= 23 for sentence in words)
    stop = sum(word in STOPWORDS for sentence in words for word in sentence)
    assert 0.4 < stop / sum(map(len, words)) < 0.6  # about half the tokens are stop words
    texts = _Texts(vocabulary)
    said = [set(s.rstrip(".").lower().split()) for s in [*texts.sentences(50), texts.sentence()]]
    for _ in range(20):
        question = texts.question()
        asked = question.rstrip("?").lower().split()[2:]
        assert 2 <= len(asked) <= 5 and any(set(asked) <= sentence for sentence in said)


def test_locomo_cli_flips_each_ablated_switch_in_the_same_run(locomo_file: Path) -> None:
    args = ["bench", "locomo", "--data", str(locomo_file), "--json"]
    args += ["--ablate", "enable_anchored_time", "--ablate", "enable_evidence_sets"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data["ablations"]) == {"enable_anchored_time", "enable_evidence_sets"}
    for ablation in data["ablations"].values():
        assert ablation["overall"]["questions"] == data["overall"]["questions"] == 6
    table = CliRunner().invoke(app, [*args[:4], "--ablate", "enable_evidence_sets"])
    assert table.exit_code == 0, table.output  # the ablations table prints


def test_locomo_cli_names_the_switches_a_bad_ablation_could_be(locomo_file: Path) -> None:
    args = ["bench", "locomo", "--data", str(locomo_file), "--ablate", "date_weight"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and result.stdout == ""
    message = " ".join(result.stderr.split())
    assert "'date_weight' is no switch" in message and "enable_anchored_time" in message
