"""Every token format the redaction patterns cover, each one generated and redacted (AUD-3, INV-10).

``spec.secret_corpus`` holds one fabricated secret per pattern, so a pattern narrowed to the one
alternative its example takes (``gh[pousr]_`` to ``ghp_``) kept every test green. Here
:data:`FORMATS` is a table of every format each pattern of :data:`spec.redaction.PATTERNS` is meant
to cover, written out from the providers' documented shapes: each GitHub prefix, each Stripe
kind and mode, each Slack token type, every keyword of an environment assignment, a private key
block with and without its end line, and so on.

* :func:`test_every_alternative_of_every_pattern_has_a_row` reads the alternatives off the
  compiled patterns (``re._parser``: branches, small character sets such as ``[pousr]`` and
  optional literals expanded; runs of a character class kept as a class with their bounds) and
  fails when a pattern has a form the table lacks (widened) or the table has a form no pattern
  takes (narrowed, or a minimum length changed).
* :func:`test_every_format_is_redacted_wherever_it_appears` generates tokens of each row (bodies
  at and just above the minimum length) in text, as JSON values, keys and nested arguments, and
  checks that the secret never survives :func:`spec.redaction.redact` nor
  :func:`reference._tools.redact_json` (what tool results and errors are stored through).

Near misses (``ghx_…``, bodies one character short) are not asserted: the module documents no
policy for them, only the shapes it must remove.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reference._tools import redact_json
from spec.redaction import PATTERNS, REDACTED, redact

# ---- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Body:
    """A run of ``cls`` (a regex character class) between ``low`` and ``high`` (None: unbounded)."""

    cls: str
    low: int
    high: int | None = None


@dataclass(frozen=True)
class _End:
    """The text ends here (``\\Z``): a truncated private key block."""


END = _End()
Part = str | Body | _End


@dataclass(frozen=True)
class Format:
    pattern: str
    """The name of the pattern of ``spec.redaction.PATTERNS`` that covers it."""
    label: str
    parts: tuple[Part, ...]
    secret_from: int = 0
    """Index of the first part that is secret; the parts before it are kept (``keep_group``)."""
    after: str = ""
    """Text the pattern requires right after the token (a lookahead), e.g. ``@`` of a URL."""
    ignorecase: bool = False


B64URL = "[A-Za-z0-9_-]"


def _body(cls: str, low: int, high: int | None = None) -> Body:
    return Body(cls, low, high)


GITHUB_PREFIXES = ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")
"""Personal access, OAuth, user-to-server, server-to-server and refresh tokens (GitHub's
documented token prefixes); fine-grained personal access tokens start ``github_pat_``."""
SLACK_PREFIXES = ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-")
STRIPE_KINDS = ("sk", "rk", "pk")
STRIPE_MODES = ("live", "test")
OPENAI_PREFIXES = ("sk-", "sk-proj-", "sk-svcacct-")
ENV_KEYWORDS: tuple[tuple[Part, ...], ...] = (
    ("SECRET",),
    ("TOKEN",),
    ("PASSWORD",),
    ("PASSWD",),
    ("PWD",),
    ("API", _body("[_-]", 0, 1), "KEY"),
    ("ACCESS", _body("[_-]", 0, 1), "KEY"),
    ("PRIVATE", _body("[_-]", 0, 1), "KEY"),
    ("CREDENTIAL",),
    ("CREDENTIALS",),
)
"""The names of an environment variable, a flag, a header or a JSON key whose value is a secret
(with anything around them: ``DB_PASSWORD``, ``GITHUB_TOKEN_2``, ``aws_secret_access_key``,
``--password``, ``x-api-key``), in any case."""
ENV_VALUES: tuple[tuple[str, tuple[Part, ...]], ...] = (
    ("double-quoted", ('"', _body("[^\n]", 0), '"')),
    ("single-quoted", ("'", _body("[^\n]", 0), "'")),
    ("bare", (_body("[\"']", 0, 1), _body(r"[^\s\"']", 1), _body("[\"']", 0, 1))),
)
"""Its value: quoted, spaces and escaped quotes and all (``DB_PASSWORD="correct horse"``,
``"password": "…"``: the reader takes a quoted run with escapes as a run of any character but a
newline), or a run up to a space or a quote."""
KEY_TYPE = _body("[A-Z ]", 0)
"""``RSA ``, ``EC ``, ``OPENSSH ``, ``ENCRYPTED `` or nothing (PKCS #8)."""
KEY_BEGIN: tuple[Part, ...] = ("-----BEGIN ", KEY_TYPE, "PRIVATE KEY-----", _body("(?s:.)", 0))


FORMATS: tuple[Format, ...] = (
    Format("private_key", "private key block", (*KEY_BEGIN, "-----END ", KEY_TYPE, "PRIVATE KEY-----")),
    Format("private_key", "private key block cut off before its end line", (*KEY_BEGIN, END)),
    Format(
        "url_password",
        "password in a URL's user info",
        (
            _body("[A-Za-z]", 1, 1),
            _body("[A-Za-z0-9+.-]", 0),
            "://",
            _body(r"[^/\s:@]", 0),
            ":",
            _body(r"[^\s/]", 1, 200),
        ),
        secret_from=5,
        after="@",
    ),
    *(
        Format(
            "basic_auth",
            f"basic authorization {sign}",
            (
                "authorization",
                _body("[\"']", 0, 1),
                _body(r"\s", 0),
                sign,
                _body(r"\s", 0),
                _body("[\"']", 0, 1),
                "basic",
                _body(r"\s", 1),
                _body("[A-Za-z0-9+/=]", 4),
            ),
            secret_from=8,
            ignorecase=True,
        )
        for sign in ("=", ":")
    ),
    Format(
        "bearer_token",
        "bearer authorization",
        ("bearer", _body(r"\s", 1), _body("[A-Za-z0-9._~+/=-]", 8)),
        secret_from=2,
        ignorecase=True,
    ),
    Format(
        "jwt",
        "JSON web token",
        ("eyJ", _body(B64URL, 5), ".eyJ", _body(B64URL, 5), ".", _body(B64URL, 5)),
    ),
    Format("anthropic_key", "Anthropic API key", ("sk-ant-", _body(B64URL, 20))),
    *(Format("openai_key", f"OpenAI key {p}", (p, _body(B64URL, 20))) for p in OPENAI_PREFIXES),
    *(
        Format("stripe_key", f"Stripe {kind}_{mode}_", (f"{kind}_{mode}_", _body("[A-Za-z0-9]", 16)))
        for kind in STRIPE_KINDS
        for mode in STRIPE_MODES
    ),
    *(Format("github_token", f"GitHub {p}", (p, _body("[A-Za-z0-9]", 30))) for p in GITHUB_PREFIXES),
    Format("github_token", "GitHub github_pat_", ("github_pat_", _body("[A-Za-z0-9_]", 40))),
    *(Format("slack_token", f"Slack {p}", (p, _body("[A-Za-z0-9-]", 10))) for p in SLACK_PREFIXES),
    Format("google_api_key", "Google API key", ("AIza", _body(B64URL, 35, 35))),
    *(Format("aws_access_key_id", f"AWS key id {p}", (p, _body("[0-9A-Z]", 16, 16))) for p in ("AKIA", "ASIA")),
    *(
        Format(
            "env_assignment",
            f"environment {''.join(p for p in keyword if isinstance(p, str))}{sign} {kind}",
            (
                _body("[A-Z0-9_-]", 0, 100),
                *keyword,
                _body("[A-Z0-9_-]", 0, 100),
                _body("[\"']", 0, 1),
                _body(r"\s", 0),
                sign,
                _body(r"\s", 0),
                *value,
            ),
            secret_from=6 + len(keyword),
            ignorecase=True,
        )
        for keyword in ENV_KEYWORDS
        for sign in ("=", ":")
        for kind, value in ENV_VALUES
    ),
)
"""Every token format the redaction patterns cover, from the providers' documented shapes."""

# ---- the alternatives of the compiled patterns -------------------------------------------------

ASCII = [chr(c) for c in range(128)]
Elem = str | tuple[frozenset[str], int, int | None] | _End
"""A literal character, a class run (members among ASCII, low, high) or the end of the text."""
SMALL_SET = 8
"""A one-character set of at most this many literal characters (``[pousr]``, ``[=:]``) is a
choice between alternatives, not a body."""


def _members(items: list[tuple[Any, Any]], ignorecase: bool) -> frozenset[str]:
    negate = False
    chars: set[str] = set()
    categories: dict[Any, Callable[[str], bool]] = {
        C.CATEGORY_DIGIT: str.isdigit,
        C.CATEGORY_NOT_DIGIT: lambda c: not c.isdigit(),
        C.CATEGORY_SPACE: lambda c: re.fullmatch(r"\s", c) is not None,
        C.CATEGORY_NOT_SPACE: lambda c: re.fullmatch(r"\s", c) is None,
        C.CATEGORY_WORD: lambda c: re.fullmatch(r"\w", c) is not None,
        C.CATEGORY_NOT_WORD: lambda c: re.fullmatch(r"\w", c) is None,
    }
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(chr(av))
        elif op is C.RANGE:
            chars.update(chr(c) for c in range(av[0], av[1] + 1) if c < 128)
        elif op is C.CATEGORY:
            chars.update(c for c in ASCII if categories[av](c))
        else:
            raise NotImplementedError(f"class item {op}")
    if ignorecase:
        chars |= {c.swapcase() for c in chars if c.swapcase() in ASCII}
    return frozenset(c for c in ASCII if (c in chars) != negate)


def _alternatives(items: Any, flags: int) -> list[list[Elem]]:
    out: list[list[Elem]] = [[]]
    for op, av in items:
        node = _node(op, av, flags)
        out = [a + b for a in out for b in node]
    return out


def _node(op: Any, av: Any, flags: int) -> list[list[Elem]]:
    ignorecase = bool(flags & re.I)
    if op is C.LITERAL:
        return [[chr(av)]]
    if op is C.SUBPATTERN:
        return _alternatives(av[3], flags | av[1])
    if op is C.BRANCH:
        return [alt for branch in av[1] for alt in _alternatives(branch, flags)]
    if op is C.IN:
        members = _members(av, ignorecase)
        if all(o is C.LITERAL for o, _ in av) and len(av) <= SMALL_SET:
            return [[chr(v)] for _, v in av]
        return [[(members, 1, 1)]]
    if op is C.ANY:
        return [[(frozenset(ASCII) if flags & re.S else frozenset(ASCII) - {"\n"}, 1, 1)]]
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        low, high, sub = av
        high = None if high is C.MAXREPEAT else high
        items = list(sub)
        if len(items) == 1 and items[0][0] is C.LITERAL and (low, high) == (0, 1):
            return [[], [chr(items[0][1])]]  # API_?KEY, CREDENTIALS?
        if len(items) == 1 and items[0][0] in (C.IN, C.ANY, C.LITERAL):
            single = _node(items[0][0], items[0][1], flags)
            chars: set[str] = set()
            for e in (e for alt in single for e in alt):
                chars |= e[0] if isinstance(e, tuple) else {e} if isinstance(e, str) else set()
            if ignorecase:
                chars |= {c.swapcase() for c in chars}
            return [[(frozenset(chars), low, high)]]
        if (low, high) == (0, 1):
            return [[], *_alternatives(sub, flags)]
        # A repeated group (``(?:[^"\\]|\\.)*``, a quoted value with escapes): a run of every
        # character its alternatives take.
        chars = set()
        for alt in _alternatives(sub, flags):
            for e in alt:
                chars |= e[0] if isinstance(e, tuple) else {e} if isinstance(e, str) else set()
        return [[(frozenset(chars), low, high)]]
    if op is C.AT:
        return [[END]] if av is C.AT_END_STRING else [[]]  # \b: context, not shape
    if op in (C.ASSERT, C.ASSERT_NOT):
        return [[]]  # a lookahead is context (Format.after), not shape
    raise NotImplementedError(f"regex node {op}")


Shape = tuple[str | tuple[frozenset[str], int, int | None] | _End, ...]


def _merge(elems: list[Elem], ignorecase: bool) -> Shape:
    """Adjacent literal characters joined (lower-cased under ``(?i)``)."""
    out: list[Any] = []
    for e in elems:
        if isinstance(e, str):
            e = e.lower() if ignorecase else e
            if out and isinstance(out[-1], str):
                out[-1] += e
                continue
        out.append(e)
    return tuple(out)


def pattern_shapes() -> set[tuple[str, Shape]]:
    """Every (pattern name, form) the compiled patterns take."""
    shapes = set()
    for secret in PATTERNS:
        parsed = _parser.parse(secret.pattern.pattern, secret.pattern.flags)
        flags = parsed.state.flags
        for alt in _alternatives(parsed, flags):
            shapes.add((secret.name, _merge(alt, bool(flags & re.I))))
    return shapes


def _class_members(body: Body, ignorecase: bool) -> frozenset[str]:
    compiled = re.compile(body.cls, re.I if ignorecase else 0)
    return frozenset(c for c in ASCII if compiled.fullmatch(c))


def format_shape(fmt: Format) -> Shape:
    elems: list[Elem] = []
    for part in fmt.parts:
        if isinstance(part, Body):
            elems.append((_class_members(part, fmt.ignorecase), part.low, part.high))
        elif isinstance(part, _End):
            elems.append(part)
        else:
            elems.extend(part)
    return _merge(elems, fmt.ignorecase)


def _show(shape: Shape) -> str:
    def one(e: Any) -> str:
        if isinstance(e, _End):
            return "<end>"
        if isinstance(e, str):
            return repr(e)
        members, low, high = e
        text = "".join(sorted(members)) if len(members) <= 12 else f"{len(members)} chars"
        return f"[{text!r}]{{{low},{'' if high is None else high}}}"

    return " ".join(one(e) for e in shape)


@pytest.mark.clause("AUD-3", "INV-10")
def test_every_alternative_of_every_pattern_has_a_row() -> None:
    """The table and the patterns take the same forms: a pattern narrowed (``gh[pousr]_`` to
    ``ghp_``, a keyword or a Slack type dropped, a minimum length raised) leaves a row no pattern
    takes; a pattern widened has a form no row documents. Both fail, naming the form."""
    from_patterns = pattern_shapes()
    from_table = {(fmt.pattern, format_shape(fmt)) for fmt in FORMATS}
    lacking = sorted(f"{name}: {_show(shape)}" for name, shape in from_patterns - from_table)
    untaken = sorted(f"{name}: {_show(shape)}" for name, shape in from_table - from_patterns)
    assert not lacking, "forms of the patterns that no row of FORMATS documents:\n" + "\n".join(lacking)
    assert not untaken, "rows of FORMATS that no pattern takes any more:\n" + "\n".join(untaken)
    assert {fmt.pattern for fmt in FORMATS} == {p.name for p in PATTERNS}


def test_the_alternatives_reader_sees_a_narrowed_prefix() -> None:
    """The reader itself: ``gh[pousr]_`` is five forms, ``ghp_`` one; ``API_?KEY`` two."""
    assert len(_alternatives(_parser.parse(r"gh[pousr]_x"), 0)) == 5
    assert len(_alternatives(_parser.parse(r"ghp_x"), 0)) == 1
    assert {_merge(a, False) for a in _alternatives(_parser.parse(r"API_?KEY"), 0)} == {("API_KEY",), ("APIKEY",)}


# ---- generated tokens in their carriers --------------------------------------------------------

GEN_CHARS = string.ascii_letters + string.digits + string.punctuation + " \t\n"
"""What generated bodies are drawn from: a negated class ([^@\\s/]) or ``.`` is printable ASCII."""
FILLER = ["run", "deploy", "the", "service", "with", "curl", "-H", "echo", "then", "(", ")", "{", "}", "|", "-v", "ok"]
"""Words around a token: none is a keyword or prefix of any pattern."""
LEFT_SEPARATORS = [" ", "\n", "\t", "(", ",", ";", "'", '"', "="]
RIGHT_SEPARATORS = [" ", "\n", "\t"]
"""Whitespace ends every body (a closing quote may be part of an environment value)."""
JSON_KEYS = ["value", "output", "args", "cmd", "detail"]


def _alphabet(body: Body, ignorecase: bool) -> str:
    members = _class_members(body, ignorecase)
    return "".join(c for c in GEN_CHARS if c in members)


@st.composite
def tokens(draw: st.DrawFn, fmt: Format, slack: int = 3) -> tuple[str, str, str]:
    """``(kept, secret, after)``: a token of ``fmt``, bodies at and up to ``slack`` above their
    minimum (exactly their length when fixed)."""
    texts = []
    for part in fmt.parts:
        if isinstance(part, Body):
            high = part.high if part.high is not None else part.low + slack
            texts.append(draw(st.text(_alphabet(part, fmt.ignorecase), min_size=part.low, max_size=high)))
        elif isinstance(part, str):
            texts.append(draw(st.sampled_from([part, part.upper(), part.title()])) if fmt.ignorecase else part)
    kept, secret = "".join(texts[: fmt.secret_from]), "".join(texts[fmt.secret_from :])
    assume(REDACTED not in secret)
    return kept, secret, fmt.after


def _words(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(FILLER), max_size=4)))


