"""``redact``: find secrets in text and replace each with ``[REDACTED:<kind>]``.

Secrets never reach a model. Everything orcamem sends to a language model (consolidation
batches, extraction jobs, prompts built from episodes, every prompt block through
``recall.blocks.quote``) goes through :func:`redact` first, an explicit save holding a secret
is refused (:func:`refuse_secrets`), and
anything a model gives back that still matches :func:`find_secrets` is rejected before it is
stored. Episodes themselves are kept as written (they are the user's own record, on the user's
disk); only what leaves for a model, or is derived by one, is redacted. A model provider may log
prompts, train on them, or echo them into a memory that is later shown in another context, so
the only safe secret is one that was never sent.

What is detected (``kind`` in brackets):

- private key blocks: PEM (RSA, EC, DSA, PKCS#8, encrypted), OpenSSH and PGP, from ``BEGIN`` to
  ``END`` (or to the end of the paragraph when the block was cut off), and a key's body lines
  without their ``BEGIN`` (two or more lines of 48–76 random base64 characters) [``private_key``];
- AWS access key ids (``AKIA…``, ``ASIA…``) [``aws_access_key_id``] and AWS secret keys in
  assignments (``aws_secret_access_key = …``) [``aws_secret_key``];
- GitHub tokens ``ghp_ gho_ ghu_ ghs_ ghr_`` and ``github_pat_`` [``github_token``], GitLab
  ``glpat-`` [``gitlab_token``], Hugging Face ``hf_`` [``huggingface_token``], npm ``npm_``
  [``npm_token``];
- OpenAI keys ``sk-…``, ``sk-proj-…`` [``openai_key``]; Anthropic ``sk-ant-…``
  [``anthropic_key``]; Slack ``xox[abposr]-…`` [``slack_token``] and webhook URLs
  [``slack_webhook``]; Stripe ``sk_live_``/``rk_live_`` (and ``_test_``) [``stripe_key``];
  Google API keys ``AIza…`` [``google_api_key``]; JSON Web Tokens ``eyJ….eyJ….…`` [``jwt``];
- ``Authorization:`` header values [``authorization``] and ``Bearer <token>`` [``bearer_token``];
- assignments whose key names a secret — ``password``, ``passwd``, ``pwd``, ``passphrase``,
  ``secret``, ``token``, ``api_key``, ``access_key``, ``private_key``, ``client_secret``,
  ``credentials`` … as a whole key or its last part (``DB_PASSWORD``, ``github.token``,
  ``apiKey``) — in ``key=value``, ``key: value``, JSON ``"key": "value"``, ``--key value`` and
  ``password is "…"`` forms; only the value is replaced [``password``, ``token``, ``api_key``,
  ``secret``]. A plain word as the key followed by prose (``Token: the unit a model reads``)
  is not an assignment; an identifier always is (``api_key: supersecretvalue rotated``);
- credentials in URLs of any scheme (``postgresql``, ``mongodb+srv``, ``https``,
  ``git+https``, ``ssh``, ``wss``, ``jdbc:postgresql`` …) ``://user:password@host`` — the
  ``user:password`` part [``connection_string``];
- payment card numbers that pass the Luhn check (13–19 digits together, or in their printed
  groups) [``card_number``]; a social security number said as one (``SSN: 123-45-6789``)
  [``ssn``]; a PIN, CVV or card security code said with its name (``my PIN is 9931``) [``pin``];
- any other assignment whose value is a long random-looking token (20+ characters of letters,
  digits and ``+/=_-`` mixing upper case, lower case and digits, with high character entropy)
  [``high_entropy``].

Things that look alike but are not secrets are left alone: "my password manager is
1Password", "the token ring network", git SHAs and UUIDs (hex only), URLs without a password,
``max_tokens: 256``, type annotations such as ``password: str``, and template references
(``${DB_PASSWORD}``). Redaction is idempotent (``redact(redact(x).text).text == redact(x).text``)
and its output never contains a finding of its own.

>>> redact("export GITHUB_TOKEN=ghp_" + "a1B2" * 9).text
'export GITHUB_TOKEN=[REDACTED:github_token]'
>>> redact("the token ring network").findings
()
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InvalidInputError

__all__ = [
    "KINDS",
    "Finding",
    "Redacted",
    "find_secrets",
    "has_secrets",
    "marker",
    "redact",
    "refuse_secrets",
    "safe_url",
    "summary_of",
    "value_secrets",
]

KINDS = (
    "private_key",
    "aws_access_key_id",
    "aws_secret_key",
    "github_token",
    "gitlab_token",
    "huggingface_token",
    "npm_token",
    "anthropic_key",
    "openai_key",
    "slack_token",
    "slack_webhook",
    "stripe_key",
    "google_api_key",
    "jwt",
    "authorization",
    "bearer_token",
    "connection_string",
    "card_number",
    "ssn",
    "pin",
    "password",
    "token",
    "api_key",
    "secret",
    "high_entropy",
)
"""Every ``kind`` a finding can have, most specific first (the order overlaps are settled in)."""

_PRIORITY = {kind: rank for rank, kind in enumerate(KINDS)}


@dataclass(frozen=True)
class Finding:
    """One secret in a text: ``text[start:end]`` is what gets replaced.

    The secret itself is deliberately not kept, so a finding can be logged.
    """

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class Redacted:
    """The redacted text and what was removed (offsets into the original text)."""

    text: str
    findings: tuple[Finding, ...]

    def __bool__(self) -> bool:  # "was anything redacted?"
        return bool(self.findings)


def marker(kind: str) -> str:
    """The text that replaces a secret of ``kind``."""
    return f"[REDACTED:{kind}]"


# -- value tests -------------------------------------------------------------------------------


def _entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def _classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )


_TOKEN_CHARS = re.compile(r"[A-Za-z0-9+/=_-]+")
_HEX_ID = re.compile(r"[0-9a-fA-F-]+")


def _looks_random(value: str) -> bool:
    """A long random token: not a word, not a hex id, not a path or version."""
    return (
        len(value) >= 20
        and _TOKEN_CHARS.fullmatch(value) is not None
        and not _HEX_ID.fullmatch(value)
        and _classes(value) == 3
        and _entropy(value) >= 3.5
    )


def _has_digit_and_letter(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _tokenish(value: str) -> bool:
    """A credential-looking word: contains a digit, or is long."""
    return (any(c.isdigit() for c in value) and len(value) >= 8) or len(value) >= 20


# Values after a secret-named key that are not secrets: types, empty markers, booleans.
_NOT_SECRET_VALUES = frozenset(
    {
        *("str", "string", "bytes", "int", "any", "optional", "secretstr"),
        *("none", "null", "nil", "true", "false", "undefined", "unset", "empty"),
        *("required", "redacted", "hidden", "masked"),
    }
)


def _word(key: str) -> bool:
    """A plain word (``Token``, ``password``), not an identifier (``api_key``, ``dbPassword``)."""
    return key.isalpha() and (key.islower() or key.isupper() or key.istitle())


def _secret_value(value: str, *, quoted: bool, colon: bool, rest: str, key: str) -> bool:
    """Is this assignment value a secret (rather than a type, placeholder or prose)?"""
    if value.startswith("[REDACTED:") or len(set(value)) == 1:
        return False  # already redacted, or a mask ("********")
    if not quoted and not any(c.isalnum() for c in value):
        return False  # Markdown or punctuation ("**Password:** …")
    if not quoted and value.rstrip(".").lower() in _NOT_SECRET_VALUES:
        return False
    # "Token: the unit a model reads" is prose, not a credential: a plain word as the key, a
    # plain word after its colon, more words on the line ("api_key: hunter two" is no prose)
    return not (
        colon
        and not quoted
        and _word(key)
        and value.isalpha()
        and re.match(r"[ \t]+[A-Za-z]", rest) is not None
    )


# -- patterns ----------------------------------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----|.*?(?=\n[ \t]*\n|\Z))",
    re.S,
)

_KEY_LINES = re.compile(
    r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{40,76}={0,2}(?:\s+[A-Za-z0-9+/]{40,76}={0,2})*"
    r"(?:\s+[A-Za-z0-9+/]{1,39}(?:={1,2}|(?=\s*-----END)))?(?![A-Za-z0-9+/=])"
)
"""A key's body without its ``BEGIN`` line: a run of base64 lines of 40–76 characters (PEM's
are 64, OpenSSH's 70; a long key is cut into several passages, joined by spaces, and the later
ones hold no ``BEGIN``) and its short last line. It counts when two of them mix upper case,
lower case and digits (hex digests do not), or when one such line is the whole text."""

_KEY_TAIL = re.compile(
    r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{1,39}={0,2}(?=\s*-----END[ A-Z0-9]{0,30}PRIVATE KEY)"
)
"""A key's last line alone before its ``END`` line (the lines before it cut off)."""

