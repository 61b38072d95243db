"""Golden outputs of every tokenizer and term rule, recorded from the code before issue 10's
merge: the one term function must give each system exactly what it gave before.

Each case is a sentence and, per system, what it made of it. The expectations are literals,
generated once from the separate functions and pasted here; a change to one is a change of
behaviour and says why next to it.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orcamem._kernel.claims import verify
from orcamem._kernel.claims.claims import Claim, SourceLine, claim_from_json
from orcamem._kernel.claims.rules import rule_claims
from orcamem._kernel.text import content_words, fts_query, slug, terms
from orcamem.engine.consolidate import gate
from orcamem.recall import bank, markdown

SYSTEMS: dict[str, Callable[[str], object]] = {
    "terms": terms,  # recorded as the kernel's words(): terms() without knobs is that rule
    "content_words": content_words,
    "fts_query": fts_query,
    "bank_terms": lambda text: sorted(bank.terms(text)),
    # re-recorded for issue 18: the Markdown score drops the seed's *short* stop list
    # (recall.markdown.STOP_WORDS), not the engine's 195 words ("type", "kind", "not", "always" stay)
    "markdown_terms": markdown.terms,
    "normal_words": verify.normal_words,
    # The one deliberate change. There were two slugs: rules.py's (the first four ASCII words
    # that are not stop words) named a rule ``forbidden_<slug>``, and gate.py's (every ASCII
    # word, cut at 60 characters, "rule" when none) re-slugged that name when filing it, while
    # a model's claim naming the rule in its own words got gate.py's slug of them: the same
    # words "chain commands with && in PowerShell" were ``chain_commands_powershell`` in
    # rules.py and ``chain_commands_with_in_powershell`` in gate.py. One slug now, the one whose
    # names gate.py finds again: rules.py's, with gate.py's "rule" where rules.py gave "" (the
    # gate filed those as "rule" anyway). The recorded rules.py slugs stand below; gate.py's
    # differed on all but one sentence and are gone (the tests at the end prove the agreement).
    "slug": slug,
}

CASES: list[tuple[str, dict[str, object]]] = [
    (
        "The quick brown fox jumps over the lazy dog.",
        {
            "terms": ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"],
            "content_words": ["quick", "brown", "fox", "jumps", "lazy", "dog"],
            "fts_query": '"quick" OR "brown" OR "fox" OR "jumps" OR "lazy" OR "dog"',
            "bank_terms": ["brown", "dog", "fox", "jump", "lazy", "quick"],
            "markdown_terms": ["quick", "brown", "fox", "jumps", "over", "lazy", "dog"],
            "normal_words": ["the", "quick", "brown", "fox", "jump", "over", "the", "lazy", "dog"],
            "slug": "quick_brown_fox_jumps",
        },
    ),
    (
        "Don't stop—it's 2023_x!",
        {
            "terms": ["don't", "stop", "it's", "2023", "x"],
            "content_words": ["stop", "2023"],
            "fts_query": '"stop" OR "2023"',
            "bank_terms": ["2023", "stop"],
            "markdown_terms": ["stop", "2023"],
            "normal_words": ["don", "t", "stop", "it", "s", "2023", "x"],
            "slug": "don_stop_2023_x",
        },
    ),
    (
        "I'm sure it's fine; don't worry, we'll see.",
        {
            "terms": ["i'm", "sure", "it's", "fine", "don't", "worry", "we'll", "see"],
            "content_words": ["sure", "fine", "worry", "see"],
            "fts_query": '"sure" OR "fine" OR "worry" OR "see"',
            "bank_terms": ["fine", "see", "sure", "worry"],
            "markdown_terms": ["sure", "fine", "worry", "we'll", "see"],
            "normal_words": [
                "i",
                "m",
                "sure",
                "it",
                "s",
                "fine",
                "don",
                "t",
                "worry",
                "we",
                "ll",
                "see",
            ],
            "slug": "sure_fine_don_worry",
        },
    ),
    (
        "Café au lait, naïve résumé, Zoë's piñata.",
        {
            "terms": ["café", "au", "lait", "naïve", "résumé", "zoë's", "piñata"],
            "content_words": ["café", "au", "lait", "naïve", "résumé", "zoë", "piñata"],
            "fts_query": '"café" OR "au" OR "lait" OR "naïve" OR "résumé" OR "zoë" OR "piñata"',
            "bank_terms": ["au", "café", "lait", "naïve", "piñata", "résumé", "zoë"],
            "markdown_terms": ["café", "au", "lait", "naïve", "résumé", "zoë's", "piñata"],
            "normal_words": ["café", "au", "lait", "naïve", "résumé", "zoë", "s", "piñata"],
            "slug": "caf_au_lait_na",
        },
    ),
    (
        "İstanbul and ISTANBUL are the same city?",
        {
            "terms": ["i̇stanbul", "and", "istanbul", "are", "the", "same", "city"],
            "content_words": ["i̇stanbul", "istanbul", "city"],
            "fts_query": '"i̇stanbul" OR "istanbul" OR "city"',
            "bank_terms": ["city", "istanbul", "i̇stanbul"],
            "markdown_terms": ["i̇stanbul", "istanbul", "same", "city"],
            "normal_words": ["i", "stanbul", "and", "istanbul", "are", "the", "same", "city"],
            "slug": "stanbul_istanbul_city",
        },
    ),
    (
        "Straße, STRASSE and straße.",
        {
            "terms": ["straße", "strasse", "and", "straße"],
            "content_words": ["straße", "strasse"],
            "fts_query": '"straße" OR "strasse"',
            "bank_terms": ["strasse", "straße"],
            "markdown_terms": ["straße", "strasse"],
            "normal_words": ["straße", "strasse", "and", "straße"],
            "slug": "stra_e_strasse_stra",
        },
    ),
    (
        "東京に住んでいます。I live in 東京 now.",
        {
            "terms": ["東京に住んでいます", "i", "live", "in", "東京", "now"],
            "content_words": ["東京に住んでいます", "live", "東京", "now"],
            "fts_query": '"東京に住んでいます" OR "live" OR "東京" OR "now"',
            "bank_terms": ["live", "now", "東京", "東京に住んでいます"],
            "markdown_terms": ["東京に住んでいます", "live", "東京", "now"],
            "normal_words": ["東京に住んでいます", "i", "live", "in", "東京", "now"],
            "slug": "live_now",
        },
    ),
    (
        "我喜欢喝茶，不喜欢咖啡。",
        {
            "terms": ["我喜欢喝茶", "不喜欢咖啡"],
            "content_words": ["我喜欢喝茶", "不喜欢咖啡"],
            "fts_query": '"我喜欢喝茶" OR "不喜欢咖啡"',
            "bank_terms": ["不喜欢咖啡", "我喜欢喝茶"],
            "markdown_terms": ["我喜欢喝茶", "不喜欢咖啡"],
            "normal_words": ["我喜欢喝茶", "不喜欢咖啡"],
            "slug": "rule",  # was "": the gate then filed it as "rule"
        },
    ),
    (
        "Email me at john.doe@example.com or see /usr/local/bin/python3.",
        {
            "terms": [
                "email",
                "me",
                "at",
                "john",
                "doe",
                "example",
                "com",
                "or",
                "see",
                "usr",
                "local",
                "bin",
                "python3",
            ],
            "content_words": [
                "email",
                "john",
                "doe",
                "example",
                "com",
                "see",
                "usr",
                "local",
                "bin",
                "python3",
            ],
            "fts_query": '"email" OR "john" OR "doe" OR "example" OR "com" OR "see" OR "usr" OR "local" OR "bin" OR "python3"',
            "bank_terms": [
                "bin",
                "com",
                "doe",
                "email",
                "example",
                "john",
                "local",
                "python3",
                "see",
                "usr",
            ],
            "markdown_terms": [
                "email",
                "john",
                "doe",
                "example",
                "com",
                "see",
                "usr",
                "local",
                "bin",
                "python3",
            ],
            "normal_words": [
                "email",
                "me",
                "at",
                "john",
                "doe",
                "example",
                "com",
                "or",
                "see",
                "usr",
                "local",
                "bin",
                "python3",
            ],
            "slug": "email_john_doe_example",
        },
    ),
    (
        "snake_case_name and kebab-case-name and CamelCaseName",
        {
            "terms": [
                "snake",
                "case",
                "name",
                "and",
                "kebab",
                "case",
                "name",
                "and",
                "camelcasename",
            ],
            "content_words": ["snake", "case", "name", "kebab", "camelcasename"],
            "fts_query": '"snake" OR "case" OR "name" OR "kebab" OR "camelcasename"',
            "bank_terms": ["camelcasename", "case", "kebab", "name", "snake"],
            "markdown_terms": ["snake", "case", "name", "kebab", "camelcasename"],
            "normal_words": [
                "snake",
                "case",
                "name",
                "and",
                "kebab",
                "case",
                "name",
                "and",
                "camelcasename",
            ],
            "slug": "snake_case_name_kebab",
        },
    ),
    (
        "I moved to Bangalore in 2019, then to Pune on 3rd May 2021.",
        {
            "terms": [
                "i",
                "moved",
                "to",
                "bangalore",
                "in",
                "2019",
                "then",
                "to",
                "pune",
                "on",
                "3rd",
                "may",
                "2021",
            ],
            "content_words": ["moved", "bangalore", "2019", "pune", "3rd", "may", "2021"],
            "fts_query": '"moved" OR "bangalore" OR "2019" OR "pune" OR "3rd" OR "may" OR "2021"',
            "bank_terms": ["2019", "2021", "3rd", "bangalore", "may", "moved", "pune"],
            "markdown_terms": ["moved", "bangalore", "2019", "then", "pune", "3rd", "may", "2021"],
            "normal_words": [
                "i",
                "moved",
                "to",
                "bangalore",
                "in",
                "2019",
                "then",
                "to",
                "pune",
                "on",
                "3rd",
                "may",
                "2021",
            ],
            "slug": "moved_bangalore_2019_pune",
        },
    ),
    (
        "A b c d e f g: one-letter words x y z.",
        {
            "terms": ["a", "b", "c", "d", "e", "f", "g", "one", "letter", "words", "x", "y", "z"],
            "content_words": ["one", "letter", "words"],
            "fts_query": '"one" OR "letter" OR "words"',
            "bank_terms": ["letter", "one", "word"],
            "markdown_terms": ["one", "letter", "words"],
            "normal_words": [
                "a",
                "b",
                "c",
                "d",
                "e",
                "f",
                "g",
                "one",
                "letter",
                "word",
                "x",
                "y",
                "z",
            ],
            "slug": "b_c_e_f",
        },
    ),
    (
        "The allergies of the users, their meals and classes.",
        {
            "terms": ["the", "allergies", "of", "the", "users", "their", "meals", "and", "classes"],
            "content_words": ["allergies", "users", "meals", "classes"],
            "fts_query": '"allergies" OR "users" OR "meals" OR "classes"',
            "bank_terms": ["allergy", "classe", "meal", "user"],
            "markdown_terms": ["allergies", "users", "meals", "classes"],
            "normal_words": [
                "the",
                "allergie",
                "of",
                "the",
                "user",
                "their",
                "meal",
                "and",
                "classe",
            ],
            "slug": "allergies_users_meals_classes",
        },
    ),
    (
        "This status analysis is bus news: teas, glasses, menus.",
        {
            "terms": [
                "this",
                "status",
                "analysis",
                "is",
                "bus",
                "news",
                "teas",
                "glasses",
                "menus",
            ],
            "content_words": ["status", "analysis", "bus", "news", "teas", "glasses", "menus"],
            "fts_query": '"status" OR "analysis" OR "bus" OR "news" OR "teas" OR "glasses" OR "menus"',
            "bank_terms": ["analysis", "bus", "glasse", "menus", "new", "status", "tea"],
            "markdown_terms": ["status", "analysis", "bus", "news", "teas", "glasses", "menus"],
            "normal_words": [
                "thi",
                "statu",
                "analysi",
                "is",
                "bus",
                "new",
                "tea",
                "glasse",
                "menu",
            ],
            "slug": "status_analysis_bus_news",
        },
    ),
    (
        "Never chain commands with && in PowerShell.",
        {
            "terms": ["never", "chain", "commands", "with", "in", "powershell"],
            "content_words": ["never", "chain", "commands", "powershell"],
            "fts_query": '"never" OR "chain" OR "commands" OR "powershell"',
            "bank_terms": ["chain", "command", "never", "powershell"],
            "markdown_terms": ["never", "chain", "commands", "powershell"],
            "normal_words": ["never", "chain", "command", "with", "in", "powershell"],
            "slug": "never_chain_commands_powershell",
        },
    ),
    (
        "Please don't suggest pip install; always use uv instead.",
        {
            "terms": [
                "please",
                "don't",
                "suggest",
                "pip",
                "install",
                "always",
                "use",
                "uv",
                "instead",
            ],
            "content_words": [
                "please",
                "suggest",
                "pip",
                "install",
                "always",
                "use",
                "uv",
                "instead",
            ],
            "fts_query": '"please" OR "suggest" OR "pip" OR "install" OR "always" OR "use" OR "uv" OR "instead"',
            "bank_terms": ["alway", "install", "instead", "pip", "please", "suggest", "use", "uv"],
            "markdown_terms": [
                "please",
                "suggest",
                "pip",
                "install",
                "always",
                "use",
                "uv",
                "instead",
            ],
            "normal_words": [
                "please",
                "don",
                "t",
                "suggest",
                "pip",
                "install",
                "alway",
                "use",
                "uv",
                "instead",
            ],
            "slug": "please_don_suggest_pip",
        },
    ),
    (
        "Do not mention the user's ex-wife Sarah.",
        {
            "terms": ["do", "not", "mention", "the", "user's", "ex", "wife", "sarah"],
            "content_words": ["mention", "user", "ex", "wife", "sarah"],
            "fts_query": '"mention" OR "user" OR "ex" OR "wife" OR "sarah"',
            "bank_terms": ["ex", "mention", "sarah", "user", "wife"],
            "markdown_terms": ["not", "mention", "user's", "ex", "wife", "sarah"],
            "normal_words": ["do", "not", "mention", "the", "user", "s", "ex", "wife", "sarah"],
            "slug": "mention_user_ex_wife",
        },
    ),
    (
        "Stop using tabs — use 4 spaces.",
        {
            "terms": ["stop", "using", "tabs", "use", "4", "spaces"],
            "content_words": ["stop", "using", "tabs", "use", "spaces"],
            "fts_query": '"stop" OR "using" OR "tabs" OR "use" OR "spaces"',
            "bank_terms": ["space", "stop", "tab", "use", "using"],
            "markdown_terms": ["stop", "using", "tabs", "use", "spaces"],
            "normal_words": ["stop", "using", "tab", "use", "4", "space"],
            "slug": "stop_using_tabs_use",
        },
    ),
    (
        "O'Brien's rock'n'roll y'all o'clock",
        {
            "terms": ["o'brien", "s", "rock'n", "roll", "y'all", "o'clock"],
            "content_words": ["rock", "roll"],
            "fts_query": '"rock" OR "roll"',
            "bank_terms": ["rock", "roll"],
            "markdown_terms": ["o'brien", "rock'n", "roll", "y'all", "o'clock"],
            "normal_words": ["o", "brien", "s", "rock", "n", "roll", "y", "all", "o", "clock"],
            "slug": "o_brien_rock_n",
        },
    ),
    (
        "What did Caroline paint last week?",
        {
            "terms": ["what", "did", "caroline", "paint", "last", "week"],
            "content_words": ["caroline", "paint", "last", "week"],
            "fts_query": '"caroline" OR "paint" OR "last" OR "week"',
            "bank_terms": ["caroline", "last", "paint", "week"],
            "markdown_terms": ["caroline", "paint", "last", "week"],
            "normal_words": ["what", "did", "caroline", "paint", "last", "week"],
            "slug": "caroline_paint_last_week",
        },
    ),
    (
        'foo AND bar OR NOT baz NEAR(qux, 2) col:val ^start pre* "quoted" -x',
        {
            "terms": [
                "foo",
                "and",
                "bar",
                "or",
                "not",
                "baz",
                "near",
                "qux",
                "2",
                "col",
                "val",
                "start",
                "pre",
                "quoted",
                "x",
            ],
            "content_words": [
                "foo",
                "bar",
                "baz",
                "near",
                "qux",
                "col",
                "val",
                "start",
                "pre",
                "quoted",
            ],
            "fts_query": '"foo" OR "bar" OR "baz" OR "near" OR "qux" OR "col" OR "val" OR "start" OR "pre" OR "quoted"',
            "bank_terms": [
                "bar",
                "baz",
                "col",
                "foo",
                "near",
                "pre",
                "quoted",
                "qux",
                "start",
                "val",
            ],
            "markdown_terms": [
                "foo",
                "bar",
                "not",
                "baz",
                "near",
                "qux",
                "col",
                "val",
                "start",
                "pre",
                "quoted",
            ],
            "normal_words": [
                "foo",
                "and",
                "bar",
                "or",
                "not",
                "baz",
                "near",
                "qux",
                "2",
                "col",
                "val",
                "start",
                "pre",
                "quoted",
                "x",
            ],
            "slug": "foo_bar_baz_near",
        },
    ),
    (
        "Pune pune PUNE Pune's",
        {
            "terms": ["pune", "pune", "pune", "pune's"],
            "content_words": ["pune"],
            "fts_query": '"pune"',
            "bank_terms": ["pune"],
            "markdown_terms": ["pune", "pune's"],
            "normal_words": ["pune", "pune", "pune", "pune", "s"],
            "slug": "pune_pune_pune_pune",
        },
    ),
    (
        "?!… --",
        {
            "terms": [],
            "content_words": [],
            "fts_query": None,
            "bank_terms": [],
            "markdown_terms": [],
            "normal_words": [],
            "slug": "rule",  # was "": the gate then filed it as "rule"
        },
    ),
    (
        "3.14 is pi, 1,000,000 is a million, v2.0.1-beta",
        {
            "terms": [
                "3",
                "14",
                "is",
                "pi",
                "1",
                "000",
                "000",
                "is",
                "a",
                "million",
                "v2",
                "0",
                "1",
                "beta",
            ],
            "content_words": ["14", "pi", "000", "million", "v2", "beta"],
            "fts_query": '"14" OR "pi" OR "000" OR "million" OR "v2" OR "beta"',
            "bank_terms": ["000", "14", "beta", "million", "pi", "v2"],
            "markdown_terms": ["14", "pi", "000", "million", "v2", "beta"],
            "normal_words": [
                "3",
                "14",
                "is",
                "pi",
                "1",
                "000",
                "000",
                "is",
                "a",
                "million",
                "v2",
                "0",
                "1",
                "beta",
            ],
            "slug": "3_14_pi_1",
        },
    ),
    (
        "Ünïcödé ΑΘΗΝΑ Αθήνα МОСКВА москва",
        {
            "terms": ["ünïcödé", "αθηνα", "αθήνα", "москва", "москва"],
            "content_words": ["ünïcödé", "αθηνα", "αθήνα", "москва"],
            "fts_query": '"ünïcödé" OR "αθηνα" OR "αθήνα" OR "москва"',
            "bank_terms": ["ünïcödé", "αθήνα", "αθηνα", "москва"],
            "markdown_terms": ["ünïcödé", "αθηνα", "αθήνα", "москва"],
            "normal_words": ["ünïcödé", "αθηνα", "αθήνα", "москва", "москва"],
            "slug": "n_c",
        },
    ),
    (
        "It's its own thing; they're there with their things.",
        {
            "terms": ["it's", "its", "own", "thing", "they're", "there", "with", "their", "things"],
            "content_words": ["thing", "things"],
            "fts_query": '"thing" OR "things"',
            "bank_terms": ["thing"],
            "markdown_terms": ["own", "thing", "there", "things"],
            "normal_words": [
                "it",
                "s",
                "its",
                "own",
                "thing",
                "they",
                "re",
                "there",
                "with",
                "their",
                "thing",
            ],
            "slug": "thing_things",
        },
    ),
    (
        "https://example.com/path?q=1&r=two#frag",
        {
            "terms": ["https", "example", "com", "path", "q", "1", "r", "two", "frag"],
            "content_words": ["https", "example", "com", "path", "two", "frag"],
            "fts_query": '"https" OR "example" OR "com" OR "path" OR "two" OR "frag"',
            "bank_terms": ["com", "example", "frag", "http", "path", "two"],
            "markdown_terms": ["https", "example", "com", "path", "two", "frag"],
            "normal_words": ["http", "example", "com", "path", "q", "1", "r", "two", "frag"],
            "slug": "https_example_com_path",
        },
    ),
    (
        "I've got a dentist appointment at 9am; my dentist is Dr. Rao.",
        {
            "terms": [
                "i've",
                "got",
                "a",
                "dentist",
                "appointment",
                "at",
                "9am",
                "my",
                "dentist",
                "is",
                "dr",
                "rao",
            ],
            "content_words": ["dentist", "appointment", "9am", "dr", "rao"],
            "fts_query": '"dentist" OR "appointment" OR "9am" OR "dr" OR "rao"',
            "bank_terms": ["9am", "appointment", "dentist", "dr", "rao"],
            "markdown_terms": ["got", "dentist", "appointment", "9am", "dr", "rao"],
            "normal_words": [
                "i",
                "ve",
                "got",
                "a",
                "dentist",
                "appointment",
                "at",
                "9am",
                "my",
                "dentist",
                "is",
                "dr",
                "rao",
            ],
            "slug": "dentist_appointment_9am_dentist",
        },
    ),
    (
        "Types, kinds, sorts, gets, others and wills.",
        {
            "terms": ["types", "kinds", "sorts", "gets", "others", "and", "wills"],
            "content_words": ["types", "kinds", "sorts", "gets", "others", "wills"],
            "fts_query": '"types" OR "kinds" OR "sorts" OR "gets" OR "others" OR "wills"',
            "bank_terms": ["get", "kind", "other", "sort", "type", "will"],
            "markdown_terms": ["types", "kinds", "sorts", "gets", "others", "wills"],
            "normal_words": ["type", "kind", "sort", "get", "other", "and", "will"],
            "slug": "types_kinds_sorts_gets",
        },
    ),
    (
        "Themselves, ourselves, does this yours?",
        {
            "terms": ["themselves", "ourselves", "does", "this", "yours"],
            "content_words": [],
            "fts_query": None,
            "bank_terms": [],
            "markdown_terms": ["themselves", "ourselves", "yours"],
            "normal_words": ["themselve", "ourselve", "doe", "thi", "your"],
            "slug": "rule",  # was "": the gate then filed it as "rule"
        },
    ),
    (
        "ﬁne ﬂour, x² and Ⅻ",
        {
            "terms": ["ﬁne", "ﬂour", "x²", "and", "ⅻ"],
            "content_words": ["ﬁne", "ﬂour", "x²"],
            "fts_query": '"ﬁne" OR "ﬂour" OR "x²"',
            "bank_terms": ["x²", "ﬁne", "ﬂour"],
            "markdown_terms": ["ﬁne", "ﬂour", "x²"],
            "normal_words": ["ﬁne", "ﬂour", "x²", "and", "ⅻ"],
            "slug": "ne_x",
        },
    ),
    (
        "don’t it’s (curly apostrophes)",
        {
            "terms": ["don", "t", "it", "s", "curly", "apostrophes"],
            "content_words": ["don", "curly", "apostrophes"],
            "fts_query": '"don" OR "curly" OR "apostrophes"',
            "bank_terms": ["apostrophe", "curly", "don"],
            "markdown_terms": ["don", "curly", "apostrophes"],
            "normal_words": ["don", "t", "it", "s", "curly", "apostrophe"],
            "slug": "don_curly_apostrophes",
        },
    ),
    (
        "tab\tseparated\nnew line words",
        {
            "terms": ["tab", "separated", "new", "line", "words"],
            "content_words": ["tab", "separated", "new", "line", "words"],
            "fts_query": '"tab" OR "separated" OR "new" OR "line" OR "words"',
            "bank_terms": ["line", "new", "separated", "tab", "word"],
            "markdown_terms": ["tab", "separated", "new", "line", "words"],
            "normal_words": ["tab", "separated", "new", "line", "word"],
            "slug": "tab_separated_new_line",
        },
    ),
    (
        "forbidden_chain_commands_powershell",
        {
            "terms": ["forbidden", "chain", "commands", "powershell"],
            "content_words": ["forbidden", "chain", "commands", "powershell"],
            "fts_query": '"forbidden" OR "chain" OR "commands" OR "powershell"',
            "bank_terms": ["chain", "command", "forbidden", "powershell"],
            "markdown_terms": ["forbidden", "chain", "commands", "powershell"],
            "normal_words": ["forbidden", "chain", "command", "powershell"],
            "slug": "forbidden_chain_commands_powershell",
        },
    ),
    (
        "Never say don't to a customer.",
        {
            "terms": ["never", "say", "don't", "to", "a", "customer"],
            "content_words": ["never", "say", "customer"],
            "fts_query": '"never" OR "say" OR "customer"',
            "bank_terms": ["customer", "never", "say"],
            "markdown_terms": ["never", "say", "customer"],
            "normal_words": ["never", "say", "don", "t", "to", "a", "customer"],
            "slug": "never_say_don_customer",
        },
    ),
    (
        "use supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
        {
            "terms": [
                "use",
                "supercalifragilisticexpialidocious",
                "antidisestablishmentarianism",
                "pneumonoultramicroscopicsilicovolcanoconiosis",
            ],
            "content_words": [
                "use",
                "supercalifragilisticexpialidocious",
                "antidisestablishmentarianism",
                "pneumonoultramicroscopicsilicovolcanoconiosis",
            ],
            "fts_query": '"use" OR "supercalifragilisticexpialidocious" OR "antidisestablishmentarianism" OR "pneumonoultramicroscopicsilicovolcanoconiosis"',
            "bank_terms": [
                "antidisestablishmentarianism",
                "pneumonoultramicroscopicsilicovolcanoconiosis",
                "supercalifragilisticexpialidocious",
                "use",
            ],
            "markdown_terms": [
                "use",
                "supercalifragilisticexpialidocious",
                "antidisestablishmentarianism",
                "pneumonoultramicroscopicsilicovolcanoconiosis",
            ],
            "normal_words": [
                "use",
                "supercalifragilisticexpialidociou",
                "antidisestablishmentarianism",
                "pneumonoultramicroscopicsilicovolcanoconiosi",
            ],
            "slug": "use_supercalifragilisticexpialidocious_antidisestablishmentarianism_pneumonoultramicroscopicsilicovolcanoconiosis",
        },
    ),
    (
        "ΚΑΛΟΣ.ΝΕΟΣ ΟΔΟΣ",  # recorded with the rest; lower-cased as a whole, Σ before "." is σ
        {
            "terms": ["καλος", "νεος", "οδος"],
            "content_words": ["καλος", "νεος", "οδος"],
            "fts_query": '"καλος" OR "νεος" OR "οδος"',
            "bank_terms": ["καλος", "νεος", "οδος"],
            "markdown_terms": ["καλος", "νεος", "οδος"],
            "normal_words": ["καλοσ", "νεος", "οδος"],
            "slug": "rule",  # was "": the gate then filed it as "rule"
        },
    ),
    (
        "",
        {
            "terms": [],
            "content_words": [],
            "fts_query": None,
            "bank_terms": [],
            "markdown_terms": [],
            "normal_words": [],
            "slug": "rule",  # was "": the gate then filed it as "rule"
        },
    ),
]


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize(("text", "expected"), CASES, ids=range(len(CASES)))
def test_each_system_makes_the_same_terms_of_the_corpus(
    system: str, text: str, expected: dict[str, object]
) -> None:
    assert SYSTEMS[system](text) == expected[system]


RULES_SAID = [
    "Never chain commands with && in PowerShell.",
    "Please don't suggest pip install; always use uv instead.",
    "Do not mention the user's ex-wife Sarah.",
    "Stop using tabs — use 4 spaces.",
    "Never say don't to a customer.",
    "Never do this.",
]


def _rule_of(said: str) -> Claim:
    said_line = SourceLine("ep-1:s1", 1, 1, "s1", "user", said, "2026-10-17T10:00:00Z", "turn")
    [claim] = [c for c in rule_claims([said_line]) if c.prohibited]
    return claim


@pytest.mark.parametrize(
    "said",
    [*RULES_SAID, "Never use supercalifragilisticexpialidocious antidisestablishmentarian tools."],
)
def test_the_gate_files_a_rule_under_the_name_rules_gave_it(said: str) -> None:
    """Before, a name over 60 characters was cut and "" became "rule" on the way in."""
    claim = _rule_of(said)
    assert gate._attribute(claim, []) == claim.attribute


@pytest.mark.parametrize("said", RULES_SAID)
def test_a_models_claim_of_the_same_rule_gets_the_same_name(said: str) -> None:
    """A model naming the rule in its own words: one rule, one attribute, whoever found it."""
    claim = _rule_of(said)
    item = {"kind": "rule", "attribute": f"forbidden {claim.value}", "value": claim.value}
    from_model = claim_from_json({**item, "prohibited": True, "cites": ["ep-1:s1"]}, "model")
    assert gate._attribute(from_model, []) == claim.attribute
