"""The one comparison of two short texts (issue 9): same, changed (naming what differs) or different.

Used by long-term memory dedup, working-memory cache dedup and plan lookup alike::

    comparator = Comparator(embedder)
    result = comparator.compare("The API rate limit is 100 requests per minute.",
                                "The API rate limit is 200 requests per minute.")
    result.verdict      # Verdict.CHANGED
    result.differences  # (Difference("number", "100 requests per minute", "200 requests per minute"),)
"""

from .announce import announced_update, announces_change, says_a_change
from .comparator import Comparator, CompareSettings
from .subject import another_subject, subject_positions
from .types import DIFFERENCE_KINDS, Comparison, Difference, Verdict
from .wordnet import Relation, WordNet, default_wordnet

__all__ = [
    "DIFFERENCE_KINDS",
    "Comparator",
    "CompareSettings",
    "Comparison",
    "Difference",
    "Relation",
    "Verdict",
    "WordNet",
    "announced_update",
    "announces_change",
    "another_subject",
    "default_wordnet",
    "says_a_change",
    "subject_positions",
]
