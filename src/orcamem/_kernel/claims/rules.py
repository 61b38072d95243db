"""The consolidator that needs no model: declarative patterns a person uses about themself.

Each pattern turns a line said by a person (the user, a named speaker, or a note) into a
claim about them citing that line, filed under the speaker (``rule_claims``). Patterns
prefer silence to invention: a sentence that does not match cleanly yields nothing, quoted
speech and questions are not read at all, and the claims still go through the same
verification and gate as a model's (which refuses a rule whose line is not a person's own
turn: a note saying "never X" is not the user's rule). A rule is hoisted into every block, so
only an explicit prohibition or standing instruction earns one (issue 14).

Supported (case-insensitive; X, Y are the captured words; "user" stands for the speaker):

======================================  ===============================================
said                                    claim
======================================  ===============================================
I live in X / I'm based in X            state  user · home city: X
I moved/relocated to X (from Y to X)    state  user · home city: X (dated by "last week"…)
I work as a X (at Y) / I'm a X at Y     state  user · role: X (and employer: Y)
I joined Y as a X                       state  user · employer: Y and role: X (dated)
I work at/for Y (as a X)                state  user · employer: Y (and role: X)
I work at a coffee shop (a workplace)   state  user · employer: a coffee shop
I manage/lead a team ... at Y           state  user · employer: Y
I'm a X (X ends in a job: "physio",     state  user · role: X ("I'm still at Y": employer
"freelance designer", "UX researcher")  only, no role "still")
I'm vegan / vegetarian / pescatarian    state  user · diet: vegan
I have a X named/called Y               state  user · X: Y  ("a parrot named Kiwi")
my sister Ruth / my tutor Kenji         state  user · sister: Ruth
my husband and kids / my two kids       fact   user · family: husband and kids (facts add up)
we've got a pup and a kitty / two cats  fact   user · pets: a pup and a kitty
I went/turned vegetarian                state  user · diet: vegetarian
I'm no longer / not vegetarian (anymore) state user · diet: no longer vegetarian (supersedes)
(an adverb may stand between I and the verb: "I now work at", "I finally finished")
my X is Y / my X is called/named Y      state  user · X: Y  (Y a name, or X a known slot
                                        such as favourite …, birthday, job, team)
I drink/eat/use X every day/morning     state  user · drink/food/uses (when): X
when/if C, I drink/eat/use X            state  same attribute, condition C (baseline kept);
(… instead of Y)                        the attribute of the active state whose value has Y
I prefer X (over Y) / I love X          preference  user · prefers: X (with "now",
                                        "actually", …: replaces the earlier one on its topic;
                                        X ends before "over Y", "in the mornings"; not what is
                                        in front of the speaker: "the colours", "how you …")
I'm allergic to X                       fact   user · allergic to: X, and rule avoid_<X>
I have a (severe) X allergy             the same
I'm avoiding X / I avoid X / I can't    rule   avoid_<X>: X (a hard constraint, hoisted)
have (eat, drink) X
my name is X / I'm X / call me X        state  user · name: X
never X / don't X / do not X /          rule   forbidden_<X>: X, when X is an instruction
stop Xing (opening a sentence or        (a base verb with an object: not "don't give up",
a clause: "…, so never suggest X")      "never had a chance", "stop me if", "don't you")
always X / don't forget to X            rule   always: X
I (or we) went to / visited / attended
/ watched X, I got / received / bought
X, ... gave me X (with a past time      event  user · <verb>: X, dated by the expression
expression)                             (a range: "last week" is Monday to Sunday; "X and
                                        a Y" keeps the second thing when it is one word)
I'm moving to X (with a time)           event  user · plans: moving to X
======================================  ===============================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from ..text import STOPWORDS, slug
from .anchor import find_when
from .claims import HELPERS, Claim, SourceLine, speaker_entity
from .verify import normal_words

__all__ = ["rule_claims"]

_ENDS = (
    r"last|this|next|yesterday|today|tomorrow|since|because|for|with|but|and|so|when|while|after|"
    r"before|ago|on (?:[A-Z]\w*|the|my|a|an|\d)|too|as well|here|there|together|in \d{4}|"
    r"in (?:January|February|March|April|May|June|July|August|September|October|November|"
    r"December)|these days|now|anymore|again|"
    r"(?:about |almost |nearly |over )?(?:\d+|a|an|one|two|three|four|five|six|seven|eight|"
    r"nine|ten|a few|a couple of) (?:day|week|month|year)s? ago"
)
_STOP = r"(?=\s+(?:" + _ENDS + r")\b|\s+[-–—]\s|[,.;:!?)]|$)"
_PHRASE = r"([^,.;:!?()]{1,60}?)" + _STOP
# What is preferred ends before what it is preferred to ("espresso over filter coffee") and
# before when ("tea in the mornings").
_PREFERRED = (
    r"([^,.;:!?()]{1,60}?)(?=\s+(?:over|than|rather than|instead of|in the (?:morning|evening|"
    r"afternoon|night|winter|summer|monsoon)s?|" + _ENDS + r")\b|\s+[-–—]\s|[,.;:!?)]|$)"
)
_PLACE = r"([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,3})"
_A = r"(?:an?\s+|the\s+)?"
# "I finally finished", "I actually live", "I now work": an adverb between I and the verb.
_ADVERB = r"(?:(?:finally|just|actually|recently|also|really|now|currently|already|still)\s+)?"
_VERB_ATTRIBUTE = {"drink": "drink", "eat": "food", "use": "uses", "take": "takes"}
# Head nouns of a job ("I'm a physio", "I'm a freelance designer now"): "I'm a X" alone is a
# role only when X ends in one ("I'm a big fan", "I'm a mess" are not).
_JOBS = (
    r"engineer|developer|programmer|designer|nurse|doctor|surgeon|paramedic|physio|"
    r"physiotherapist|therapist|pharmacist|dentist|dietitian|nutritionist|vet|veterinarian|"
    r"teacher|professor|lecturer|tutor|librarian|researcher|scientist|analyst|manager|"
    r"accountant|lawyer|architect|writer|editor|journalist|consultant|chef|cook|baker|barista|"
    r"roaster|photographer|musician|artist|illustrator|translator|electrician|plumber|"
    r"carpenter|mechanic|pilot|farmer|firefighter|police officer|recruiter|cashier|"
    r"receptionist|technician|administrator|freelancer|intern|student"
)
# Workplaces said without a name ("I work at a coffee shop").
_WORKPLACE = (
    r"(?:an?|the)\s+(?:[a-z]+\s+){0,2}?(?:shop|caf[eé]|restaurant|bakery|bar|pub|hotel|"
    r"hospital|clinic|pharmacy|school|college|university|library|bank|store|supermarket|"
    r"startup|agency|firm|factory|warehouse|studio|lab|gym|salon|nonprofit|charity|"
    r"call centre|call center)"
)
# Spouse and children (what a person has, said in passing: "my husband and kids", "my two
# kids"), and pets ("we've got a pup and a kitty").
_KIN = r"husband|wife|partner|kids|children|sons|daughters|boys|girls"
_COUNT = r"(?:(?:two|three|four|five|\d)\s+)?"
_PETS = r"(?:pup|puppy|puppies|dog|kitty|kitten|cat|bunny|rabbit|hamster|parrot|fish|turtle)s?"
_PET_COUNT = r"(?:a|an|two|three|four|\d)\s+"
_PET_COUNTS = r"(?:two|three|four|\d)\s+"
# "my sister Ruth", "my tutor Kenji": a relation and its name.
_RELATIONS = (
    r"sister|brother|mom|mum|mother|dad|father|grandmother|grandma|granny|grandfather|grandpa|"
    r"aunt|uncle|cousin|son|daughter|husband|wife|partner|fianc[eé]e?|boyfriend|girlfriend|"
    r"niece|nephew|tutor|coach|boss|roommate|flatmate|best friend"
)
_HABIT = r"(?:every|each)\s+(day|morning|evening|night|week)"
_CLAUSE_END = r"(?=\s+(?:instead of|when you|because|since|as it|so that)\b|[,.;:!?]|$)"
# "… when you help me" says nothing the rule does not: it ends there.
_RULE_END = (
    r"(?=\s+(?:instead of|because|since|as it|so that|it's|it is|when you help me)\b"
    r"|[,.;:!?]|$)"
)
# A rule opens a sentence or clause ("…, so never suggest snacks with nuts"); what follows the
# never/don't/stop/always must be an instruction: a verb in the base form with an object.
_RULE_OPEN = r"(?:^|[.!?;]\s+|,\s*)(?:(?:and|so|but|also|actually|oh|please),?\s+)*"
_NOT_RULES = re.compile(
    r"^(?:worry|mind|know|bother|hesitate|be\b|apologi[sz]e|get\b|think|feel|panic|stress|care|"
    r"forget\b|give up|quit\b|lose\b|let\b|dare\b|blame\b|judge\b|laugh\b|cry\b)",
    re.IGNORECASE,
)
# Words after "never" that make it narration or an idiom, not an instruction ("never had a
# chance", "never been", "never a dull moment", "never again am I ...").
_NOT_VERBS = frozenset({
    "a", "an", "the", "again", "ever", "even", "once", "mind", "been", "had", "has", "was",
    "were", "did", "got", "gone", "went", "came", "saw", "seen", "heard", "knew", "made",
    "thought", "said", "told", "felt", "found", "really", "before", "since", "much", "more",
    "that", "this", "it", "i", "you", "we", "they", "he", "she", "there",
})  # fmt: skip
_PERSON = frozenset({"me", "us", "him", "her", "you", "anyone", "anybody", "everyone"})
_WH = frozenset({"how", "what", "who", "why", "where", "when", "whether", "if"})
_DEICTIC = frozenset({"it", "this", "that", "these", "those", "your", "you", "him", "her", "them",
                      "how", "what", "when", "where", "why", "who", "which", "seeing",
                      "hearing"})  # fmt: skip
# "I love the colours", "I love all the yellow leaves": in a chat, what is in front of the
# speaker (a photo, a painting), not a standing preference.
_SHOWN = frozenset({"the", "all", "both", "every", "such", "so", "our", "his", "their"})
# A value that begins with a verb or a preposition is the tail of a relative clause ("the
# things I love makes writing fun", "a pic I got from my walk"), not a thing.
_NOT_THINGS = frozenset({"makes", "made", "is", "was", "are", "were", "has", "had", "helps",
                         "keeps", "gives", "means", "from", "to", "into", "at", "in", "on", "with",
                         "for", "about", "by", "like", "back", "up", "out", "off"})  # fmt: skip
# A value that ends in one of these was cut before its object ("taking walks on").
_CUT = frozenset({"on", "in", "at", "to", "from", "with", "like", "of", "for", "about", "into"})
# What someone "got" that is not a thing they have or an event ("I got some great news",
# "I got a chance to", "a pic I got").
_VAGUE = frozenset({"news", "chance", "call", "message", "text", "idea", "feeling", "pic",
                    "picture", "photo", "sense", "lot", "bit", "time", "way", "point",
                    "look"})  # fmt: skip
_TIME_WORDS = frozenset({"yesterday", "today", "tomorrow", "tonight", "year", "month", "week",
                         "day", "ago", "morning", "evening", "weekend"})  # fmt: skip
# "my X is Y" is a fact only for these slots, or when Y is a name ("My dentist is Dr Rao");
# "my head is spinning" and "my point is that ..." are not.
_SLOT_RE = re.compile(
    r"\b(?:favou?rite|birthday|hometown|job|role|title|team|company|employer|age|pronouns|"
    r"nickname|diet|blood type|shoe size|height|native language|first language)\b"
)
_NOT_NAMES = frozenset({"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
                        "Sunday", "And", "But", "So", "The"})  # fmt: skip
_ABBREVIATION_RE = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|Jr|Sr)\.")
# What a hard constraint ("allergic to X", "I'm avoiding X") runs to: the noun phrase, not
# the reason or time after it.
_AVOID_END = (
    r"(?=\s+(?:so|but|which|because|since|too|either|as well|these days|this|now|anymore|for|"
    r"doctor's)\b|[,.;:!?)]|$)"
)
# A preference said as a change replaces the earlier one on its topic (gate._replaced).
_CHANGED_RE = re.compile(
    r"\b(?:now|actually|these days|nowadays|anymore|no longer|instead|switched)\b", re.IGNORECASE
)
# A past event ("I bought tickets") is not dated by a time that is to come ("…, and I'm
# leaving the day after tomorrow"): that expression belongs to another clause.
_FUTURE_RE = re.compile(r"(?:tomorrow|next\b|this weekend)")
# Quoted speech is someone else's words, and a question states nothing: neither is read.
_STAY = re.compile(
    r"(?i)\b(?:this (?:week(?:end)?|month)|these days|for now|temporarily|"
    r"for (?:the (?:next|coming) |the |a )?(?:few |couple of |two |three |\d+ )?"
    r"(?:days?|weeks?|months?)|"
    r"for (?:a |the )?(?:conference|trip|visit|holiday|vacation|business trip|work trip)|"
    r"on (?:a )?(?:trip|holiday|vacation|business))\b"
)
"""Words that make "I'm living in Madrid" a stay, not a home ("For the next two weeks I'm
living in Madrid", "This week I'm based in Berlin for a conference", "I live in Slack these
days"): no home city is filed from such a sentence."""
_ON_A_SERVICE = re.compile(r"\s+on\s+[A-Z]")
""""I moved to Premium on Spotify": a plan or product on a service, not a place."""
_QUOTED_RE = re.compile(r"\"[^\"]*\"|“[^”]*”")
_QUESTION_RE = re.compile(r"[^.!?]*\?")

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("name", re.compile(r"\b(?:[Mm]y name is|I'm|I am|[Cc]all me)\s+([A-Z][a-z]+)"
                        r"(?=\s*[.,!?]|\s+and\b|$)")),
    ("move", re.compile(r"\bI(?:'ve| have)?\s+(?:just\s+)?(?:moved|relocated|shifted)\s+"
                        r"(?:from\s+" + _PLACE + r"\s+)?to\s+" + _PLACE)),
    ("live", re.compile(r"\bI(?:'m| am)?\s+" + _ADVERB + r"(?:live|living|based|settled)\s+in\s+"
                        + _PLACE)),
    ("joined", re.compile(r"\bI(?:'ve| have)?\s+" + _ADVERB + r"joined\s+" + _PLACE + r"\s+as\s+"
                          + _A + r"([a-z][a-z -]{1,40}?)" + _STOP)),
    ("job_at", re.compile(r"\bI(?:'m| am| work as)\s+" + _ADVERB + _A
                          + r"((?:[A-Z]{2,}\s+)?[a-z][a-z -]{1,40}?)\s+(?:at|for|@)\s+" + _PLACE)),
    ("job", re.compile(r"\bI work as\s+" + _A + _PHRASE)),
    ("job", re.compile(r"\bI(?:'m| am)\s+" + _ADVERB + r"(?:an?\s+)((?:[A-Za-z][\w-]*\s+){0,2}?"
                       r"(?:" + _JOBS + r"))(?:" + _STOP + r"|(?=\s+(?:at|for|in|with)\s))")),
    ("employer", re.compile(r"\bI\s+" + _ADVERB + r"work (?:at|in)\s+(" + _WORKPLACE + r")\b()")),
    ("employer", re.compile(r"\bI\s+" + _ADVERB + r"(?:manage|lead|run|head)\s+(?:an?|the|my)\s+"
                            r"[a-z][\w -]{1,40}?\s+at\s+" + _PLACE + r"()")),
    ("employer", re.compile(r"\bI\s+" + _ADVERB + r"work (?:at|for)\s+" + _PLACE
                            + r"(?:\s+as\s+" + _A + r"([A-Za-z][\w -]{1,40}?)" + _STOP + ")?")),
    ("diet", re.compile(r"\bI(?:'ve| have)?\s+" + _ADVERB + r"(?:went|gone|turned|became|become)\s+"
                        r"(vegan|vegetarian|pescatarian|teetotal)\b")),
    ("diet", re.compile(r"\bI(?:'m| am)\s+(?:also\s+|now\s+|strictly\s+)?(?:an?\s+)?"
                        r"(vegan|vegetarian|pescatarian|teetotal|teetotaller)\b")),
    # a diet given up supersedes it: "I'm no longer vegetarian", "I'm not vegan anymore"
    ("diet", re.compile(r"\bI(?:'m| am)\s+((?:no longer|not)\s+(?:an?\s+)?"
                        r"(?:vegan|vegetarian|pescatarian|teetotal|teetotaller))\b"
                        r"(?=\s*(?:anymore|any more|now)?\s*[,.;!]|\s*$)")),
    ("named_pet", re.compile(r"\bI\s+(?:also\s+)?have\s+(?:a|an)\s+([a-z][a-z -]{1,30}?)\s+"
                             r"(?:named|called)\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*){0,2})")),
    ("family", re.compile(r"\b[Mm]y\s+(" + _COUNT + r"(?:" + _KIN + r")(?:\s+and\s+(?:my\s+)?"
                          + _COUNT + r"(?:" + _KIN + r"))?)\b(?!'s|\s+(?:is|was)\s+(?:called|named)|"
                          r"\s+[A-Z])")),
    ("pets", re.compile(r"\b(?:I|[Ww]e)(?:'ve| have)?\s+" + _ADVERB + r"(?:got|have|adopted)\s+("
                        + r"(?:" + _PET_COUNT + _PETS + r"\s+and\s+" + _PET_COUNT + _PETS + r"|" + _PET_COUNTS
                        + _PETS + r"))\b(?!\s+(?:named|called)\b)")),
    ("kin", re.compile(r"\b[Mm]y\s+(" + _RELATIONS + r")\s+([A-Z][a-z]+)\b")),
    ("plan", re.compile(r"\bI(?:'m| am)\s+(moving|relocating)\s+to\s+" + _PLACE)),
    ("named", re.compile(r"\b[Mm]y\s+([a-z][a-z -]{1,30}?)(?:'s name\s+(?:is|was)|\s+(?:is|was)\s+"
                         r"(?:called|named))\s+" + _PHRASE)),
    ("my_is", re.compile(r"\b[Mm]y\s+([a-z][a-z -]{1,30}?)\s+is\s+(?!a\b|an\b|the\b|so\b|very\b|"
                         r"really\b|not\b|also\b|called\b|named\b|like\b)" + _PHRASE)),
    ("conditional", re.compile(r"\b(?:[Ww]hen|[Ii]f|[Ww]henever)\s+(?:I(?:\s+(?:have|get|am)|'m)\s+)?"
                               r"([^,]{3,60}?),?\s+I\s+(?:usually\s+|always\s+)?"
                               r"(?:switch to\s+|(drink|eat|use|take)\s+)([^,.;:!?]{1,80}?)"
                               + _CLAUSE_END + r"(?:\s+instead of\s+([a-z][\w -]{1,30}?)(?=[,.;!?]|$))?")),
    ("habit", re.compile(r"\bI\s+(?:usually\s+|always\s+)?(drink|eat|use|take)\s+"
                         r"([^,.;:!?]{1,60}?)\s+" + _HABIT)),
    ("allergy", re.compile(r"\bI(?:'m| am)\s+(?:also\s+)?(?:severely\s+|very\s+)?allergic to\s+"
                           r"([^,.;:!?()]{1,60}?)" + _AVOID_END)),
    # "I have a severe peanut allergy", "I have an allergy to shellfish"
    ("allergy", re.compile(r"\bI\s+(?:also\s+)?have\s+(?:a|an)\s+(?:(?:severe|serious|bad|mild|"
                           r"life-threatening)\s+)?(?:([a-z][a-z -]{1,30}?)\s+allergy\b|allergy to\s+"
                           r"([^,.;:!?()]{1,60}?)" + _AVOID_END + ")")),
    ("prefer", re.compile(r"\bI\s+(?:really\s+)?(?:prefer|love)\s+" + _PREFERRED)),
    ("never", re.compile(_RULE_OPEN + r"(never|don't|do not|stop)\s+(?:ever\s+)?"
                         r"([A-Za-z][^,.;!?]{3,150}?)" + _RULE_END, re.IGNORECASE)),
    ("always", re.compile(_RULE_OPEN + r"(always|don't forget to|do not forget to)\s+"
                          r"([A-Za-z][^,.;!?]{3,150}?)" + _RULE_END, re.IGNORECASE)),
    ("avoid", re.compile(r"\bI(?:'m| am)?\s+(?:(?:also|now|strictly)\s+)?(?:avoid|avoiding|"
                         r"can't (?:have|eat|drink)|cannot (?:have|eat|drink))"
                         r"\s+([a-z][\w -]{1,40}?)" + _AVOID_END)),
    ("event", re.compile(r"\b(?:I|[Ww]e)\s+" + _ADVERB + r"(went to|visited|attended|got|received|"
                         r"bought|adopted|started|finished|won|lost|watched)\s+" + _PHRASE)),
    ("given", re.compile(r"\b[Mm]y\s+([a-z]+)\s+gave me\s+" + _PHRASE)),
]  # fmt: skip


