"""Comparing two short texts. Certify or ask (issue 16): ``certify`` (same or not: strict), ``describe`` (what
differs, for the agent) and ``assess`` (the one policy of when memory, cache and plans act alone).

Long-term memory and the working-memory cache act on ``policy.compared`` (same, changed naming what differs, or
different: built on ``read`` and ``certify``) to merge restatements and link updates, and memory on ``reworded``
(``compare.reworded``, built on ``describe``) for a restatement turned round; plans use only ``assess``.
"""

from .announce import announced_update, announces_change, says_a_change
from .certify import Certificate, certify
from .describe import describe
from .policy import Action, Assessment, Judge, UpdateVerdict, assess, compared
from .subject import another_subject, subject_positions
from .types import DIFFERENCE_KINDS, Comparison, Difference, Verdict
from .wordnet import Relation, WordNet, default_wordnet

__all__ = [
    "DIFFERENCE_KINDS",
    "Action",
    "Assessment",
    "Certificate",
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
    "compared",
    "default_wordnet",
    "describe",
    "says_a_change",
    "subject_positions",
]
