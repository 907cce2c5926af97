"""The answer of a comparison of two short texts: same, changed (with what differs) or different."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["DIFFERENCE_KINDS", "Comparison", "Difference", "Verdict"]

DIFFERENCE_KINDS = (
    "number",
    "date",
    "time",
    "version",
    "identifier",
    "path",
    "url",
    "colour",
    "quoted",
    "name",
    "polarity",
    "order",
    "qualifier",
    "content",
    "term",
)
"""Every value ``Difference.kind`` takes. ``content`` is a substituted or added word the comparison cannot
judge; ``term`` a substituted word that WordNet says names another thing (unrelated, or a broader or
narrower noun)."""


class Verdict(StrEnum):
    """What the second text is to the first."""

    SAME = "same"
    """A restatement: the same slots and values in other words."""
    CHANGED = "changed"
    """The same thing with something different (see ``Comparison.differences``)."""
    DIFFERENT = "different"
    """About something else."""


@dataclass(frozen=True)
class Difference:
    """One thing that differs between the two texts.

    ``old`` is the value in the first text and ``new`` the value in the second; None means
    the value is absent from that text (an added or dropped qualifier, for instance).
    """

    kind: str
    old: str | None
    new: str | None

    def describe(self) -> str:
        """A one-line account, e.g. ``number: 100 requests/minute -> 200 requests/minute``."""
        return f"{self.kind}: {self.old if self.old is not None else '(none)'} -> " + (
            self.new if self.new is not None else "(none)"
        )


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`.policy.compared`.

    ``similarity`` is the whole-text cosine the comparison used. ``decided`` is False when
    the texts look alike but the comparison cannot tell a restatement from a change (memory
    then asks the agent: ``possible_updates``); ``verdict`` is then the leaning (SAME when
    nothing concrete differs, else CHANGED), never to be acted on alone.
    """

    verdict: Verdict
    differences: tuple[Difference, ...]
    similarity: float
    decided: bool
    reason: str = ""
    """A short human-readable account of how the verdict was reached."""

    @property
    def same(self) -> bool:
        """A decided restatement."""
        return self.decided and self.verdict is Verdict.SAME
