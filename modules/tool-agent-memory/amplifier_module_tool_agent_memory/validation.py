"""Input rules shared by every tool, and pydantic errors turned into one sentence per broken rule.

Error messages name the field and the rule, never the value: a value may be a secret
(a pasted key in a bad id), and it is the caller's own input anyway.

:class:`ToolInput` is the base of every tool input model. Before pydantic looks at the
fields it checks what pydantic cannot say well or at all: nesting depth (a deep value
would exhaust the stack on serialisation), NaN and infinity anywhere (JSON has neither;
they would be stored as null), ``true``/``false`` given for a number (Python counts a
bool as an int), and text made only of invisible characters.
"""

from __future__ import annotations

import functools
import math
import types
import unicodedata
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .redaction import redact

# Deepest nesting of a tool input (the input object is level 0; a plan's args sit at level 3).
# Far below Python's recursion limit, far above any real tool call.
MAX_DEPTH = 32
_MAX_SHOWN_KEY = 64


# ---------------------------------------------------------------------------------------
# Field paths, without values


def _key_shown(key: object) -> str | None:
    """A dict key as part of a field path, or None when it cannot be shown safely (long, odd, or a secret)."""
    if not isinstance(key, str) or not key or len(key) > _MAX_SHOWN_KEY or not key.isprintable():
        return None
    if redact(key)[1]:
        return None
    return key


_MAX_SHOWN_PARTS = 8


def _field_path(loc: tuple[Any, ...]) -> str:
    if len(loc) > _MAX_SHOWN_PARTS:  # a path thousands deep: its start and its end say enough
        return f"{_field_path(loc[:4])}…{_field_path(loc[-2:])} ({len(loc)} levels)"
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            shown = _key_shown(item)
            parts.append(("." if parts else "") + shown if shown is not None else "[…]")
    return "".join(parts) or "input"


# ---------------------------------------------------------------------------------------
# Text and values


# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt, Unicode 15): characters
# that render as nothing. Python's unicodedata has no accessor for the property; categories Cf/Cc
# cover most, these add the few letters and marks that are ignorable too (Hangul fillers, variation
# selectors, the Mongolian free variation selectors, the combining grapheme joiner).
_DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def _invisible(ch: str) -> bool:
    if ch.isspace():
        return True
    code = ord(ch)
    if any(low <= code <= high for low, high in _DEFAULT_IGNORABLE):
        return True
    # Controls, format characters, surrogates and unassigned code points show nothing either.
    return unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Cn", "Zs", "Zl", "Zp"}


_TEXT_RULE = "must contain non-whitespace text (zero-width and control characters do not count)"


def has_visible_text(value: str) -> bool:
    """True when ``value`` has at least one character that shows (not only spaces, zero-width or control)."""
    return any(not _invisible(ch) for ch in value)


def require_text(value: str) -> str:
    """A field validator body: refuse text that is empty to the eye."""
    if not has_visible_text(value):
        raise ValueError(_TEXT_RULE)
    return value


def parse_timestamp(value: object) -> datetime:
    """ISO-8601 to an aware UTC datetime; a naive time is taken as UTC."""
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            ts = datetime.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(
                "must be an ISO-8601 date or date-time such as 2026-11-22 or 2026-11-22T09:30:00Z"
            ) from exc
    else:
        raise ValueError("must be an ISO-8601 string")
    try:
        return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)
    except OverflowError as exc:  # e.g. 0001-01-01T00:00:00+14:00 is before year 1 in UTC
        raise ValueError("is out of the supported date range (years 1-9999 in UTC)") from exc


def check_point_id(value: str) -> str:
    """Ids are UUIDs (what Qdrant accepts); anything else is refused before it reaches the store."""
    try:
        return str(uuid.UUID(value.strip()))
    except ValueError as exc:
        raise ValueError("must be an id returned by this module (a UUID)") from exc


# ---------------------------------------------------------------------------------------
# The shape check every tool input gets first


def _unwrap(annotation: Any) -> tuple[Any, bool]:
    """``(inner type, is a list)`` of a field annotation: Optional, Annotated and list[...] peeled off."""
    is_list = False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            options = [a for a in get_args(annotation) if a is not type(None)]
            if len(options) != 1:
                return annotation, is_list
            annotation = options[0]
        elif origin in (list, tuple, set, frozenset) and get_args(annotation):
            is_list = True
            annotation = get_args(annotation)[0]
        else:
            return annotation, is_list


