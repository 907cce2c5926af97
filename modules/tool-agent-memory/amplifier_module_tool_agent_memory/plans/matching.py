"""Matching rule for the plan cache: is a stored prompt *the same request* as a new one?

Cosine similarity of sentence embeddings says "these two requests are about the same
thing", but not "these two requests ask for the same change": "move faster" and
"move slower" embed almost identically.  ``decide`` therefore first applies cheap
lexical vetoes to a :class:`PromptSignature` of each prompt; any of them is a miss
whatever the cosine:

1. quantities (numbers, number words, multipliers, percentages, durations) must agree;
2. polarity (remove / disable / stop / hide / un-... versus the plain request) must agree;
3. direction words on the same scale (faster/slower, top/bottom, save/load, ...) must
   not contradict each other;
4. code identifiers (``playerHealth``, ``Foo.Bar``, ``file.cs``) must be the same and in
   the same order (``rename a to b`` is not ``rename b to a``);
5. the remaining content words must be accounted for: a word of one prompt that the
   other prompt does not contain (after stemming and a small table of general
   synonyms) is a *substitution* when the other prompt also has an unmatched word,
   e.g. "enemies" instead of "player".  A substitution is a miss.

When nothing contradicts, the hit needs the *match similarity*
``1 - (1 - cosine) * (1 - word agreement)`` (a noisy-OR of the two kinds of evidence) to
reach the threshold (0.85 by default); the word agreement is the F1 share of both prompts'
content words that the other prompt accounts for, so one-sided extra words lower it.
Identical normalised text is always a hit (match similarity 1.0).

Adopted from the matching research in the team's scratch area (rule, synonym tables and
vetoes by helper-1); the noisy-OR combination was added here so that the config threshold
keeps its 0.85 default.  Pure Python (standard library only), so the service can use it
without loading the embedding model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "MatchDecision",
    "PromptSignature",
    "decide",
    "normalise_prompt",
    "signature",
]

# --------------------------------------------------------------------------------------
# normal form


_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.!?,;:…]+$")


def normalise_prompt(text: str) -> str:
    """Normal form deciding "same prompt text": lowercase, collapsed spaces, no trailing punctuation."""
    text = _WS.sub(" ", text.strip().lower())
    return _TRAILING_PUNCT.sub("", text)


# --------------------------------------------------------------------------------------
# general English knowledge (not specific to any topic)


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _wordset(
    """
    a an the this that these those it its it's itself they them their theirs there here
    i me my mine we us our you your yours he him his she her hers one ones someone
    is are was were be been being am do does did done doing have has had having
    will would shall should can could may might must need needs want wants wanted like
    please pls kindly just also so too very really quite rather bit little lot lots
    and or but nor if then than as of to in on at by for from with within via into onto
    about per across around through throughout toward towards upon
    what which who whom whose when whenever where wherever while how why whether
    all any each every some such both either neither own same other another
    make makes made making let lets letting get gets got getting go goes going went gone
    put puts putting set sets setting change changes changed changing turn turns turned
    have give gives gave given giving take takes took taken taking
    add adds added adding create creates created creating show shows showed shown showing
    display displays displayed displaying enable enables enabled enabling
    now currently current new again still already always instead ok okay
    thing things something way much many come comes came coming deal deals dealt dealing
    color colour colored coloured
    """
)
"""Function words and generic request-framing verbs ("make", "set", "add", "show", ...).

