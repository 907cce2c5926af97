"""Is a stored prompt *the same request* as a new one? (interim rule: cosine + numbers)

Pure standard library, so the service can use it without loading the embedding model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["MatchDecision", "PromptSignature", "decide", "normalise_prompt", "signature"]

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s.!?,;:…]+$")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def normalise_prompt(text: str) -> str:
    """Normal form deciding "same prompt text": lowercase, collapsed spaces, no trailing punctuation."""
    text = _WS.sub(" ", text.strip().lower())
    return _TRAILING_PUNCT.sub("", text)


@dataclass(frozen=True)
class PromptSignature:
    """What of a prompt must agree with another prompt's for the two to be the same request."""

    text: str
    numbers: frozenset[str]


@dataclass(frozen=True)
class MatchDecision:
    """The verdict on one candidate, with the reason in words (shown to the agent on a miss)."""

    hit: bool
    similarity: float
    reason: str


def signature(text: str) -> PromptSignature:
    """The prompt's normal form and the numbers it mentions."""
    norm = normalise_prompt(text)
    return PromptSignature(norm, frozenset(str(float(n)) for n in _NUMBER.findall(norm)))


def decide(
    query: PromptSignature, candidate: PromptSignature, similarity: float, threshold: float = 0.85
) -> MatchDecision:
    """Hit when the texts are equal, or similar enough with the same numbers."""
    if query.text == candidate.text:
        return MatchDecision(True, similarity, "same prompt")
    if similarity < threshold:
        return MatchDecision(False, similarity, f"similarity {similarity:.2f} below {threshold:.2f}")
    if query.numbers != candidate.numbers:
        return MatchDecision(False, similarity, "the numbers differ")
    return MatchDecision(True, similarity, "similar and the numbers agree")
