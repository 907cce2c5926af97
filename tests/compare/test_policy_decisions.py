"""What memory and the cache do with a new text near a stored one, as ``compare.policy`` decides it.

One row per pair (written for this table; none is in the data files), several per class, the whole
decision asserted: (memory merges, memory links as an update, memory asks the agent, the cache merges,
the cache replaces). The cosine is the real local model's, as memory and the cache compute it.
"""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.compare import policy
from amplifier_module_tool_agent_memory.embeddings import CachedEmbedder

# (memory merge, memory link, memory asks, cache merge, cache replace)
CERTIFIED = (True, False, False, True, False)
RESTATED = (True, False, False, False, False)
UPDATED = (False, True, False, False, True)
TWO_FACTS = (False, False, False, False, False)
ASKED = (False, False, True, False, False)

TABLE = [
    # Certified the same (case and punctuation only): the only pairs the cache merges.
    (CERTIFIED, "The staging cluster runs 4 nodes.", "The staging cluster runs 4 nodes"),
    (CERTIFIED, "Our office closes at 6 pm on Fridays.", "our office closes at 6 pm on fridays"),
    # A restatement in other words: memory merges (shown, undone by memory_unmerge); the cache keeps both.
    (RESTATED, "Buy two tickets for the Friday concert.", "Purchase two tickets for the Friday concert."),
    (RESTATED, "The printer on floor 3 is broken.", "The printer on floor 3 is busted."),
    (RESTATED, "My sister lives in Porto.", "My sister resides in Porto."),
    (RESTATED, "Priya manages the payroll export.", "The payroll export is managed by Priya."),
    (RESTATED, "The design review happens on Thursdays.", "On Thursdays the design review happens."),
    # One fact changed (a value, a name, a negation): linked in memory, replaced in the cache.
    (UPDATED, "The standup starts at 9:15.", "The standup starts at 9:45."),
    (UPDATED, "My locker number is 214.", "My locker number is 187."),
    (UPDATED, "The team uses Jira for tickets.", "The team uses Linear for tickets."),
    (UPDATED, "Remote work is allowed on Mondays.", "Remote work is not allowed on Mondays."),
    (UPDATED, "The nightly backup is enabled.", "The nightly backup is disabled."),
    # Another thing (a subject word swapped): two facts, nothing done and nothing asked.
    (TWO_FACTS, "My brother's car is a Volvo.", "My neighbour's car is a Volvo."),
    (TWO_FACTS, "The billing API runs on Java 17.", "The search API runs on Java 21."),
    (TWO_FACTS, "My cardiologist is Dr. Haas.", "My optometrist is Dr. Haas."),
    # Undecided: memory stores it and asks the agent (possible_updates); the cache keeps both.
    (ASKED, "My dentist is on Baker Street.", "My dentist has her practice over by the harbour."),
    (ASKED, "I'm allergic to peanuts.", "Peanuts give me hives."),
    (ASKED, "My yoga teacher is Ines.", "Yoga is taught by a new instructor from Lisbon."),
]


@pytest.mark.parametrize(("expected", "older", "newer"), TABLE)
def test_the_policy_decides_memory_and_the_cache(
    embedder: CachedEmbedder, expected: tuple[bool, ...], older: str, newer: str
) -> None:
    va, vb = embedder.embed_documents([older, newer])
    comparison = policy.compared(older, newer, policy.cosine(va, vb))
    decision = (
        comparison.same or policy.restates(comparison, older, newer),
        policy.acts_as_update(comparison, older, newer),
        policy.may_update(comparison, older, newer),
        policy.merges(older, newer),
        policy.replaces(comparison, older, newer),
    )
    assert decision == expected, comparison