Generic verbs only frame the request ("add a health bar" == "show a health bar"); the
opposite verbs (remove, hide, disable, ...) are *not* here: they carry polarity.
"""

# Negation / reversal markers.  Each occurrence flips the polarity of the request.
_NEGATORS = _wordset(
    """
    no not never none nothing without dont don't doesnt doesn't cant can't cannot
    stop stops stopped stopping prevent prevents
    remove removes removed removing delete deletes deleted deleting erase erases
    disable disables disabled disabling hide hides hid hidden hiding
    mute mutes muted muting off
    """
)
_IDIOMS = ("in place", "at once", "right now", "as well", "of course")
"""Fixed phrases that carry no content (removed before matching)."""
_NEGATOR_PHRASES = ("take away", "get rid of", "turn off", "switch off", "do away with")
_UN_VERBS = _wordset(
    "bind block cap check do freeze hide install link load lock mute pause pin select tie"
    " equip register subscribe follow"
)

# Scales: words on the same dimension but on opposite sides contradict each other.
_SCALES: tuple[tuple[str, frozenset[str], frozenset[str]], ...] = tuple(
    (name, _wordset(pos), _wordset(neg))
    for name, pos, neg in (
        (
            "speed",
            "fast faster fastest quick quicker quickest quickly rapid rapidly speedy accelerate",
            "slow slower slowest slowly decelerate",
        ),
        (
            "amount",
            "increase increases increased increasing raise raises raised more extra additional"
            " bonus boost boosts maximize",
            "decrease decreases decreased decreasing reduce reduces reduced reducing less fewer lower"
            " lowers lowered lowering minimize cut",
        ),
        (
            "vertical",
            "up upper top above over high higher highest upward upwards raise",
            "down lower bottom below under beneath low lowest downward downwards",
        ),
        ("horizontal", "left leftward", "right rightward"),
        ("depth", "front forward forwards ahead", "back backward backwards behind rear"),
        (
            "size",
            "big bigger biggest large larger largest huge long longer longest wide wider tall"
            " taller grow enlarge expand",
            "small smaller smallest tiny little short shorter shortest narrow narrower shrink",
        ),
        ("brightness", "bright brighter light lighter pale paler", "dark darker dim dimmer deep deeper"),
        ("temperature", "hot hotter warm warmer", "cold colder cool cooler"),
        ("weight", "heavy heavier", "light lighter"),
        ("difficulty", "hard harder difficult", "easy easier"),
        (
            "time",
            "early earlier before first start begin begins beginning",
            "late later after last end ends ending finish",
        ),
        ("order", "next following", "previous prior preceding"),
        ("extreme", "max maximum most highest", "min minimum least lowest"),
        ("inout", "inside enter", "outside exit leave"),
        ("openness", "open opens opening", "close closes closing closed"),
        ("lock", "lock locks locked", "unlock unlocks unlocked"),
        ("persistence", "save saves saved saving store export write", "load loads loaded loading import read restore"),
        ("transfer", "upload push send", "download pull receive"),
        ("crypto", "encrypt encode compress", "decrypt decode decompress"),
        ("truth", "true yes", "false"),
        ("plus", "plus", "minus"),
        ("zoom", "zoom-in", "zoom-out"),
        ("horizontalvertical", "horizontal horizontally", "vertical vertically"),
        ("compass1", "north", "south"),
        ("compass2", "east", "west"),
        ("outcome", "win wins winning", "lose loses losing"),
        ("visibility", "visible", "invisible"),
        ("strength", "strong stronger", "weak weaker"),
        ("age", "old older oldest", "young younger newest"),
    )
)

_MAGNITUDE_SCALES = _wordset("speed amount vertical size brightness temperature weight difficulty strength extreme")
"""Gradable scales whose words paraphrase each other across scales ("increase speed" = "faster")."""

# Multipliers and fractions written as words.
_MULTIPLIERS = {
    "double": 2.0,
    "doubled": 2.0,
    "doubles": 2.0,
    "twice": 2.0,
    "twofold": 2.0,
    "triple": 3.0,
    "tripled": 3.0,
    "triples": 3.0,
    "thrice": 3.0,
    "threefold": 3.0,
    "quadruple": 4.0,
    "quadrupled": 4.0,
    "half": 0.5,
    "halve": 0.5,
    "halved": 0.5,
    "halves": 0.5,
    "halving": 0.5,
    "third": 1 / 3,
    "quarter": 0.25,
}
_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "dozen": 12,
}
_TIME_UNITS = {
    "ms": 0.001,
    "millisecond": 0.001,
    "milliseconds": 0.001,
    "s": 1.0,
    "sec": 1.0,
    "secs": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "min": 60.0,
    "mins": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "hrs": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "day": 86400.0,
    "days": 86400.0,
}
_PERCENT = frozenset({"%", "percent", "per-cent", "pct"})

# A few very general synonym groups (first word is the canonical form).
_SYNONYM_GROUPS = (
    "fast quick rapid speedy speed",
    "slow gentle gently",
    "big large huge",
    "small tiny little",
    "begin start",
    "end finish",
    "fix repair resolve",
    "rename name",
    "follow track",
    "shoot fire",
    "auto automatic automatically automated",
    "sound audio noise sfx",
    "picture image",
    "button key",
    "limit cap clamp restrict",
    "rotate spin",
    "move movement",
    "delete remove erase",
    "every each interval",
    "color colour",
    "above over",
    "top upper",
    "bottom lower",
    "extra more bonus additional",
    "translate localize localise translation localization localisation",
    "smooth smoothly smoothing",
    "say print output",
    "window dialog",
    "error exception",
    "screen hud",
)
_CANON: dict[str, str] = {}
for _group in _SYNONYM_GROUPS:
    _words = _group.split()
    for _w in _words:
        _CANON.setdefault(_w, _words[0])

# Irregular / derivational forms the suffix stripper cannot reach.
_IRREGULAR = {
    "height": "high",
    "higher": "high",
    "highest": "high",
    "length": "long",
    "longer": "long",
    "width": "wide",
    "wider": "wide",
    "depth": "deep",
    "deeper": "deep",
    "strength": "strong",
    "faster": "fast",
    "fastest": "fast",
    "quicker": "quick",
    "quickly": "quick",
    "slower": "slow",
    "slowly": "slow",
    "bigger": "big",
    "smaller": "small",
    "lives": "life",
    "knives": "knife",
    "leaves": "leaf",
    "wolves": "wolf",
    "children": "child",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "feet": "foot",
    "teeth": "tooth",
    "geese": "goose",
    "people": "person",
    "ran": "run",
    "running": "run",
    "began": "begin",
    "begun": "begin",
    "begins": "begin",
    "beginning": "begin",
    "bound": "bind",
    "wrote": "write",
    "written": "write",
    "shot": "shoot",
    "fired": "fire",
    "fires": "fire",
    "dies": "die",
    "died": "die",
    "dying": "die",
    "hit": "hit",
    "hits": "hit",
}


def _stem(word: str) -> str:
    """Light English stemmer: plurals, -ing, -ed, -ly, -ment, -ion, final -e."""
    w = _IRREGULAR.get(word, word)
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith(("sses", "shes", "ches", "xes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix, repl in (
        ("ization", "iz"),
        ("isation", "iz"),
        ("ation", "at"),
        ("tion", "t"),
        ("ment", ""),
        ("ing", ""),
        ("ed", ""),
        ("ly", ""),
    ):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)] + repl
            if suffix in ("ing", "ed") and len(w) >= 3 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # tapping -> tap, stopped -> stop
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


_STEMMED_CANON = {_stem(k): _stem(v) for k, v in _CANON.items()}
_SCALE_CANON = frozenset(
    c
    for _, pos, neg in _SCALES
    for w in pos | neg
    for c in (_stem(_CANON.get(w, w)), _STEMMED_CANON.get(_stem(w), _stem(w)))
)


def _canon(word: str) -> str:
    """Stem + map to the canonical member of a general synonym group."""
    if word in _CANON:
        return _stem(_CANON[word])
    s = _stem(word)
    return _STEMMED_CANON.get(s, s)


# --------------------------------------------------------------------------------------
# tokenisation

_IDENT = re.compile(
    r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"  # dotted: Foo.Bar, file.cs
    r"|[a-z]+[A-Z][A-Za-z0-9]*"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase with 2+ humps
    r"|[A-Za-z0-9]+_[A-Za-z0-9_]+"  # snake_case
)
_TOKEN = re.compile(r"\d+(?:\.\d+)?x(?![a-z])|\d+(?:\.\d+)?%?|[A-Za-z][A-Za-z']*|%")
_CAMEL_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_FILE_EXTS = _wordset("cs py js ts tsx jsx json yaml yml toml md txt cpp c h hpp java go rs rb php html css xml")


def _split_identifier(ident: str) -> list[str]:
    parts: list[str] = []
    pieces = re.split(r"[._]", ident)
    for i, piece in enumerate(pieces):
        if i == len(pieces) - 1 and i > 0 and piece.lower() in _FILE_EXTS:
            continue
        parts.extend(p.lower() for p in _CAMEL_PART.findall(piece))
    return parts


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class PromptSignature:
    """What the matching rule needs to know about one prompt."""

    text: str
    """The normalised prompt text."""
    content: frozenset[str]
    """Canonical stems of content words (incl. the parts of code identifiers)."""
    numbers: frozenset[str]
    """Quantities, normalised (``"50%"`` and ``"half"`` -> ``"0.5"``; ``"5 minutes"`` -> ``"300s"``)."""
    negated: bool
    """True when the request removes / stops / disables / hides / reverses something."""
    negators: tuple[str, ...]
    """The words that set ``negated`` (for explanations)."""
    scales: tuple[tuple[str, str, str], ...]
    """``(scale, side, word)`` for direction words: side is ``"+"`` or ``"-"``."""
    identifiers: tuple[str, ...]
    """Code identifiers in order of appearance, lowercased (file names excluded from order)."""
    acronyms: frozenset[str]
    """Short all-caps words (``NRE``, ``FPS``) which may abbreviate words of the other prompt."""
    words: tuple[str, ...]
    """Canonical stems of the plain (non-identifier) tokens in order, stopwords included."""
    ident_parts: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Identifier atoms (``Foo.Bar`` -> ``foo``, ``bar``) with their canonical word parts."""


