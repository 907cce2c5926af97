"""Comparing two short texts. Certify or ask (issue 16): ``certify`` (same or not: strict), ``describe`` (what
differs, for the agent) and ``assess`` (the one policy of when memory, cache and plans act alone).

The older ``Comparator`` (issue 9) still answers same, changed (naming what differs) or different for
long-term memory's restatements and updates.

Used by long-term memory dedup, working-memory cache dedup and plan lookup alike::

    comparator = Comparator(embedder)
    result = comparator.compare("The API rate limit is 100 requests per minute.",
                                "The API rate limit is 200 requests per minute.")
    result.verdict      # Verdict.CHANGED
    result.differences  # (Difference("number", "100 requests per minute", "200 requests per minute"),)
"""

from .announce import announced_update, announces_change, says_a_change
from .certify import Certificate, certify
from .comparator import Comparator, CompareSettings
from .describe import describe
from .policy import Action, Assessment, Judge, UpdateVerdict, assess
from .subject import another_subject, subject_positions
from .types import DIFFERENCE_KINDS, Comparison, Difference, Verdict
from .wordnet import Relation, WordNet, default_wordnet

__all__ = [
    "DIFFERENCE_KINDS",
    "Action",
    "Assessment",
    "Certificate",
    "Comparator",
    "CompareSettings",
    "Comparison",
    "Difference",
    "Judge",
    "Relation",
    "UpdateVerdict",
    "Verdict",
    "WordNet",
    "announced_update",
    "announces_change",
    "another_subject",
    "assess",
    "certify",
    "default_wordnet",
    "describe",
    "says_a_change",
    "subject_positions",
]