def _clean(value: str) -> str:
    return " ".join(value.strip(" '\"").split())


def _instruction(action: str, habit: bool = False) -> bool:
    """Whether the words after never/don't/stop/always tell the assistant what (not) to do:
    a base-form verb (not narration, "never had"), not an idiom ("don't give up", "don't
    worry"), not about a person addressed ("stop me if", "don't tell anyone", "don't ask how"),
    and with something to do ("don't answer that" and "never give up!" have nothing). A habit
    to stop ("stop asking if I need anything else") may go on with if/how."""
    words = action.split()
    first = words[0].lower()
    if first in _NOT_VERBS or _NOT_RULES.match(action) or words[0][:1].isupper():
        return False
    stops = _PERSON if habit else _PERSON | _WH
    if first.endswith("ed") or (len(words) > 1 and words[1].lower() in stops):
        return False
    rest = {w for w in normal_words(" ".join(words[1:])) if w not in STOPWORDS} - _PERSON
    return bool(rest)


def _concrete(value: str) -> bool:
    """Whether a preference or event value names a thing: not "it", "this quote", "your
    idea", "the way he writes" (what is in front of the speaker, or a pronoun for someone
    else's words), nor only time words ("I got it a year ago")."""
    words = value.lower().split()
    if not words or words[0] in _DEICTIC | _TIME_WORDS | _NOT_THINGS or words[-1] in _CUT:
        return False
    content = {w for w in normal_words(value) if w not in STOPWORDS}
    vague = {w.strip(".,!?'\"") for w in words} & _VAGUE
    return " ".join(words[:2]) != "the way" and not vague and bool(content - _TIME_WORDS)