_CARD = re.compile(
    r"(?<![\d.,-])(?:[2-6]\d{12,18}|\d{4}(?:[ -]\d{4}){3}(?:[ -]\d{1,3})?|\d{4}[ -]\d{6}[ -]\d{5})"
    r"(?![\d.,]\d|-\d)"
)
"""A payment card number: 13–19 digits together (starting as issuers' do) or in its printed
groups (4-4-4-4, Amex's 4-6-5), kept only when its Luhn check digit is right."""
_NUMBERED = re.compile(
    r"(?i)\b(?:(?P<ssn_key>social[ -]security(?:[ -]number)?|ssn)(?:[ \t]+(?:is|was))?[ \t]*[:=#]?[ \t]*(?P<ssn>\d{3}-\d{2}-\d{4})"
    r"|(?P<pin_key>pin(?:[ -]?(?:code|number))?|cvv2?|cvc|security[ -]code)"
    r"(?:[ \t]+(?:is|was))?[ \t]*[:=]?[ \t]*(?P<pin>\d{3,8}))\b"
)
"""A social security number or a PIN, CVV or card security code, said with its name."""


def _luhn(digits: str) -> bool:
    total = 0
    for i, char in enumerate(reversed(digits)):
        n = int(char) * (2 if i % 2 else 1)
        total += n - 9 if n > 9 else n
    return total % 10 == 0 and len(set(digits)) > 1