def signature(text: str) -> PromptSignature:
    """Extract the :class:`PromptSignature` of a prompt."""
    norm = normalise_prompt(text)
    raw = _WS.sub(" ", text.strip())
    raw = re.sub(r"\b([a-z])-(?=[a-z])", r"\1", raw, flags=re.IGNORECASE)  # e-mail -> email
    raw = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", raw, flags=re.IGNORECASE)  # top-right -> top right

    identifiers: list[str] = []
    ident_parts: list[str] = []
    _atoms: list[tuple[str, str]] = []
    acronyms: set[str] = set()

    def _take_ident(m: re.Match[str]) -> str:
        ident = m.group(0)
        last = ident.rsplit(".", 1)[-1].lower()
        if not ("." in ident and last in _FILE_EXTS):
            for atom in ident.split("."):
                identifiers.append(atom.lower())
                _atoms.append((atom.lower(), atom))
        ident_parts.extend(_split_identifier(ident))
        return " "

    rest = _IDENT.sub(_take_ident, raw)
    for tok in re.findall(r"\b[A-Z]{2,5}s?\b", rest):
        acronyms.add(tok.rstrip("s").lower() if tok.endswith("s") and tok[:-1].isupper() else tok.lower())

    tokens = [t.lower() for t in _TOKEN.findall(rest)]
    tokens = [t[:-2] if t.endswith("'s") else t.rstrip("'") for t in tokens]
    split_tokens: list[str] = []
    for t in tokens:
        if t.startswith("auto") and len(t) > 6 and not t.startswith("automat"):
            split_tokens.extend(("auto", t[4:]))  # autosave -> auto save
        else:
            split_tokens.append(t)
    joined = " " + " ".join(split_tokens) + " "
    for idiom in _IDIOMS:
        joined = joined.replace(f" {idiom} ", " ")
    joined = re.sub(r" per (\w+) ", r" per \1 rate ", joined)  # "frames per second" is a rate

    # polarity
    negators: list[str] = []
    for phrase in _NEGATOR_PHRASES:
        if f" {phrase} " in joined:
            negators.append(phrase)
            joined = joined.replace(f" {phrase} ", " ")
    tokens = joined.split()
    for t in tokens:
        # "uncap" reverses "cap"; "unmute"/"unhide" reverse a negator, so they are positive.
        reversed_verb = (
            t.startswith("un") and t[2:] not in _NEGATORS and (t[2:] in _UN_VERBS or _stem(t[2:]) in _UN_VERBS)
        )
        if (t in _NEGATORS and t != "off") or reversed_verb:
            negators.append(t)
    if "off" in tokens and not any(p.endswith(" off") for p in negators):
        negators.append("off")

    # quantities
    numbers: set[str] = set()
    used: set[int] = set()
    for i, t in enumerate(tokens):
        value: float | None = None
        if re.fullmatch(r"\d+(?:\.\d+)?x", t):
            value = float(t[:-1])
            numbers.add(_fmt(value))
            used.add(i)
            continue
        if re.fullmatch(r"\d+(?:\.\d+)?%?", t):
            value = float(t.rstrip("%"))
            if t.endswith("%"):
                numbers.add(_fmt(value / 100))
                used.add(i)
                continue
        elif t in _NUMBER_WORDS:
            value = float(_NUMBER_WORDS[t])
        elif t in _MULTIPLIERS:
            if (
                i > 0
                and tokens[i - 1] in ("a", "an", "the")
                and i + 1 < len(tokens)
                and tokens[i + 1] not in _STOPWORDS
            ):
                continue  # "a double jump": part of a noun phrase, not a multiplier
            value = _MULTIPLIERS[t]
        if value is None:
            continue
        used.add(i)
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        nxt2 = tokens[i + 2] if i + 2 < len(tokens) else ""
        if nxt in ("a", "an") and nxt2 in _TIME_UNITS:  # "half a minute"
            nxt = nxt2
            used.add(i + 1)
            i += 1
        if nxt in _TIME_UNITS:
            numbers.add(_fmt(round(value * _TIME_UNITS[nxt], 6)) + "s")
            used.add(i + 1)
        elif nxt in _PERCENT:
            numbers.add(_fmt(value / 100))
            used.add(i + 1)
        else:
            numbers.add(_fmt(value))

    # direction scales
    scales: list[tuple[str, str, str]] = []
    scale_words: set[str] = set()
    for t in tokens:
        for name, pos, neg in _SCALES:
            if t in pos:
                scales.append((name, "+", t))
                scale_words.add(t)
            if t in neg:
                scales.append((name, "-", t))
                scale_words.add(t)

    # content words
    words: list[str] = []
    for i, t in enumerate(tokens):
        if i in used or t in _STOPWORDS or t == "%" or t in _PERCENT:
            continue
        if t in _NEGATORS or t in negators or t.isdigit():
            continue
        if len(t) == 1 and t in "ai":
            continue
        c = _canon(t)
        if c in _STOPWORDS:
            continue
        words.append(c)
    words.extend(_canon(p) for p in ident_parts if p not in _STOPWORDS)
    # Words on a direction scale (and their synonyms) are compared by `scales`, not as content.
    content = {w for w in words if w not in _SCALE_CANON}
    all_words = tuple(_canon(t) for t in tokens if t not in ("%",))

    return PromptSignature(
        text=norm,
        content=frozenset(content),
        numbers=frozenset(numbers),
        negated=len(negators) % 2 == 1,
        negators=tuple(negators),
        scales=tuple(scales),
        identifiers=tuple(identifiers),
        acronyms=frozenset(acronyms),
        words=all_words,
        ident_parts=tuple((atom, tuple(_canon(p) for p in _split_identifier(atom_raw))) for atom, atom_raw in _atoms),
    )


