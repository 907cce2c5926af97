"""The one token counter of the module: ``ceil(characters / 4)``.

Every budget the cache enforces and every count it reports uses :func:`count_tokens`,
so a reported count can be checked against its budget with the same rule. A model's
own tokenizer would disagree by a few percent either way; what matters is that the
counter that reports is the counter that enforces.

A tool's output reaches the model as :func:`render` of the output dict: ``json.dumps``
with its default separators and ASCII escaping, which is exactly what
``amplifier_core.ToolResult.get_serialized_output`` produces for a dict. Counts of
rendered structures (such as a memory pack) are taken over that exact text.
"""

from __future__ import annotations

import json
from typing import Any

CHARS_PER_TOKEN = 4


def count_tokens(text: str) -> int:
    """Tokens of ``text``: its length in characters divided by 4, rounded up."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def render(value: Any) -> str:
    """The text the model sees for a tool output (``json.dumps`` defaults, as amplifier-core does)."""
    return json.dumps(value)


def count_rendered(value: Any) -> int:
    """Tokens of :func:`render` of ``value``."""
    return count_tokens(render(value))


def chars_for(tokens: int) -> int:
    """The most characters that still count as ``tokens`` tokens."""
    return tokens * CHARS_PER_TOKEN