# (kind, pattern, group holding the secret, validator of that group)
_Validator = Callable[[str], bool] | None
_SIMPLE: list[tuple[str, re.Pattern[str], int, _Validator]] = [
    (
        "aws_access_key_id",
        re.compile(
            r"(?<![A-Za-z0-9])((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16})(?![A-Za-z0-9])"
        ),
        1,
        None,
    ),
    (
        "github_token",
        re.compile(
            r"(?<![A-Za-z0-9_])((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"
        ),
        1,
        None,
    ),
    (
        "gitlab_token",
        re.compile(r"(?<![A-Za-z0-9_-])(glpat-[A-Za-z0-9_-]{20,64})(?![A-Za-z0-9_-])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "huggingface_token",
        re.compile(r"(?<![A-Za-z0-9_])(hf_[A-Za-z0-9]{30,64})(?![A-Za-z0-9_])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "npm_token",
        re.compile(r"(?<![A-Za-z0-9_])(npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "anthropic_key",
        re.compile(r"(?<![A-Za-z0-9_-])(sk-ant-[A-Za-z0-9_-]{20,255})(?![A-Za-z0-9_-])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "openai_key",
        re.compile(r"(?<![A-Za-z0-9_-])(sk-(?!ant-)[A-Za-z0-9_-]{20,255})(?![A-Za-z0-9_-])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9_-])(xox[abposr]-[A-Za-z0-9-]{10,255})(?![A-Za-z0-9_-])"),
        1,
        _has_digit_and_letter,
    ),
    (
        "slack_webhook",
        re.compile(r"(https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9_/+-]{20,255})"),
        1,
        None,
    ),
    (
        "stripe_key",
        re.compile(
            r"(?<![A-Za-z0-9_])((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,255})(?![A-Za-z0-9_])"
        ),
        1,
        None,
    ),
    (
        "google_api_key",
        re.compile(r"(?<![A-Za-z0-9_-])(AIza[0-9A-Za-z_-]{35})(?![A-Za-z0-9_-])"),
        1,
        None,
    ),
    (
        "jwt",
        re.compile(
            r"(?<![A-Za-z0-9_-])(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"
        ),
        1,
        None,
    ),
    (
        "bearer_token",
        re.compile(r"(?i)(?<![A-Za-z0-9])bearer[ \t]+([A-Za-z0-9._~+/-]+=*)(?![A-Za-z0-9._~+/=-])"),
        1,
        _tokenish,
    ),
]

# "Authorization: Bearer x", "authorization=Basic x", "Proxy-Authorization: x"
_AUTHORIZATION = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(bearer|basic|token|digest|negotiate|ntlm|apikey|key|aws4-hmac-sha256)[ \t]+)?"
    r"([A-Za-z0-9._~+/=:,-]+)"
)

# URL credentials: scheme://user:password@host
_URL_CREDENTIALS = re.compile(  # any scheme: git+https, ssh, rtsp, wss, jdbc:postgresql …
    r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{0,30}(?::[a-z][a-z0-9+.-]{0,30})?://"
    r"([^\s/@:\[\]\"'<>]*:[^\s/\"'<>]+)@"
)

# Keys that name a secret, as the whole key or its last part (after any prefix of up to 24
# letters/digits, or after "_", ".", "-").
_SECRET_WORDS = (
    r"(?:passwords?|passwd|passphrase|pwd|secret|client[_-]?secret|secret[_-]?key|token|"
    r"access[_-]?token|refresh[_-]?token|auth[_-]?token|api[_-]?key|apikey|"
    r"(?:access|private|signing|encryption|master|auth|client)[_-]?key|credentials?)"
)
_KEY = rf"(?<![A-Za-z0-9])(?P<key>[A-Za-z0-9]{{0,24}}?{_SECRET_WORDS}|pass)(?![A-Za-z0-9])"
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]{1,512})\"?|'(?P<sq>[^'\n]{1,512})'?|`(?P<bq>[^`\n]{1,512})`?|"
    # a template or variable reference ($X, ${X}, $(cmd), %(x)s, %X%) is not a secret
    r"(?P<bare>(?!\$[{(]|\$[A-Za-z_]\w*(?![^\s\"'`,;()<>\[\]{}])|%\(|%[A-Za-z_]\w*%)"
    r"[^\s\"'`,;()<>\[\]{}]{1,512}))"
)
_ASSIGNMENT = re.compile(
    # a closing quote or Markdown emphasis may sit on either side of the separator
    rf"(?i){_KEY}(?:[\"']|\*{{1,2}})?[ \t]*(?P<sep>=>|:=|=(?!=)|:(?!:))\*{{0,2}}[ \t]*{_VALUE}",
)
# --password hunter2, --api-key=abc
_FLAG = re.compile(
    r"(?i)(?<![A-Za-z0-9-])--(?P<key>password|passwd|passphrase|token|api-key|apikey|secret|"
    r"client-secret|access-token|auth-token)(?:[ \t]+|=)" + _VALUE
)
# "my password is hunter2", 'the passphrase was "correct horse"'
_SAID = re.compile(
    r"(?i)(?<![A-Za-z0-9])(?P<key>password|passcode|passphrase)[ \t]+(?:is|was)[ \t]*:?[ \t]+"
    + _VALUE
)
# any other key = long random token
_GENERIC = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,63})[\"']?[ \t]*(?:=>|:=|=(?!=)|:(?!:))"
    r"[ \t]*[\"']?(?P<bare>[A-Za-z0-9+/=_-]{20,512})"
)


