"""Word folding and a small topic lexicon: what recall's evidence gate and rule hoisting compare.

The offline static embedder cannot tell that "what should I cook tonight?" bears on "never
suggest recipes with peanuts" (cosine 0.35, as close as unrelated pairs get), so a rule and a
query also meet when they share a topic of :data:`TOPICS`: a few hand-written word families
for the constraints people state and the facts they keep (food, shell, travel, health, home,
money, children, pets); a consolidated fact meets a query the same way ("Where do I live?"
and "home city: Bangalore"). Words are
compared by :func:`stem`, a light suffix fold, so "cooking" meets "cook" and "recipes" "recipe".
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from .._kernel.text import content_words

__all__ = ["CHATTER", "RULE_FRAME", "TOPICS", "stem", "stems", "topics"]

_SUFFIXES = ("ingly", "edly", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s")

CHATTER = frozenset(
    """
    hi hello hey thanks thank please help helpful nice meet good morning evening night
    goodnight bye ok okay sure yes yeah tell say something anything things thing know can
    like want need going go great cool awesome fun interesting amazing wonderful encouraging
    many much now currently nowadays lately presently
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""Greetings, courtesy, praise, the question frame's "how many" and "now": words that carry no
topic, so they never count as evidence ("Hi!", "Thanks for your help." and "Nice to meet you."
find nothing in a chat that says hi; "Where do I live now?" asks what "Where do I live?" asks)."""


RULE_FRAME = frozenset(
    "never always avoid suggest recommend propose offer mention use give show write make".split()  # noqa: SIM905
)
"""The words every rule is phrased with: they never make a rule bear on a query ("suggest a
dinner" must not hoist "never suggest PowerShell")."""


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """``word`` with one common English suffix folded (``cooking`` → ``cook``, ``recipes`` →
    ``recip``, ``explained`` → ``explain``): only ever compared with another stem."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # "running" → "runn" → "run"
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]  # "recipe" and "recipes" meet
    return word


@lru_cache(maxsize=8192)
def stems(text: str) -> frozenset[str]:
    """The stems of ``text``'s content words (stop words and chatter left out); cached, as
    recall asks it of the same candidate lines query after query."""
    return frozenset(stem(word) for word in content_words(text) if word not in CHATTER)


def _family(words: str) -> frozenset[str]:
    return frozenset(stem(word) for word in words.split())


TOPICS: dict[str, frozenset[str]] = {
    "food": _family(
        """food cook cooking recipe dinner lunch breakfast meal snack eat eating dish bake
        baking menu restaurant kitchen ingredient ingredients peanut peanuts nut nuts
        shellfish allergy allergic gluten dairy vegan vegetarian dessert cake"""
    ),
    "shell": _family(
        """shell terminal powershell bash zsh cmd command commands script scripting console
        cli windows linux unix macos sudo"""
    ),
    "travel": _family(
        """travel trip flight flights fly airport hotel booking visa passport vacation holiday
        itinerary"""
    ),
    "health": _family(
        """health medicine medication doctor dentist symptom symptoms pain diet allergy
        allergic pregnant"""
    ),
    "home": _family(
        """live lives living home city town flat apartment house moved move address hometown
        neighbourhood neighborhood based reside resides residence"""
    ),
    "money": _family("money budget price cost spend spending invest investing loan bank pay"),
    "children": _family("child children kid kids son daughter baby toddler school"),
    "pets": _family("pet pets dog dogs cat cats puppy kitten vet"),
}
"""Topic → the stems of its words. Small on purpose: a topic shared by a rule and a query
hoists the rule, so a word belongs here only when a rule about it bears on any question that
uses it (docs/recall.md, "Forbidden rules")."""


def topics(words: Iterable[str]) -> set[str]:
    """The topics any of these stems belongs to."""
    found = set(words)
    return {name for name, family in TOPICS.items() if not family.isdisjoint(found)}
