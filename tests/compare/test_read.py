"""``compare.read``: the values a text states, one table per recogniser (issue 16's *read* job).

Every text is written for these tests (none comes from the data files). Each row asserts the full list of
values read, as (kind, key) in order: the key is what comparison, certification and description compare.
"""

from __future__ import annotations

import pytest

from amplifier_module_tool_agent_memory.compare.read import read

VALUES: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "times of day": [
        ("Water the lawn at 6 in the morning", [("time", "06:00")]),
        ("Call me at 7 p.m. sharp", [("time", "19:00")]),
        ("Wake me at seven in the evening", [("time", "19:00")]),
        ("Call me at half past four", [("time", "04:30")]),
        ("Call me at quarter to nine", [("time", "08:45")]),
    ],
    "ranges take the unit of their end": [
        ("Close the shop 2-5pm", [("time", "14:00"), ("time", "17:00")]),
        ("Keep the logs from 30 to 90 days", [("number", "2592000s"), ("number", "7776000s")]),
        ("Run 3 to 5 replicas", [("number", "3"), ("number", "5")]),
    ],
    "numbers written otherwise": [
        ("a budget of 64k", [("number", "64000")]),
        ("a budget of 64 thousand", [("number", "64000")]),
        ("a budget of 64,000", [("number", "64000")]),
        ("Give 12 per cent off", [("number", "0.12")]),
        ("Use an 80/20 split", [("number", "80/20")]),
    ],
    "what is no number": [
        ("Back up the notes first", []),
        ("Choose one we can afford", []),
        ("Ticket 1e7014479 was triaged", [("identifier", "1e7014479")]),
    ],
}


@pytest.mark.parametrize(
    ("group", "text", "values"),
    [(group, text, values) for group, rows in VALUES.items() for text, values in rows],
)
def test_the_values_read(group: str, text: str, values: list[tuple[str, str]]) -> None:
    assert [(slot.kind, slot.key) for slot in read(text).slots] == values, group