def _assignment_kind(key: str) -> str:
    lowered = key.lower().replace("-", "_")
    if "aws" in lowered or "secret_access" in lowered or "secretaccess" in lowered:
        return "aws_secret_key"
    if "pass" in lowered or "pwd" in lowered:
        return "password"
    if "token" in lowered:
        return "token"
    if "api" in lowered:
        return "api_key"
    return "secret"


def _full_key(text: str, start: int, end: int) -> str:
    """The whole identifier a key match ends (``aws_secret_access_key``, not ``access_key``)."""
    while (
        start > 0 and start > end - 96 and (text[start - 1].isalnum() or text[start - 1] in "_.-")
    ):
        start -= 1
    return text[start:end]


def _value_span(match: re.Match[str]) -> tuple[int, int, str, bool]:
    for group, quoted in (("dq", True), ("sq", True), ("bq", True), ("bare", False)):
        if match.group(group) is not None:
            return match.start(group), match.end(group), match.group(group), quoted
    raise AssertionError("a value group always matches")  # pragma: no cover


# Cheap tests that a family of patterns can match at all: every block reaching a model is
# redacted on the read path, and most text holds no secret (each hint over-approximates).
_SIMPLE_HINT = re.compile(
    r"A[A-Z]{3}[A-Z0-9]{16}|gh[opusr]_|github_pat_|glpat-|hf_|npm_|sk-|xox[abposr]-|"
    r"hooks\.slack\.com|[rs]k_(?:live|test)_|AIza|eyJ|(?i:bearer)"
)
# each assignment form with its hint: a secret word, then (after its last letters) a separator
_ASSIGNMENT_FORMS = (
    (
        _ASSIGNMENT,
        re.compile(r"(?i)(?:pass|pwd|secret|token|key|credential)[a-z]*[\"'*]{0,2}[ \t]*[=:]"),
    ),
    (_FLAG, re.compile(r"--(?i:pass|token|api|secret|client|access|auth)")),
    (_SAID, re.compile(r"(?i)pass[a-z]*[ \t]+(?:is|was)")),
)
_GENERIC_HINT = re.compile(r"[=:>][ \t]*[\"']?[A-Za-z0-9+/=_-]{20}")


