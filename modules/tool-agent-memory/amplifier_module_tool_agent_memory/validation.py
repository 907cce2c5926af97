"""Turn pydantic validation errors into one precise sentence per broken rule."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

_MAX_SHOWN = 60


def _field_path(loc: tuple[Any, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "input"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def describe_validation_error(exc: ValidationError) -> str:
    """``field 'importance': Input should be less than or equal to 1 (got 3)``; joined by '; '."""
    messages = []
    for err in exc.errors(include_url=False):
        field = _field_path(tuple(err.get("loc", ())))
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        if err.get("type") == "missing":
            messages.append(f"field '{field}' is required")
        elif err.get("type") == "extra_forbidden":
            messages.append(f"field '{field}' is not a known field")
        else:
            got = err.get("input")
            suffix = "" if isinstance(got, dict) or got is None or "got " in msg else f" (got {_shown(got)})"
            messages.append(f"field '{field}': {msg}{suffix}")
    return "; ".join(messages)