@functools.cache
def _field_rules(model: type[BaseModel]) -> dict[str, tuple[str, type[BaseModel] | None]]:
    """For each field: ``("text" | "number" | "model" | "other", nested model)``."""
    rules: dict[str, tuple[str, type[BaseModel] | None]] = {}
    for name, info in model.model_fields.items():
        inner, _ = _unwrap(info.annotation)
        if inner is str:
            rules[name] = ("text", None)
        elif inner in (int, float):
            rules[name] = ("number", None)
        elif isinstance(inner, type) and issubclass(inner, BaseModel):
            rules[name] = ("model", inner)
        else:
            rules[name] = ("other", None)
    return rules


Loc = tuple[int | str, ...]


def json_shape_problem(value: Any, max_depth: int = MAX_DEPTH) -> tuple[Loc, str] | None:
    """Where ``value`` nests deeper than ``max_depth`` or holds a non-finite number, and the rule broken.

    Iterative, so a value nested thousands deep is refused instead of exhausting the stack.
    """
    stack: list[tuple[Any, Loc]] = [(value, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return loc, "must be a finite number (NaN and infinity are not JSON)"
        if isinstance(node, dict | list | tuple):
            if len(loc) >= max_depth:
                return loc, f"nests deeper than {max_depth} levels"
            items = node.items() if isinstance(node, dict) else enumerate(node)
            stack.extend((child, (*loc, key if isinstance(key, int | str) else "?")) for key, child in items)
    return None


def field_problem(model: type[BaseModel], data: dict[str, Any]) -> tuple[Loc, str] | None:
    """A bool given for a number, or a text field of only invisible characters, in ``model``'s own fields.

    Nested models check their own fields (pydantic prefixes the location).
    """
    rules = _field_rules(model)
    for name, value in data.items():
        kind = rules.get(name, ("other", None))[0] if isinstance(name, str) else "other"
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for index, item in items:
            loc: Loc = (name,) if index is None else (name, index)
            if kind == "number" and isinstance(item, bool):
                return loc, "must be a number, not true or false"
            # Plain whitespace is left to each field's own rule (some strip it, some refuse it).
            if kind == "text" and isinstance(item, str) and item.strip() and not has_visible_text(item):
                return loc, _TEXT_RULE
    return None


def input_rule_error(title: str, loc: Loc, message: str) -> ValidationError:
    """A pydantic ValidationError for one broken rule at ``loc``, carrying no input value."""
    return ValidationError.from_exception_data(
        title, [InitErrorDetails(type=PydanticCustomError("input_rule", message), loc=loc, input=None)]
    )


class ToolInput(BaseModel):
    """Base of every tool input model: unknown fields refused, and the shape rules checked first.

    A broken rule is raised as a pydantic ValidationError (so every caller handles it as it
    handles the others) whose location is the field, at any depth.
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, data: Any) -> Any:
        if isinstance(data, dict):
            problem = json_shape_problem(data) or field_problem(cls, data)
            if problem is not None:
                raise input_rule_error(cls.__name__, *problem)
        return data


# ---------------------------------------------------------------------------------------
# Pydantic errors as sentences


def _without_value(msg: str, value: Any) -> str:
    """Belt and braces: a message that somehow contains the given text gets a neutral word instead."""
    if isinstance(value, str) and len(value) >= 3 and value in msg:
        return msg.replace(repr(value), "the given value").replace(value, "the given value")
    return msg


def describe_validation_error(exc: ValidationError) -> str:
    """``field 'importance': Input should be less than or equal to 1``; joined by '; '. Values are not shown."""
    messages = []
    for err in exc.errors(include_url=False, include_input=True):
        field = _field_path(tuple(err.get("loc", ())))
        msg = str(err.get("msg", "invalid"))
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, ") :]
        msg = _without_value(msg, err.get("input"))
        if err.get("type") == "missing":
            messages.append(f"field '{field}' is required")
        elif err.get("type") == "extra_forbidden":
            messages.append(f"field '{field}' is not a known field")
        else:
            messages.append(f"field '{field}': {msg}")
    return "; ".join(messages)
