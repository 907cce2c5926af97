"""When the module acts alone: the one policy memory, the cache and plans follow (certify or ask).

:func:`assess` answers, for a stored text near a new one:

* ``ACT``: :func:`.certify.certify` says they are the same (or the optional judge settled it, see
  :class:`Judge`): the module may act without the agent (replay a plan on ``hit``, merge a cache item);
* ``ASK``: not certified, but the whole-text cosine reaches ``floor``: the agent is shown the stored text
  with what differs named (:func:`.describe.describe`) and decides (a plan ``candidate``, a
  ``possible_updates`` entry);
* ``NONE``: under the floor: not shown at all (noise the agent would pay tokens for).

A wrong automatic action is the worst outcome and an extra line for the agent is cheap, so nothing
but a certificate (or an explicit judge) ever answers ``ACT``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from .announce import announced_update, announces_change
from .certify import certify
from .describe import describe
from .reworded import reworded
from .statement import same_attribute_new_value
from .subject import another_subject, same_values_of_another_thing
from .types import Comparison, Difference, Verdict

__all__ = [
    "ANNOUNCED_CANDIDATES",
    "MAX_CHANGE_DIFFERENCES",
    "Action",
    "Assessment",
    "Judge",
    "UpdateVerdict",
    "acts_as_update",
    "assess",
    "is_one_change",
    "left_open",
    "may_update",
    "merges",
    "replaces",
    "restates",
    "two_facts",
]


class Action(StrEnum):
    """What the module does with a stored text near a new one."""

    ACT = "act"
    ASK = "ask"
    NONE = "none"


class UpdateVerdict(StrEnum):
    """What a judge says a newer memory is to a near older one."""

    UPDATE = "update"
    SAME = "same"
    DIFFERENT = "different"


class Judge(Protocol):
    """Settles a pair the comparison could not decide (``judge: provider``); None when it could not tell
    (failure, timeout, an unclear answer): the agent is asked then."""

    name: str

    def same(self, stored: str, asked: str, differences: Sequence[Difference]) -> bool | None:
        """Whether ``asked`` is the same request as ``stored`` (plans)."""
        ...

    def update(self, older: str, newer: str, differences: Sequence[Difference]) -> UpdateVerdict | None:
        """Whether the memory ``newer`` updates ``older``, says the same, or states another fact (memory)."""
        ...


@dataclass(frozen=True)
class Assessment:
    """The policy's answer for one stored text (see the module doc)."""

    action: Action
    cosine: float
    differences: tuple[Difference, ...] = ()
    decided_by: str = "certify"
    """``certify`` (the comparison), ``floor`` (under it), ``agent`` (left to the agent) or a judge's name."""
    reason: str = ""

    @property
    def certified(self) -> bool:
        """The comparison (not a judge) certified the pair."""
        return self.action is Action.ACT and self.decided_by == "certify"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (tool outputs, events)."""
        return {
            "action": self.action.value,
            "cosine": round(self.cosine, 4),
            "decided_by": self.decided_by,
            "differences": [d.describe() for d in self.differences],
            "reason": self.reason,
        }


def assess(stored: str, asked: str, cosine: float, *, floor: float, judge: Judge | None = None) -> Assessment:
    """ACT, ASK or NONE for ``stored`` (the earlier text) against ``asked`` (the new one) at ``cosine``."""
    certificate = certify(stored, asked)
    if certificate.same:
        return Assessment(Action.ACT, cosine, (), "certify", certificate.reason)
    if cosine < floor:
        return Assessment(Action.NONE, cosine, (), "floor", f"cosine {cosine:.2f} under the floor {floor:.2f}")
    differences = describe(stored, asked)
    if judge is not None:
        verdict = judge.same(stored, asked, differences)
        if verdict is True:
            return Assessment(Action.ACT, cosine, differences, judge.name, f"{judge.name} judged it the same")
        if verdict is False:
            return Assessment(Action.ASK, cosine, differences, judge.name, f"{judge.name} judged it different")
    return Assessment(Action.ASK, cosine, differences, "agent", certificate.reason)


# Updates: when a newer statement replaces an older one (long-term memory links it, the working-memory
# cache replaces it, memory search ranks it above). A link and a replacement are shown (``superseded``)
# and undone (``memory_unlink``; the replaced cache item is kept until it expires), so they stay
# automatic where the comparison decides (issue 16); a pair it cannot decide is put to the agent
# (``possible_updates``), and a cache merge, which keeps one text and drops the other, needs a
# certificate.

MAX_CHANGE_DIFFERENCES = 3
"""Most differences a decided change may name to be acted on as an update of one fact. Decided changes of
half A of the updates dev file name 1-3; two remarks of a conversation the comparison calls "changed" (a
number here, a dozen other words there) name 11-27, and replacing one with the other would hide a true item."""

ANNOUNCED_CANDIDATES = 3
"""A statement with a marker of change ("now", "switched", "from now on") is compared with this many nearest
stored statements of its kind, whatever their cosine, and acts only on one it announces a change of."""


def is_one_change(comparison: Comparison, older: str | None = None, newer: str | None = None) -> bool:
    """A decided change of one fact: what the memory and cache act on (link, replace, reorder).

    Given the two texts, a change that substitutes, adds or removes a word in the subject of either
    (another thing, whatever else differs: "My dentist is Dr. Patel." / "My dermatologist is Dr.
    Patel.") is two facts, not one (``subject.another_subject``); so is the same value said of another
    thing anywhere in the statement (``subject.same_values_of_another_thing``).
    """
    return (
        comparison.decided
        and comparison.verdict is Verdict.CHANGED
        and len(comparison.differences) <= MAX_CHANGE_DIFFERENCES
        and not (
            older is not None
            and newer is not None
            and (another_subject(older, newer, comparison) or same_values_of_another_thing(older, newer, comparison))
        )
    )


def left_open(comparison: Comparison) -> bool:
    """The comparison called the pair neither a restatement nor something different: a change, or undecided."""
    return not comparison.same and not (comparison.decided and comparison.verdict is Verdict.DIFFERENT)


def acts_as_update(comparison: Comparison, older: str, newer: str) -> bool:
    """``newer`` updates the fact ``older`` states: a decided change of one fact (``is_one_change``), or a
    statement that announces its change of the same thing in other words ("My dentist is Dr. Okafor." /
    "I switched dentists and now see Dr. Lindqvist.": ``announce.announces_change``) that the comparison
    did not call a restatement or something different. A change told with its reasons may look like
    something else to the comparison: it is still an update when it names what it changes
    (``announce.announced_update``), never when the comparison called it a restatement."""
    if is_one_change(comparison, older, newer):
        return True
    if left_open(comparison):
        return announces_change(older, newer)
    return not comparison.same and announced_update(older, newer)


def two_facts(comparison: Comparison, older: str, newer: str) -> bool:
    """The comparison found the pair about different things: decided DIFFERENT, or another subject or the same
    values said of another thing (``compare.subject``): nothing to ask the agent about."""
    return (comparison.decided and comparison.verdict is Verdict.DIFFERENT) or (
        another_subject(older, newer, comparison) or same_values_of_another_thing(older, newer, comparison)
    )


def may_update(comparison: Comparison, older: str, newer: str) -> bool:
    """``newer`` may update ``older`` but the comparison cannot say so: neither a restatement, nor an update it
    acts on (``acts_as_update``), nor two facts (``two_facts``). The agent is asked (``possible_updates``)."""
    return (
        not comparison.same
        and not acts_as_update(comparison, older, newer)
        and not two_facts(comparison, older, newer)
    )


def replaces(comparison: Comparison, older: str, newer: str) -> bool:
    """The working-memory cache's rule: ``newer`` (written after the live item ``older``) replaces it.

    A pack holds one value of each fact, so on top of ``acts_as_update`` a pair the comparison left open
    that keeps the subject and its predicate head and changes the ending ("My gym is FitLab on Elm
    Street." / "My gym is Pulse Fitness downtown.": ``statement.same_attribute_new_value``) replaces too:
    a pack showing both would show two values of one fact.
    """
    if acts_as_update(comparison, older, newer):
        return True
    return left_open(comparison) and same_attribute_new_value(older, newer)


def merges(older: str, newer: str) -> bool:
    """The working-memory cache merges ``newer`` into ``older`` (keeping one text, dropping the other) only when
    they are certified the same (``certify``): a merge is an action the agent neither sees nor undoes."""
    return certify(older, newer).same


def restates(comparison: Comparison, older: str, newer: str) -> bool:
    """Long-term memory merges ``newer`` into ``older`` though the comparison did not decide a restatement: the
    words moved without a value, polarity or name changing (``reworded``). A memory merge is shown and undone
    (``memory_unmerge``), so a rewording the word-by-word comparison misses may merge; the cache's may not."""
    return not comparison.same and reworded(older, newer)