# --------------------------------------------------------------------------------------
# the rule


@dataclass(frozen=True)
class MatchDecision:
    """Outcome of comparing a query with one stored candidate.

    ``similarity`` is the *match similarity* the threshold applies to (see :func:`match_similarity`);
    ``cosine`` is the embeddings' cosine it was computed from, ``lexical`` the content-word agreement.
    """

    hit: bool
    similarity: float
    reason: str
    cosine: float | None = None
    lexical: float | None = None


def _sides(sig: PromptSignature) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, side, _ in sig.scales:
        out.setdefault(name, set()).add(side)
    return out


def _scale_word(sig: PromptSignature, name: str) -> str:
    return "/".join(w for n, _, w in sig.scales if n == name)


def _expand_acronyms(unmatched: set[str], acronyms: Iterable[str], other_words: tuple[str, ...]) -> set[str]:
    """Remove from ``unmatched`` the words spelled out by an acronym (NRE -> null reference exception)."""
    out = set(unmatched)
    for acr in acronyms:
        n = len(acr)
        for i in range(len(other_words) - n + 1):
            span = other_words[i : i + n]
            if "".join(w[0] for w in span) == acr:
                out -= set(span)
    return out


def _fmt_set(items: Iterable[str]) -> str:
    return ", ".join(sorted(items)) or "-"