def _line(fmt: Format, token: tuple[str, str, str], left: str, right: str) -> tuple[str, str, bool]:
    """``(text, needle, at_end)``: the token between ``left`` and ``right``, and the text that must
    not survive: the secret itself, or (a pattern that keeps a part) the kept part, the secret and
    the next character, so that a one-character password is not looked for alone; at the end of
    the text, the kept part and the secret must not end what is left."""
    kept, secret, after = token
    host = "db.internal:5432/app" if after == "@" else ""
    if any(isinstance(p, _End) for p in fmt.parts):
        right = ""  # a block cut off runs to the end of the text
    text = left + kept + secret + after + host + right
    if fmt.secret_from == 0:
        return text, secret, False
    rest = after + host + right
    return text, kept + secret + rest[:1], not rest


@st.composite
def carriers(draw: st.DrawFn, fmt: Format) -> tuple[Any, str, bool]:
    """The token in a text, a JSON value, a key or nested arguments; the needle (:func:`_line`)."""
    token = draw(tokens(fmt))
    left = _words(draw) + draw(st.sampled_from(LEFT_SEPARATORS)) if draw(st.booleans()) else ""
    right = draw(st.sampled_from(RIGHT_SEPARATORS)) + _words(draw) if draw(st.booleans()) else ""
    text, needle, at_end = _line(fmt, token, left, right)
    key = draw(st.sampled_from(JSON_KEYS))
    value: Any = {
        "text": text,
        "value": {key: text},
        "key": {text: 1},
        "nested": {"ok": False, key: {"args": [1, {"argv": ["cmd", text]}], "n": 2}},
        "list": [text, None, 3.5],
    }[draw(st.sampled_from(["text", "value", "key", "nested", "list"]))]
    return value, needle, at_end


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _survives(needle: str, out: str, at_end: bool) -> bool:
    return out.endswith(needle) if at_end else needle in out


