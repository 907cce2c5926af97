"""The store's request language (:mod:`.query`) as JSON values and back, for a request another process runs.

A request is a tree of :mod:`.query`'s frozen dataclasses: each is written as its class name and its
fields; a datetime as its ISO text; a tuple as a list (read back as a tuple); a run of floats (a query's
vector) as its float64 bytes in base64, exact and cheap to write and read. Only the classes of
:mod:`.query` are read back: anything else is refused.
"""

from __future__ import annotations

import base64
import dataclasses
import sys
from array import array
from datetime import datetime
from typing import Any
from uuid import UUID

from . import query

TAG = "$q"
TIME = "$t"
FLOATS = "$v"
# Shorter runs of floats are written as JSON numbers: packing pays from a vector's length on.
_PACK_FROM = 8


def pack_floats(values: Any) -> Any:
    """A vector (a list or tuple of floats) as ``{"$v": base64 of little-endian float64}``; anything else as it is.

    JSON writes a float as its shortest decimal text and reads it back by parsing it: for a vector of 384
    floats that is ~8 KB and most of a request's encoding time. The bytes are the same values, exactly.
    """
    if not isinstance(values, list | tuple) or len(values) < _PACK_FROM or not all(type(v) is float for v in values):
        return values
    packed = array("d", values)
    if sys.byteorder != "little":
        packed.byteswap()
    return {FLOATS: base64.b64encode(packed.tobytes()).decode("ascii")}


def unpack_floats(value: Any) -> Any:
    """The list of floats :func:`pack_floats` packed; anything else (a plain list included) as it is."""
    if not (isinstance(value, dict) and FLOATS in value):
        return value
    packed = array("d")
    packed.frombytes(base64.b64decode(str(value[FLOATS])))
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tolist()


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
        packed = pack_floats(obj)
        return packed if packed is not obj else [encode(x) for x in obj]
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
    if FLOATS in tree:
        return tuple(unpack_floats(tree))
    name = tree.get(TAG)
    if name is None:
        return {k: decode(v) for k, v in tree.items()}
    cls = _CLASSES.get(str(name))
    if cls is None:
        raise TypeError(f"unknown request kind {name!r}")
    return cls(**{k: decode(v) for k, v in tree.items() if k != TAG})