def match_similarity(cosine: float, lexical: float) -> float:
    """Noisy-OR of the two independent kinds of evidence: ``1 - (1 - cosine) * (1 - lexical)``.

    Either a close embedding or full agreement of the content words can carry a match; a
    rewording that shares most content words needs less cosine than one that shares few.
    """
    cos = min(max(cosine, 0.0), 1.0)
    return 1.0 - (1.0 - cos) * (1.0 - min(max(lexical, 0.0), 1.0))


@dataclass(frozen=True)
class _Comparison:
    veto: str | None
    """Why the two prompts ask for different things (None: nothing contradicts)."""
    q_extra: frozenset[str]
    c_extra: frozenset[str]
    """Content words of one side the other side does not account for (after synonyms etc.)."""


def _compare(query: PromptSignature, candidate: PromptSignature) -> _Comparison:
    """The lexical vetoes: numbers, polarity, direction, identifiers, substituted content words."""
    none: frozenset[str] = frozenset()
    if query.numbers != candidate.numbers:
        return _Comparison(
            f"numbers differ: {_fmt_set(query.numbers)} vs {_fmt_set(candidate.numbers)}", none, none
        )
    if query.negated != candidate.negated:
        q = "/".join(query.negators) or "no negation"
        c = "/".join(candidate.negators) or "no negation"
        return _Comparison(f"polarity differs: {q} vs {c}", none, none)
    qs, cs = _sides(query), _sides(candidate)
    for name in sorted(qs.keys() & cs.keys()):
        if qs[name] != cs[name]:
            return _Comparison(
                f"direction differs: {_scale_word(query, name)} vs {_scale_word(candidate, name)}", none, none
            )
    q_ids = _unaccounted_identifiers(query, candidate)
    c_ids = _unaccounted_identifiers(candidate, query)
    if q_ids and c_ids:
        return _Comparison(f"identifiers differ: {_fmt_set(q_ids)} vs {_fmt_set(c_ids)}", none, none)
    common = set(query.identifiers) & set(candidate.identifiers)
    q_order = _dedup(i for i in query.identifiers if i in common)
    c_order = _dedup(i for i in candidate.identifiers if i in common)
    if q_order != c_order:
        return _Comparison(
            f"identifier order differs: {' -> '.join(q_order)} vs {' -> '.join(c_order)}", none, none
        )
    q_only = set(query.content - candidate.content)
    c_only = set(candidate.content - query.content)
    # A direction word is compared by its scale; but when the other prompt has no direction
    # word at all, it is plain content ("the save button" vs "the cancel button").
    q_only |= _unanswered_scale_words(query, candidate)
    c_only |= _unanswered_scale_words(candidate, query)
    q_only = _expand_acronyms(q_only, candidate.acronyms, query.words)
    c_only = _expand_acronyms(c_only, query.acronyms, candidate.words)
    q_only -= {a for a in query.acronyms if _acronym_in(a, candidate.words)}
    c_only -= {a for a in candidate.acronyms if _acronym_in(a, query.words)}
    q_only, c_only = _pair_off(q_only, c_only, query.content, candidate.content)
    if q_only and c_only:
        return _Comparison(f"content words differ: {_fmt_set(q_only)} vs {_fmt_set(c_only)}", none, none)
    return _Comparison(None, frozenset(q_only), frozenset(c_only))


