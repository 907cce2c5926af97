"""Whether a newer cache item merges into, replaces, or stands beside the live item it is nearest to.

A pack holds one value of each fact: a newer item that changes an older one's value must
replace it, and two items about different things must both stay. The comparison (compare/)
says what differs between two texts, and ``compare.subject`` where each text's subject is (what
it is about, before its verb; the rest is the predicate, which ends with the value it states:
English puts the new information last). On top of ``is_one_change`` (a decided change of one
fact, not of its subject), the cache acts on two more shapes:

- The same subject and another ending ("My gym is FitLab on Elm Street." / "My gym is Pulse
  Fitness downtown."): the value of one fact changed, even when the comparison names several
  differences or cannot decide, unless it decided the texts are different. A loose rewording of
  a new value is still the newest statement of that fact, and a pack holding both would show two
  values of one fact.
- Another subject and the same predicate ("EU customer data is stored in Frankfurt." / "EU
  customer data backups are stored in Frankfurt."): two facts, never merged even when the
  comparison calls them a restatement (a merge keeps one text and would drop the other fact).

The shapes themselves are read by ``compare.statement``.
"""

from __future__ import annotations

from typing import Literal

from ..compare import Comparison, announced_update, announces_change
from ..compare.statement import same_attribute_new_value, same_predicate_other_subject
from ..memory.service import is_one_change, left_open

__all__ = ["judge"]


def judge(comparison: Comparison, older: str, newer: str, merge_cosine: float) -> Literal["same", "changed"] | None:
    """What ``newer``, written after the live item ``older`` in one scope, does to it (``comparison``: older
    vs newer): "same" merges into it, "changed" replaces it, None keeps both.

    A decided restatement merges from ``merge_cosine`` on, unless it says the same of another subject; a
    decided change of one fact replaces (``is_one_change``), and so does any other change or undecided pair
    that keeps the subject and its predicate head and changes the ending, or that announces its change
    (``compare.announces_change``), unless the comparison decided they are different; a change announced
    of what ``older`` states (``compare.announced_update``) replaces it even then.
    """
    if comparison.same:
        if comparison.similarity < merge_cosine or same_predicate_other_subject(older, newer):
            return None
        return "same"
    if is_one_change(comparison, older, newer):
        return "changed"
    if left_open(comparison) and (same_attribute_new_value(older, newer) or announces_change(older, newer)):
        return "changed"
    # A change told with its reasons ("... I've changed my mind: book me window seats from now on ...") may
    # look like something else to the comparison; it still names what it changes.
    if announced_update(older, newer):
        return "changed"
    return None