def _liked(value: str) -> bool:
    """Whether what someone says they love is a standing preference: a thing named, not what
    is in front of them ("the colours", "all the yellow leaves") or pointed at ("that world")."""
    words = set(value.lower().split())
    return _concrete(value) and value.split()[0].lower() not in _SHOWN and not words & _DEICTIC


def _said(text: str) -> str:
    """The line without quoted speech and questions."""
    return _QUESTION_RE.sub(" ", _QUOTED_RE.sub(" … ", text))


def _from_line(line: SourceLine, instructions: bool) -> Iterator[Claim]:
    text, cite = _said(_ABBREVIATION_RE.sub(r"\1", line.text)), (line.ref,)
    when = find_when(text)
    taken: set[str] = set()
    for name, pattern in _PATTERNS:
        if name in ("never", "always") and not instructions:
            continue
        for match in pattern.finditer(text):
            if name in taken and name not in ("never", "always", "event"):
                continue
            claims = list(_claims(name, match, when, cite, text))
            if claims:
                taken.add(name)
                if name in ("move", "live"):
                    taken.update(("move", "live"))
                if name in ("joined", "job_at", "job"):
                    taken.update(("joined", "job_at", "job", "employer"))
                if name in ("named", "my_is", "kin"):
                    taken.update(("named", "my_is", "kin"))
                if name in ("conditional",):
                    taken.update(("habit", "prefer"))
            yield from claims