def _raw_findings(text: str) -> Iterator[Finding]:
    if "PRIVATE KEY" in text:
        for match in _PRIVATE_KEY.finditer(text):
            yield Finding("private_key", match.start(), match.end())
        for match in _KEY_TAIL.finditer(text):
            yield Finding("private_key", match.start(), match.end())
    for match in _KEY_LINES.finditer(text):
        lines = [line for line in match.group().split() if len(line.rstrip("=")) >= 40]
        random = [line for line in lines if _classes(line) == 3]
        if len(random) >= 2 or (random and match.group() == text.strip()):
            yield Finding("private_key", match.start(), match.end())
    for match in _CARD.finditer(text):
        if _luhn(re.sub(r"[ -]", "", match.group())):
            yield Finding("card_number", match.start(), match.end())
    for match in _NUMBERED.finditer(text):
        group = "ssn" if match.group("ssn") else "pin"
        yield Finding(group, match.start(group), match.end(group))
    for kind, pattern, group, valid in _SIMPLE if _SIMPLE_HINT.search(text) else ():
        for match in pattern.finditer(text):
            if valid is None or valid(match.group(group)):
                yield Finding(kind, match.start(group), match.end(group))
    if "authorization" in text.lower():
        yield from _authorization(text)
    if "://" in text:
        for match in _URL_CREDENTIALS.finditer(text):
            yield Finding("connection_string", match.start(1), match.end(1))
    yield from _assignments(text)
    if _GENERIC_HINT.search(text):
        for match in _GENERIC.finditer(text):
            if _looks_random(match.group("bare")):
                yield Finding("high_entropy", match.start("bare"), match.end("bare"))


