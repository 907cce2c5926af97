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

from .certify import certify
from .describe import describe
from .types import Difference

__all__ = ["Action", "Assessment", "Judge", "assess"]


class Action(StrEnum):
    """What the module does with a stored text near a new one."""

    ACT = "act"
    ASK = "ask"
    NONE = "none"


class Judge(Protocol):
    """Settles a pair the comparison could not certify (``judge: provider``): True the same, False not,
    None when it could not tell (failure, timeout): the agent is asked then."""

    name: str

    def same(self, stored: str, asked: str, differences: Sequence[Difference]) -> bool | None:
        """Whether ``asked`` is the same request / statement as ``stored``."""
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
