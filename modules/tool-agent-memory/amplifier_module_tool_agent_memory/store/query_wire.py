"""The store's request language (:mod:`.query`) as JSON values and back, for a request another process runs.

A request is a tree of :mod:`.query`'s frozen dataclasses: each is written as its class name and its
fields; a datetime as its ISO text; a tuple as a list (read back as a tuple). Only the classes of
:mod:`.query` are read back: anything else is refused.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any
from uuid import UUID

from . import query

TAG = "$q"
TIME = "$t"


def _classes() -> dict[str, type]:
    return {
        name: obj
        for name, obj in vars(query).items()
        if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == query.__name__
    }


_CLASSES = _classes()


def encode(obj: Any) -> Any:
    """``obj`` (a request, a filter, or plain values) as a JSON value."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, datetime):
        return {TIME: obj.isoformat()}
    if isinstance(obj, UUID):
        return str(obj)
    if isinstance(obj, list | tuple):
        return [encode(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    name = type(obj).__name__
    if _CLASSES.get(name) is not type(obj) or not dataclasses.is_dataclass(obj) or isinstance(obj, type):
        raise TypeError(f"a {name} cannot be sent to the process that owns the store")
    out: dict[str, Any] = {TAG: name}
    for field in dataclasses.fields(obj):
        out[field.name] = encode(getattr(obj, field.name))
    return out


def decode(tree: Any) -> Any:
    """The request :func:`encode` wrote."""
    if isinstance(tree, list):
        return tuple(decode(x) for x in tree)
    if not isinstance(tree, dict):
        return tree
    if TIME in tree:
        return datetime.fromisoformat(str(tree[TIME]))
    name = tree.get(TAG)
    if name is None:
        return {k: decode(v) for k, v in tree.items()}
    cls = _CLASSES.get(str(name))
    if cls is None:
        raise TypeError(f"unknown request kind {name!r}")
    return cls(**{k: decode(v) for k, v in tree.items() if k != TAG})