def _claims(
    name: str, m: re.Match[str], when: str, cite: tuple[str, ...], text: str
) -> Iterator[Claim]:
    state = {"kind": "state", "cites": cite}
    if name in ("move", "live") and (_STAY.search(text) or _ON_A_SERVICE.match(text, m.end())):
        return  # a stay or a switch of tools, not a home: "based in Berlin for a conference"
    if name == "name":
        yield Claim(attribute="name", value=m.group(1), **state)
    elif name == "move":
        yield Claim(attribute="home city", value=_clean(m.group(2)), when=when, **state)
    elif name == "live":
        yield Claim(attribute="home city", value=_clean(m.group(1)), **state)
    elif name == "joined":  # dated like a move: "I joined Google as an engineer in April"
        yield Claim(attribute="employer", value=_clean(m.group(1)), when=when, **state)
        yield Claim(attribute="role", value=_clean(m.group(2)), when=when, **state)
    elif name == "job_at":  # "I'm still at Wipro": an employer, and no role "still"
        if not re.fullmatch(_ADVERB.rstrip("?"), m.group(1) + " "):
            yield Claim(attribute="role", value=_clean(m.group(1)), **state)
        yield Claim(attribute="employer", value=_clean(m.group(2)), **state)
    elif name == "job":
        yield Claim(attribute="role", value=_clean(m.group(1)), **state)
    elif name == "employer":
        yield Claim(attribute="employer", value=_clean(m.group(1)), **state)
        if m.group(2):
            yield Claim(attribute="role", value=_clean(m.group(2)), **state)
    elif name in ("family", "pets"):  # facts: they add up ("my kids", then "my husband")
        yield Claim(kind="fact", attribute=name, value=_clean(m.group(1)).lower(), cites=cite)
    elif name == "kin" and m.group(2) not in _NOT_NAMES:
        yield Claim(attribute=m.group(1).lower(), value=m.group(2), **state)
    elif name == "diet":
        yield Claim(attribute="diet", value=m.group(1).lower(), **state)
    elif name == "named_pet":
        yield Claim(attribute=_clean(m.group(1)).lower(), value=_clean(m.group(2)), **state)
    elif name == "plan" and when:
        yield Claim(
            kind="event",
            attribute="plans",
            value=f"{m.group(1)} to {_clean(m.group(2))}",
            when=when,
            cites=cite,
        )
    elif name in ("named", "my_is"):
        attribute, value = _clean(m.group(1)).lower(), _clean(m.group(2))
        slot = name == "named" or value[:1].isupper() or _SLOT_RE.search(attribute)
        if attribute and value and len(value.split()) <= 8 and slot:
            yield Claim(attribute=attribute, value=value, **state)
    elif name == "habit":
        attribute = _VERB_ATTRIBUTE[m.group(1).lower()]
        period = m.group(3)
        yield Claim(
            attribute=f"{period} {attribute}".strip() if period else attribute,
            value=_clean(m.group(2)),
            **state,
        )
    elif name == "conditional":
        verb = m.group(2)
        attribute = _VERB_ATTRIBUTE[verb.lower()] if verb else "switches to"
        extra = {"instead_of": _clean(m.group(4))} if m.group(4) else {}
        yield Claim(
            attribute=attribute,
            value=_clean(m.group(3)),
            condition=_clean(m.group(1)),
            extra=extra,
            **state,
        )
    elif name == "allergy":
        allergen = _clean(m.group(1) or m.group(2))
        yield Claim(kind="fact", attribute="allergic to", value=allergen, cites=cite)
        yield _avoid(allergen, cite)
    elif name == "avoid":
        thing = _clean(m.group(1))
        if thing.split()[0].lower() not in _NOT_VERBS | {"any", "my", "your", "to"}:
            yield _avoid(thing, cite)
    elif name == "prefer" and _liked(m.group(1)):
        changed = {"changed": True} if _CHANGED_RE.search(text) else {}
        yield Claim(
            kind="preference",
            attribute="prefers",
            value=_clean(m.group(1)),
            cites=cite,
            extra=changed,
        )
    elif name == "never":
        action = _clean(m.group(2))
        gerund = action.split()[0].lower().endswith("ing")  # "stop using X", "never use X"
        stop = m.group(1).lower() == "stop"
        if not _instruction(action, habit=stop) or gerund != stop:
            return
        yield Claim(
            kind="rule",
            attribute=f"forbidden_{slug(action)}",
            value=action,
            prohibited=True,
            cites=cite,
        )
    elif name == "always":
        action = _clean(m.group(2))
        if _instruction(action) and not action.split()[0].lower().endswith("ing"):
            yield Claim(kind="rule", attribute=f"always_{slug(action)}", value=action, cites=cite)
    elif name == "event" and when and _concrete(m.group(2)) and not _FUTURE_RE.match(when):
        yield Claim(
            kind="event",
            attribute=m.group(1).lower(),
            value=re.sub(r"^(?:myself|ourselves)\s+", "", _clean(m.group(2)) + _and_one(text, m)),
            when=when,
            cites=cite,
        )
    elif name == "given" and when:
        yield Claim(
            kind="event",
            attribute=f"gift from {m.group(1).lower()}",
            value=_clean(m.group(2)),
            when=when,
            cites=cite,
        )