def _authorization(text: str) -> Iterator[Finding]:
    for match in _AUTHORIZATION.finditer(text):
        value = match.group(2)
        if value.startswith("[REDACTED:"):
            continue
        if (match.group(1) and len(value) >= 4) or _tokenish(value):
            yield Finding("authorization", match.start(2), match.end(2))


def _assignments(text: str) -> Iterator[Finding]:
    for pattern, hint in _ASSIGNMENT_FORMS:
        for match in pattern.finditer(text) if hint.search(text) else ():
            start, end, value, quoted = _value_span(match)
            sep = match.groupdict().get("sep") or ""
            if (
                pattern is _SAID
                and not quoted
                and not (any(not c.isalpha() for c in value) and len(value) >= 4)
            ):
                continue  # "my password is stored in 1Password": prose, unless it looks typed
            key = _full_key(text, match.start("key"), match.end("key"))
            rest = text[end : end + 3]
            if _secret_value(value, quoted=quoted, colon=sep == ":", rest=rest, key=key):
                yield Finding(_assignment_kind(key), start, end)


def _merge(findings: list[Finding]) -> list[Finding]:
    """Sort and merge overlapping or touching findings; the most specific kind names the merge."""
    merged: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if merged and finding.start <= merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, finding.kind, key=_PRIORITY.__getitem__)
            merged[-1] = Finding(kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    return merged


_INVISIBLE = frozenset("\u00ad\u180e\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff")


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    """One character as the patterns read it: a format character (zero-width space, soft
    hyphen, BOM) is nothing, a line separator a newline, any other space a plain space, a
    compatibility form (fullwidth ``ｓｋ``) its NFKC character when that is one character."""
    if char in _INVISIBLE or unicodedata.category(char) == "Cf":
        return ""
    if char in "\u0085\u2028\u2029":  # line and paragraph separators end a line
        return "\n"
    if char.isspace():
        return char if char in "\t\n\r\f\v" else " "
    folded = unicodedata.normalize("NFKC", char)
    return folded if len(folded) == 1 else char


def _folded(text: str) -> tuple[str, list[int]] | None:
    """``text`` folded (:func:`_fold_char`) with each folded character's offset in ``text``,
    or ``None`` when folding changes nothing (all ASCII, the common case)."""
    if text.isascii():
        return None
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        folded = _fold_char(char)
        if folded:
            chars.append(folded)
            origin.append(index)
    folded_text = "".join(chars)
    return None if folded_text == text else (folded_text, origin)


def find_secrets(text: str) -> list[Finding]:
    """Every secret in ``text``, sorted by position, none overlapping.

    The patterns read the text folded (:func:`_fold_char`), so ``password\u00a0=\u00a0…`` or
    ``sk-\u200b…`` is the secret its plain form is; offsets are ``text``'s.

    Removing a secret can expose its neighbour (``-----END … KEY-----xoxb-…`` only reads as a
    Slack token once the key block is gone), so findings are looked for again in the redacted
    text and mapped back until nothing new appears: one replacement pass then leaves no secret.

    >>> find_secrets("password=hunter2")
    [Finding(kind='password', start=9, end=16)]
    """
    folded = _folded(text)
    if folded is not None:
        plain, origin = folded
        return _merge(
            [Finding(f.kind, origin[f.start], origin[f.end - 1] + 1) for f in _find_plain(plain)]
        )
    return _find_plain(text)


def _find_plain(text: str) -> list[Finding]:
    findings = _merge([f for f in _raw_findings(text) if f.end > f.start])
    for _ in range(8 if findings else 0):  # nothing removed: nothing can be exposed
        replaced, back = _replace_mapped(text, findings)
        exposed = [f for f in _raw_findings(replaced) if f.end > f.start]
        if not exposed:
            break
        findings = _merge(
            findings + [Finding(f.kind, back(f.start, False), back(f.end, True)) for f in exposed]
        )
    return findings


def has_secrets(text: str) -> bool:
    """Does ``text`` contain anything :func:`find_secrets` would report?"""
    return bool(find_secrets(text))


def refuse_secrets(text: str, *, what: str) -> str:
    """``text``, unless it holds a secret: an explicit save refuses it rather than store it.

    A saved memory is shown to a model before later turns (every block quotes it redacted, but
    a memory holding only ``[REDACTED:…]`` is worth nothing), so the caller is told which kind
    was found and to save again without it.

    Raises:
        InvalidInputError: naming ``what`` and the kinds found; nothing was stored.
    """
    kinds = sorted({finding.kind for finding in find_secrets(text)})
    if kinds:
        raise InvalidInputError(
            f"{what} holds what looks like a secret ({', '.join(kinds)}), so it was not stored: "
            "memories are shown to a model, so remove the secret (or refer to where it is "
            "kept) and save again"
        )
    return text


def value_secrets(attribute: str | None, value: str | None) -> list[Finding]:
    """The secrets in ``value`` once it is read beside its ``attribute``, as a block shows a
    state (``db password: hunter2xyz``): each field alone holds none, the pair does. Offsets
    are into ``value``; a finding that reaches into the attribute starts at 0."""
    if not attribute or not value:
        return []
    head = f"{attribute}: "
    return [
        Finding(f.kind, max(f.start - len(head), 0), f.end - len(head))
        for f in find_secrets(head + value)
        if f.end > len(head)
    ]


def summary_of(texts: Iterable[str]) -> str | None:
    """A derived memory's ``summary``: the lines it was distilled from, joined and redacted
    (it is searched and served beside the memory, and a memory holds no secret)."""
    joined = " ".join(texts)
    return redact(joined).text if joined else None


def _replace(text: str, findings: list[Finding]) -> str:
    return _replace_mapped(text, findings)[0]


def _replace_mapped(text: str, findings: list[Finding]) -> tuple[str, Callable[[int, bool], int]]:
    """The text with each finding replaced by its marker, and a map from offsets in that text
    back to offsets in ``text`` (an offset inside a marker maps to its finding's start or end)."""
    parts: list[str] = []
    spans: list[tuple[int, int, Finding]] = []  # (start, end) of each marker in the output
    position = out = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        out += finding.start - position
        label = marker(finding.kind)
        parts.append(label)
        spans.append((out, out + len(label), finding))
        out += len(label)
        position = finding.end
    parts.append(text[position:])

    def back(offset: int, is_end: bool) -> int:
        shift = 0
        for start, end, finding in spans:
            if offset < start or (is_end and offset == start):
                break
            if offset < end or (is_end and offset == end):
                return finding.end if is_end else finding.start
            shift = finding.end - end
        return offset + shift

    return "".join(parts), back


def redact(text: str) -> Redacted:
    """Replace every secret in ``text`` with ``[REDACTED:<kind>]``.

    ``findings`` are offsets into ``text`` (the input); the output holds no finding of its own.

    >>> redact("postgres://app:s3cret@db.internal:5432/app").text
    'postgres://[REDACTED:connection_string]@db.internal:5432/app'
    """
    findings = find_secrets(text)
    return Redacted(_replace(text, findings), tuple(findings))


_URL_PASSWORD = re.compile(r"(//[^/:@\s]*):[^/@\s]*@")


def safe_url(url: str) -> str:
    """The URL with its password replaced by ``…``: what every message and listing shows of a
    database or upstream URL.

    >>> safe_url("postgresql://orca:S3cret@db.internal/orcamem")
    'postgresql://orca:…@db.internal/orcamem'
    """
    return _URL_PASSWORD.sub(r"\1:…@", url)