def lexical_agreement(query: PromptSignature, candidate: PromptSignature, cmp: _Comparison) -> float:
    """F1 (Dice) agreement of the content words: the share of both prompts' words the other accounts for.

    A word counts as accounted for when the other prompt has it (same stem, synonym,
    abbreviation or compound); each word only one prompt has counts against the agreement.
    0 when neither prompt has content words (then the cosine alone decides).
    """
    total = len(query.content | cmp.q_extra) + len(candidate.content | cmp.c_extra)
    if total == 0:
        return 0.0
    return (total - len(cmp.q_extra) - len(cmp.c_extra)) / total


def decide(
    query: PromptSignature,
    candidate: PromptSignature,
    similarity: float,
    threshold: float = 0.85,
) -> MatchDecision:
    """Decide whether ``candidate``'s stored plan answers ``query``.

    ``similarity`` is the cosine of the two prompts' embeddings. A lexical veto (another
    number, polarity, direction, identifier or content word) is a miss whatever the cosine;
    otherwise the hit needs ``match_similarity(cosine, lexical agreement) >= threshold``.
    """
    if query.text == candidate.text:
        return MatchDecision(True, 1.0, "same prompt text", similarity, 1.0)
    cmp = _compare(query, candidate)
    lexical = lexical_agreement(query, candidate, cmp) if cmp.veto is None else 0.0
    combined = match_similarity(similarity, lexical)
    if cmp.veto is not None:
        return MatchDecision(False, combined, cmp.veto, similarity, lexical)
    detail = f"cosine {similarity:.2f}, word agreement {lexical:.2f}"
    extra = cmp.q_extra | cmp.c_extra
    if extra:
        detail += f", extra words: {_fmt_set(extra)}"
    if combined < threshold:
        return MatchDecision(False, combined, f"match similarity {combined:.2f} < {threshold:.2f} ({detail})",
                             similarity, lexical)
    return MatchDecision(True, combined, f"match similarity {combined:.2f} >= {threshold:.2f} ({detail})",
                         similarity, lexical)