def _check(fmt: Format, value: Any, needle: str, at_end: bool) -> None:
    for text in _strings(value):
        out = redact(text)
        assert not _survives(needle, out, at_end), f"{fmt.label}: redact({text!r}) = {out!r}"
        assert redact(out) == out, f"{fmt.label}: redacting {out!r} again changed it"
    stored = redact_json(value)
    json.dumps(stored)  # still JSON
    for text in _strings(stored):
        assert not _survives(needle, text, at_end), f"{fmt.label}: redact_json left {text!r} of {value!r}"


PER_FORMAT = settings(max_examples=max(10, settings().max_examples // 4))
"""A quarter of the profile's examples for each of the ~60 formats (50 by default): the table has
one test per row, and :func:`test_every_format_at_its_minimum_length_is_redacted` takes each row
at its minimum under any profile."""


@pytest.mark.clause("AUD-3", "INV-10")
@pytest.mark.parametrize("fmt", FORMATS, ids=[f.label for f in FORMATS])
@PER_FORMAT
@given(data=st.data())
def test_every_format_is_redacted_wherever_it_appears(fmt: Format, data: st.DataObject) -> None:
    """A token of each documented format, its bodies at and just above the minimum length, in a
    command line, a JSON value, a JSON key or nested arguments: the secret is gone after
    ``redact`` and after ``redact_json``, and redacting again changes nothing."""
    value, needle, at_end = data.draw(carriers(fmt))
    _check(fmt, value, needle, at_end)


def _fixed_token(fmt: Format, extra: int) -> tuple[str, str, str]:
    """A token of ``fmt`` whose every body is its minimum length plus ``extra`` (a fixed length
    kept), cycling through the body's alphabet (its letters and digits first)."""
    texts = []
    for part in fmt.parts:
        if isinstance(part, Body):
            alphabet = _alphabet(part, fmt.ignorecase)
            alphabet = "".join(c for c in alphabet if c.isalnum()) or alphabet
            size = part.low if part.high == part.low else part.low + extra
            texts.append((alphabet * (size // len(alphabet) + 1))[:size])
        elif isinstance(part, str):
            texts.append(part)
    return "".join(texts[: fmt.secret_from]), "".join(texts[fmt.secret_from :]), fmt.after


@pytest.mark.clause("AUD-3", "INV-10")
@pytest.mark.parametrize("fmt", FORMATS, ids=[f.label for f in FORMATS])
def test_every_format_at_its_minimum_length_is_redacted(fmt: Format) -> None:
    """Without Hypothesis (so under any profile): each row at its minimum length and one above,
    alone, in a command line and as a nested JSON argument."""
    for extra in (0, 1):
        for left, right in (("", ""), ("run ", " --now")):
            text, needle, at_end = _line(fmt, _fixed_token(fmt, extra), left, right)
            _check(fmt, text, needle, at_end)
            _check(fmt, {"args": [{"argv": [text]}]}, needle, at_end)


@pytest.mark.clause("AUD-3", "INV-10")
def test_a_secret_inside_a_tuple_of_a_tool_result_is_redacted_as_in_a_list() -> None:
    """A Python tool may return tuples (a row, a pair): they are stored as JSON lists, redacted
    all the way down (an outside review redacted lists only; the tuple's secret was stored)."""
    secret = "DB_PASSWORD=hunter2-correct-horse"
    stored = redact_json({"ok": True, "lines": ("connected", secret), "rows": [(1, {"token": secret})]})
    assert "hunter2" not in json.dumps(stored)
    assert stored["lines"][0] == "connected" and isinstance(stored["lines"], list)
