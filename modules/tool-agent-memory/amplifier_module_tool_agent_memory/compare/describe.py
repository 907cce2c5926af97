"""Name what differs between two short texts, for the agent who decides (advisory).

:func:`describe` lines up the units :func:`.certify.words_in_place` reads (words by stem, values
with their units) and names, in this order:

* **values**: a value of one text the other lacks, paired with the other's value of the same kind
  ("number: 20 requests per minute -> 20 requests per second"), or the same values in another order;
* **polarity**: a negation ("not", "n't") on one side of a changed stretch, or a replaced word that is the
  other with a negating prefix (enable / disable) or its WordNet antonym (increase / decrease);
* **order**: words both texts have, moved ("from bcrypt to argon2" / "from argon2 to bcrypt");
* **words**: a word replaced by another in the same place (``content``), or on one side only
  (``qualifier``), function words included ("put" / "delete", "if" / "unless").

A description costs the agent a line; a wrong or missing one never acts on anything (only
:func:`.certify.certify` lets the module act), so this stays simple rather than complete.
"""

from __future__ import annotations

from collections import Counter
from difflib import SequenceMatcher

from .certify import Unit, words_in_place
from .types import Difference
from .wordnet import Relation, default_wordnet

__all__ = ["describe"]

_NEGATING_PREFIXES = ("un", "dis", "in", "im", "il", "ir", "non", "de", "anti")


def _opposite(x: str, y: str) -> bool:
    """``y`` is ``x`` with a negating prefix (enable / disable), or WordNet calls them antonyms."""
    for a, b in ((x, y), (y, x)):
        if len(a) >= 3 and any(b == p + a for p in _NEGATING_PREFIXES):
            return True
    lexicon = default_wordnet()
    return lexicon is not None and x.isalpha() and y.isalpha() and lexicon.relation(x, y) is Relation.ANTONYM


def _text(units: list[Unit]) -> str | None:
    return " ".join(u.text for u in units) or None


def _values(ua: tuple[Unit, ...], ub: tuple[Unit, ...]) -> list[Difference]:
    va = [u for u in ua if u.value]
    vb = [u for u in ub if u.value]
    only_a = list((Counter(u.key for u in va) - Counter(u.key for u in vb)).elements())
    only_b = list((Counter(u.key for u in vb) - Counter(u.key for u in va)).elements())
    left_a = [u for u in va if u.key in only_a]
    left_b = [u for u in vb if u.key in only_b]
    out: list[Difference] = []
    for x in list(left_a):
        y = next((y for y in left_b if y.value == x.value), None)
        if y is not None:
            left_a.remove(x)
            left_b.remove(y)
            out.append(Difference(x.value or "value", x.text, y.text))
    out += [Difference(x.value or "value", x.text, None) for x in left_a]
    out += [Difference(y.value or "value", None, y.text) for y in left_b]
    shared = [u.key for u in va if u.key not in only_a]
    if not out and shared != [u.key for u in vb if u.key not in only_b]:
        out.append(Difference("order", " then ".join(u.text for u in va), " then ".join(u.text for u in vb)))
    return out


def describe(a: str, b: str) -> tuple[Difference, ...]:
    """What differs between ``a`` (stored) and ``b`` (asked): () when :func:`.certify.certify` would certify them."""
    ua, ub = words_in_place(a), words_in_place(b)
    out = _values(ua, ub)
    wa = [u for u in ua if not u.value]
    wb = [u for u in ub if not u.value]
    changed = [op for op in SequenceMatcher(a=[u.key for u in wa], b=[u.key for u in wb], autojunk=False)
               .get_opcodes() if op[0] != "equal"]
    if changed:
        # The same words in another order across the changed stretch ("from bcrypt to argon2" / "from argon2 to
        # bcrypt", "eggs and bread" / "bread and eggs"): one order difference naming both stretches.
        span_a, span_b = wa[changed[0][1] : changed[-1][2]], wb[changed[0][3] : changed[-1][4]]
        if span_a and Counter(u.key for u in span_a) == Counter(u.key for u in span_b):
            out.append(Difference("order", _text(span_a), _text(span_b)))
            return tuple(out)
    removed: list[list[Unit]] = []
    added: list[list[Unit]] = []
    replaced: list[tuple[list[Unit], list[Unit]]] = []
    for op, i1, i2, j1, j2 in changed:
        if op == "replace":
            replaced.append((wa[i1:i2], wb[j1:j2]))
        elif op == "delete":
            removed.append(wa[i1:i2])
        elif op == "insert":
            added.append(wb[j1:j2])
    # A word both texts have that the alignment left out on each side has moved: an order difference.
    moved = {u.key for _, new in replaced for u in new} | {u.key for run in added for u in run}
    moved &= {u.key for old, _ in replaced for u in old} | {u.key for run in removed for u in run}
    if moved:
        out.append(Difference("order", _around(wa, moved), _around(wb, moved)))
    for old, new in replaced:
        old_left = [u for u in old if u.key not in moved]
        new_left = [u for u in new if u.key not in moved]
        if not old_left and not new_left:
            continue
        if len(old_left) == 1 and len(new_left) == 1 and _opposite(old_left[0].text, new_left[0].text):
            out.append(Difference("polarity", old_left[0].text, new_left[0].text))
        else:
            kind = "content" if old_left and new_left else "qualifier"
            out.append(Difference(_negation(old_left + new_left, kind), _text(old_left), _text(new_left)))
    for run in removed:
        if old_run := [u for u in run if u.key not in moved]:
            out.append(Difference(_negation(old_run, "qualifier"), _text(old_run), None))
    for run in added:
        if new_run := [u for u in run if u.key not in moved]:
            out.append(Difference(_negation(new_run, "qualifier"), None, _text(new_run)))
    if not out and [u.key for u in ua] != [u.key for u in ub]:
        # The same words and the same values, interleaved otherwise ("deploy v2 to prod" / "v2: deploy to prod").
        out.append(Difference("order", " ".join(u.text for u in ua), " ".join(u.text for u in ub)))
    return tuple(out)


def _around(units: list[Unit], keys: set[str]) -> str:
    """Each moved word with its neighbours ("archive with gzip"), so the agent sees where it stands."""
    spans = [" ".join(u.text for u in units[max(0, k - 1) : k + 2]) for k, u in enumerate(units) if u.key in keys]
    return " ... ".join(dict.fromkeys(spans))


def _negation(units: list[Unit], otherwise: str) -> str:
    """A changed stretch with a negation in it is a polarity difference ("restart" / "don't restart")."""
    return "polarity" if any(u.key == "not" for u in units) else otherwise
