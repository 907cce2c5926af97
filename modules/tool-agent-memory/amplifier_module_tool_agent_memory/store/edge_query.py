"""The store language (:mod:`.query`) translated into Qdrant Edge request objects, in one place."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from .contract import iso
from .query import AnyOf, Bm25, Bound, Condition, Filter, Fused, IsEmpty, Match, Nearest, Range, Scroll, Search, fields

if TYPE_CHECKING:
    import qdrant_edge


def _bound(value: Bound | None) -> Any:
    if value is None:
        return None
    return iso(value) if isinstance(value, datetime) else float(value)


def _condition(cond: Condition) -> Any:
    import qdrant_edge as qe

    if isinstance(cond, Filter):
        return to_filter(cond)
    if isinstance(cond, Match):
        return qe.FieldCondition(cond.key, match=qe.MatchValue(cond.value))
    if isinstance(cond, AnyOf):
        return qe.FieldCondition(cond.key, match=qe.MatchAny(list(cond.values)))  # type: ignore[arg-type]
    if isinstance(cond, Range):
        bounds = {name: _bound(getattr(cond, name)) for name in ("gt", "gte", "lt", "lte")}
        rng = qe.RangeDateTime(**bounds) if cond.of_datetimes else qe.RangeFloat(**bounds)
        return qe.FieldCondition(cond.key, range=rng)
    if isinstance(cond, IsEmpty):
        return qe.IsEmptyCondition(cond.key)
    raise TypeError(f"not a store condition: {cond!r}")


def to_filter(flt: Filter | None) -> qdrant_edge.Filter | None:
    """The Edge filter of a store filter (``None`` stays no filter)."""
    import qdrant_edge as qe

    if flt is None:
        return None

    def conditions(items: tuple[Condition, ...]) -> list[Any] | None:
        return [_condition(c) for c in items] if items else None

    return qe.Filter(must=conditions(flt.must), should=conditions(flt.should), must_not=conditions(flt.must_not))


def _query(query: Nearest | Bm25) -> Any:
    import qdrant_edge as qe

    if isinstance(query, Nearest):
        return qe.Query.Nearest(list(query.vector), using=query.using)
    return qe.TextQuery(query.field, query.text, qe.Bm25Params(k=query.k, b=query.b))


def to_query_request(search: Search) -> qdrant_edge.QueryRequest:
    """The Edge query request of a store search."""
    import qdrant_edge as qe

    flt = to_filter(search.filter)
    params = qe.SearchParams(exact=True) if search.exact else None
    if isinstance(search.query, Fused):
        prefetches = [
            qe.Prefetch(limit=stage.limit, query=_query(stage.query), filter=to_filter(stage.filter))
            for stage in search.query.stages
        ]
        return qe.QueryRequest(
            limit=search.limit,
            prefetches=prefetches,
            # The stub types `query` as Fusion, but Fusion.Rrf is a nested class, not a subclass.
            query=qe.Fusion.Rrf(k=search.query.k),  # type: ignore[arg-type]
            filter=flt,
            with_payload=fields(search.with_payload),
            with_vector=fields(search.with_vector),
            params=params,
        )
    return qe.QueryRequest(
        limit=search.limit,
        query=_query(search.query),
        filter=flt,
        with_payload=fields(search.with_payload),
        with_vector=fields(search.with_vector),
        params=params,
    )


def to_scroll_request(scroll: Scroll) -> qdrant_edge.ScrollRequest:
    """The Edge scroll request of a store scroll."""
    import qdrant_edge as qe

    order = None
    if scroll.order is not None:
        direction = qe.Direction.Desc if scroll.order.descending else qe.Direction.Asc
        order = qe.OrderBy(scroll.order.key, direction=direction)
    return qe.ScrollRequest(
        offset=scroll.offset,
        limit=scroll.limit,
        filter=to_filter(scroll.filter),
        with_payload=fields(scroll.with_payload),
        with_vector=fields(scroll.with_vector),
        order_by=order,
    )
