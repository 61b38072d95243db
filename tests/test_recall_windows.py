"""What recall remembers within one search answers as the store and the regex it replaces do.

``recall.windows.Windows`` serves a smaller radius from a wider read; ``_stands_alone`` looks a
capitalised short name up among the query's runs of word characters instead of compiling
``\\bword\\b``. Both are compared with the thing they stand in for, on a real SQLite file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orcamem import Memory
from orcamem.recall.hybrid import _WORD_RUN_RE, _stands_alone
from orcamem.recall.windows import Windows


def _ids(window: dict[int, list[tuple[int, int]]]) -> dict[int, set[tuple[int, int]]]:
    return {episode: set(others) for episode, others in window.items()}


def test_a_window_read_wide_answers_a_narrower_one_as_the_store_does(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as mem:
        episodes = mem.add_many(
            [
                {
                    "text": f"turn {i} of session {i // 6}",
                    "role": "user",
                    "session_id": f"s{i // 6}",
                }
                for i in range(18)
            ]
        )
        ids = [episode.id for episode in episodes]
        store, space = mem.store, mem.space
        windows = Windows(store, space)
        wide = windows.around(ids[2:9], 2)
        assert wide == store.session_window(space, ids[2:9], 2)  # the first read, as answered
        assert {offset for others in wide.values() for _, offset in others} == {-2, -1, 1, 2}
        asked = [ids[0], ids[4], ids[5], ids[6], ids[12]]  # some read at radius 2, some not
        narrow = windows.around(asked, 1)
        assert _ids(narrow) == _ids(store.session_window(space, asked, 1))
        assert _ids(windows.around(asked, 2)) == _ids(store.session_window(space, asked, 2))


@pytest.mark.parametrize(
    ("word", "query"),
    [
        ("Mel", "Did Mel go?"),
        ("Mel", "Did Melanie go?"),
        ("Mel", "Mel's car"),
        ("Mel", "Mel_x and Mel"),
        ("Mel", "x_Mel"),
        ("Ss", "ß and Ss"),
        ("2022", "in 2022?"),
        ("I\u0307stanbul", "I\u0307stanbul is far"),  # a combining mark: not a word character
        ("Mel_", "Mel_ went"),
    ],
)
def test_a_short_name_stands_alone_exactly_where_the_regex_finds_it(word: str, query: str) -> None:
    runs = frozenset(_WORD_RUN_RE.findall(query))
    expected = re.search(rf"\b{re.escape(word)}\b", query) is not None
    assert _stands_alone(word, query, runs) is expected
