"""Edge request objects as plain JSON values and back, for a request another process runs (see :mod:`.sharing`).

The services build ``qdrant_edge`` requests (filters, queries, scrolls); a process that shares its
identity's store sends them to the owner process, which runs them on its shards. Edge's Python
objects cannot be pickled and their attributes do not mirror their constructors, so each kind the
services use is written out here by name: anything else is refused with a clear error rather than
sent half-translated. (When the store speaks its own typed language, this table becomes the
language's own encoding.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

Tree = Any
TAG = "$q"


def _dt(value: str | None) -> str | None:
    # Edge reads datetimes back as "2026-01-01 00:00:00.123 UTC"; it parses RFC 3339 on the way in.
    if value is None or not value.endswith(" UTC"):
        return value
    return value.removesuffix(" UTC").replace(" ", "T", 1) + "Z"


def encode(obj: Any) -> Tree:
    """``obj`` (an Edge request, filter or any JSON value built of them) as a JSON value."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, list | tuple):
        return [encode(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, UUID):
        return str(obj)
    kind = _kind(obj)
    fields = _FIELDS[kind]
    out: dict[str, Any] = {TAG: kind}
    for name, read in fields.items():
        value = read(obj)
        if value is not None:
            out[name] = encode(value)
    return out


def decode(tree: Tree) -> Any:
    """The Edge object (or JSON value) :func:`encode` wrote."""
    if isinstance(tree, list):
        return [decode(x) for x in tree]
    if not isinstance(tree, dict):
        return tree
    kind = tree.get(TAG)
    if kind is None:
        return {k: decode(v) for k, v in tree.items()}
    build = _BUILD.get(str(kind))
    if build is None:
        raise TypeError(f"unknown request kind {kind!r}")
    return build({k: decode(v) for k, v in tree.items() if k != TAG})


def _kind(obj: Any) -> str:
    import qdrant_edge as qe

    if isinstance(obj, qe.Query):
        # Read back from a request, a Query.Nearest is the opaque base class (see server._nearest_parts).
        return "Query.Nearest"
    for kind in _FIELDS:
        cls: Any = qe
        for part in kind.split("."):
            cls = getattr(cls, part)
        if isinstance(obj, cls):
            return kind
    raise TypeError(f"a {type(obj).__qualname__} cannot be sent to the process that owns the store")


def _nearest(obj: Any) -> dict[str, Any]:
    from .server import _nearest_parts

    vector, using = _nearest_parts(obj)
    return {"query": vector, "using": using}


def _reader(name: str, then: Callable[[Any], Any] = lambda value: value) -> Callable[[Any], Any]:
    return lambda obj: then(getattr(obj, name))


def _attrs(*names: str) -> dict[str, Callable[[Any], Any]]:
    return {name: _reader(name) for name in names}


def _direction(obj: Any) -> str | None:
    import qdrant_edge as qe

    if obj.direction is None:
        return None
    return "desc" if obj.direction == qe.Direction.Desc else "asc"


_FIELDS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "Filter": _attrs("must", "should", "must_not"),
    "FieldCondition": _attrs("key", "match", "range", "is_empty", "is_null"),
    "MatchValue": _attrs("value"),
    "MatchAny": _attrs("value"),
    "MatchExcept": _attrs("value"),
    "RangeDateTime": {name: _reader(name, _dt) for name in ("gt", "gte", "lt", "lte")},
    "RangeFloat": _attrs("gt", "gte", "lt", "lte"),
    "HasIdCondition": {"point_ids": lambda obj: sorted(map(str, obj.point_ids))},  # a set of UUIDs: sent as strings
    "IsEmptyCondition": _attrs("key"),
    "IsNullCondition": _attrs("key"),
    "QueryRequest": _attrs("limit", "offset", "query", "prefetches", "with_vector", "with_payload", "filter",
                           "score_threshold"),
    "Prefetch": _attrs("limit", "query", "prefetches", "filter", "score_threshold"),
    "Query.Nearest": {"query": lambda obj: _nearest(obj)["query"], "using": lambda obj: _nearest(obj)["using"]},
    "TextQuery": _attrs("field", "query", "scoring"),
    "Bm25Params": _attrs("k", "b"),
    "Fusion.Rrf": _attrs("k", "weights"),
    "ScrollRequest": _attrs("offset", "limit", "filter", "with_payload", "with_vector", "order_by"),
    "OrderBy": {"key": lambda obj: obj.key, "direction": _direction, "start_from": lambda obj: obj.start_from},
}


def _builders() -> dict[str, Callable[[dict[str, Any]], Any]]:
    def lazy(path: str, rename: dict[str, str] | None = None) -> Callable[[dict[str, Any]], Any]:
        def build(args: dict[str, Any]) -> Any:
            import qdrant_edge as qe

            cls: Any = qe
            for part in path.split("."):
                cls = getattr(cls, part)
            return cls(**{(rename or {}).get(k, k): v for k, v in args.items()})

        return build

    def order_by(args: dict[str, Any]) -> Any:
        import qdrant_edge as qe

        direction = args.pop("direction", None)
        if direction is not None:
            args["direction"] = qe.Direction.Desc if direction == "desc" else qe.Direction.Asc
        return qe.OrderBy(**args)

    builders = {kind: lazy(kind) for kind in _FIELDS}
    builders["MatchAny"] = lazy("MatchAny", {"value": "any"})
    builders["MatchExcept"] = lazy("MatchExcept", {"value": "except"})
    builders["OrderBy"] = order_by
    has_id = lazy("HasIdCondition")
    builders["HasIdCondition"] = lambda args: has_id({"point_ids": set(args["point_ids"])})
    return builders


_BUILD = _builders()