_AND_ONE_RE = re.compile(r"\s+and\s+((?:a|an|the|my|two|three)\s+[a-z]+)" + _STOP)


def _and_one(text: str, m: re.Match[str]) -> str:
    """The second of two things ("adopted a pup and a kitty"): one word after its article,
    so a clause ("and the kids loved it") is never taken for it."""
    more = _AND_ONE_RE.match(text, m.end())
    return f" and {more.group(1)}" if more else ""


def _avoid(thing: str, cite: tuple[str, ...]) -> Claim:
    """A hard constraint (an allergy, a diet) is a rule: hoisted, never suggested."""
    return Claim(
        kind="rule", attribute=f"avoid_{slug(thing)}", value=thing, prohibited=True, cites=cite
    )


def rule_claims(lines: Sequence[SourceLine]) -> list[Claim]:
    """Claims from what each person said (or wrote as notes), filed under the speaker: the
    user's lines under ``user``, a named speaker's under their name (``speaker_entity``);
    the assistant's, the system's and tools' lines are skipped.

    A named speaker, and the user talking with one, sets a never/always rule only in a session
    where an assistant speaks (in a chat between two friends "don't forget to call" or "don't
    overthink it" is said to the friend, not an instruction to an assistant);
    their hard constraints (an allergy) still become rules. Notes, documents and tool output
    without a role are read too; ``verify.check_speaker`` keeps their never/always sentences
    from becoming rules."""
    helped = {line.session_id for line in lines if line.role in HELPERS}
    people = {
        line.session_id
        for line in lines
        if line.role is not None and speaker_entity(line.role) not in (None, "user")
    }
    claims: list[Claim] = []
    for line in lines:
        entity = "user" if line.role is None else speaker_entity(line.role)
        if entity is None:
            continue
        alone = entity == "user" and line.session_id not in people
        instructions = alone or line.session_id in helped
        claims.extend(replace(c, entity=entity) for c in _from_line(line, instructions))
    return claims
