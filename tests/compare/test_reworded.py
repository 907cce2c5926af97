"""``compare.reworded``: a statement said again with its words moved, which memory merges (issue 16).

Every pair is written for these tests (none comes from the updates data file). A rewording moves words
(active / passive, a fronted time, "X is where Y") and states the same values, polarity and names about the
same thing; every other row keeps some of that shape but says something else, one group per reason, and
must never merge. Each row asserts the verdict both ways round.
"""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.compare.reworded import reworded

REWORDED = [
    # active / passive
    ("Marco runs the payroll system.", "The payroll system is run by Marco."),
    ("The nightly build uploads artifacts to Nexus.", "Artifacts are uploaded to Nexus by the nightly build."),
    ("The support team answers tickets in Freshdesk.", "Tickets are answered in Freshdesk by the support team."),
    # a time or place fronted
    ("I swim with Petra on Sunday evenings.", "Sunday evenings I swim with Petra."),
    ("Our wiki lives on Confluence.", "Confluence is where our wiki lives."),
    # turned round, with a synonym in the subject
    ("My grandmother's name is Edith.", "Edith is my grandma's name."),
]

NOT_REWORDED = {
    "a value changed": [
        ("The build runs at 2 am.", "At 3 am the build runs."),
        ("The cluster has 5 nodes.", "There are 7 nodes in the cluster."),
    ],
    "a name on one side only": [
        ("Marco runs the payroll system.", "The payroll system is run by Dana."),
        ("The support team answers tickets in Freshdesk.", "Tickets are answered in Zendesk by the support team."),
        ("I swim with Petra on Sunday evenings.", "Sunday evenings I swim with Jana."),
    ],
    "a negation": [
        ("The nightly build uploads artifacts to Nexus.", "Artifacts are not uploaded to Nexus by the nightly build."),
        ("Marco runs the payroll system.", "The payroll system is not run by Marco."),
    ],
    "a word swapped in place": [
        ("The nightly build uploads artifacts to Nexus.", "Artifacts are uploaded to Nexus by the weekly build."),
        ("The staging database is backed up nightly.", "Nightly, the production database is backed up."),
    ],
    "another person": [
        ("I like my tea strong.", "My brother likes his tea strong."),
        ("I walk the dog every morning.", "Every morning my neighbour walks the dog."),
    ],
    "nothing moved (a plain substitution)": [
        ("I take the bus to work.", "I take the tram to work."),
        ("Our wiki lives on Confluence.", "Our wiki lives on Notion."),
    ],
}


@pytest.mark.parametrize(("older", "newer"), REWORDED)
def test_a_rewording_is_reworded_both_ways(older: str, newer: str) -> None:
    assert (reworded(older, newer), reworded(newer, older)) == (True, True)


@pytest.mark.parametrize(
    ("reason", "older", "newer"), [(reason, a, b) for reason, rows in NOT_REWORDED.items() for a, b in rows]
)
def test_another_statement_is_never_reworded(reason: str, older: str, newer: str) -> None:
    assert (reworded(older, newer), reworded(newer, older)) == (False, False), reason


def test_a_text_is_not_a_rewording_of_itself() -> None:
    # Nothing moved: the same text is certified (compare.certify), not merged by this rule.
    assert reworded("Marco runs the payroll system.", "Marco runs the payroll system.") is False