def _unanswered_scale_words(a: PromptSignature, b: PromptSignature) -> set[str]:
    """Direction words of ``a`` that ``b`` has no counterpart for, as content words.

    Magnitude words (faster, increase, higher, bigger, ...) are interchangeable across their
    scales ("increase the speed" == "faster"), so they only count when ``b`` has no magnitude
    word at all.  Other scale words (save/load, open/close, left/right, ...) name a distinct
    operation or place and count unless ``b`` has a word on the same scale.
    """
    b_scales = {name for name, _, _ in b.scales}
    b_has_magnitude = bool(b_scales & _MAGNITUDE_SCALES)
    out: set[str] = set()
    for name, _, word in a.scales:
        answered = b_has_magnitude if name in _MAGNITUDE_SCALES else name in b_scales
        if not answered:
            out.add(_canon(word))
    return out


def _dedup(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item not in seen:
            seen.append(item)
    return seen


def _unaccounted_identifiers(a: PromptSignature, b: PromptSignature) -> set[str]:
    """Identifiers of ``a`` that ``b`` neither contains nor spells out in words."""
    b_ids = set(b.identifiers)
    b_words = set(b.words)
    return {atom for atom, parts in a.ident_parts if atom not in b_ids and not set(parts) <= b_words}


def _related(x: str, y: str) -> bool:
    """Abbreviation (``esc``/``escap``) of at least 3 letters."""
    short, long_ = sorted((x, y), key=len)
    return len(short) >= 3 and long_.startswith(short)


def _compound_of(word: str, others: Iterable[str]) -> set[str]:
    """Words of ``others`` that ``word`` is a compound of (``framerate`` = ``frame`` + ``rate``)."""
    pool = [o for o in others if len(o) >= 3]
    for k in range(3, len(word) - 2):
        head, tail = word[:k], word[k:]
        heads = {o for o in pool if _related(head, o)}
        tails = {o for o in pool if _related(tail, o)}
        if heads and tails:
            return heads | tails
    return set()


def _pair_off(
    q_only: set[str], c_only: set[str], q_all: frozenset[str], c_all: frozenset[str]
) -> tuple[set[str], set[str]]:
    """Drop residue words explained by an abbreviation or a compound of the other side."""
    q_left, c_left = set(q_only), set(c_only)
    for q in q_only:
        for c in c_only:
            if _related(q, c):
                q_left.discard(q)
                c_left.discard(c)
    for mine, theirs, their_all in ((q_left, c_left, c_all), (c_left, q_left, q_all)):
        for w in sorted(mine):
            parts = _compound_of(w, their_all)
            if parts:
                mine.discard(w)
                theirs.difference_update(parts)
    return q_left, c_left


def _acronym_in(acr: str, words: tuple[str, ...]) -> bool:
    n = len(acr)
    return any("".join(w[0] for w in words[i : i + n]) == acr for i in range(len(words) - n + 1))
