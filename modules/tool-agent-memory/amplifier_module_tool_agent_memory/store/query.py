"""The store's own small request language: what the services ask a collection, in no engine's types.

Conditions (:class:`Match`, :class:`AnyOf`, :class:`Range`, :class:`IsEmpty`, combined by a
:class:`Filter`'s must / should / must-not), scored searches (:class:`Search` of a
:class:`Nearest` dense vector, a :class:`Bm25` text query, or a :class:`Fused` reciprocal-rank
fusion of several :class:`Candidates` stages), :class:`Scroll` with :class:`Order` and paging,
and the points written and read (:data:`PointInput`, :class:`StoredPoint`).

Each backend translates these once, into its engine's objects (:mod:`.edge_query` for Qdrant
Edge, :mod:`.server` for qdrant-client); no engine type is seen above ``store/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# The name of the vector a plain (unnamed) vector is stored as.
DENSE = "dense"

# A payload value a condition compares with (keyword, integer or bool fields).
Value = str | int | bool
# A range bound: a number, or a point in time (datetime fields; timezone-aware).
Bound = float | datetime
# What of a point to return: everything (True), nothing (False), or these payload keys / vector names.
Fields = bool | tuple[str, ...]


@dataclass(frozen=True)
class Match:
    """The field equals ``value`` (for a list field: one of its elements does)."""

    key: str
    value: Value


@dataclass(frozen=True)
class AnyOf:
    """The field equals one of ``values`` (for a list field: one of its elements does)."""

    key: str
    values: tuple[Value, ...]

    def __init__(self, key: str, values: Sequence[Value]) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "values", tuple(values))


@dataclass(frozen=True)
class Range:
    """The field lies within the bounds given (all numbers, or all datetimes)."""

    key: str
    gt: Bound | None = None
    gte: Bound | None = None
    lt: Bound | None = None
    lte: Bound | None = None

    def __post_init__(self) -> None:
        bounds = [b for b in (self.gt, self.gte, self.lt, self.lte) if b is not None]
        if not bounds:
            raise ValueError(f"a range on {self.key!r} needs at least one bound")
        if len({isinstance(b, datetime) for b in bounds}) > 1:
            raise ValueError(f"a range on {self.key!r} mixes datetimes and numbers")

    @property
    def of_datetimes(self) -> bool:
        """Whether the bounds are points in time (a datetime field) rather than numbers."""
        return any(isinstance(b, datetime) for b in (self.gt, self.gte, self.lt, self.lte))


@dataclass(frozen=True)
class IsEmpty:
    """The field is missing, null or an empty list."""

    key: str


@dataclass(frozen=True)
class Filter:
    """Every ``must`` holds, at least one ``should`` holds (when any), and no ``must_not`` holds."""

    must: tuple[Condition, ...] = ()
    should: tuple[Condition, ...] = ()
    must_not: tuple[Condition, ...] = ()


Condition = Match | AnyOf | Range | IsEmpty | Filter


def all_of(*conditions: Condition) -> Filter | None:
    """A filter of these conditions all holding; ``None`` (no filter) when there are none."""
    return Filter(must=tuple(conditions)) if conditions else None


def where(**fields: Value) -> Filter:
    """A filter of fields equal to values: ``where(kind="fact", thread="t1")``."""
    return Filter(must=tuple(Match(key, value) for key, value in fields.items()))


@dataclass(frozen=True)
class Nearest:
    """The points whose named dense vector is most similar (cosine) to ``vector``."""

    vector: tuple[float, ...]
    using: str = DENSE

    def __init__(self, vector: Sequence[float], using: str = DENSE) -> None:
        # map(float) converts 384 floats in half a generator's time: recall builds two of these on every prompt.
        object.__setattr__(self, "vector", tuple(map(float, vector)))
        object.__setattr__(self, "using", using)


@dataclass(frozen=True)
class Bm25:
    """The points whose text field best matches ``text`` by BM25 (the field needs a ``text`` index)."""

    field: str
    text: str
    k: float = 1.2
    b: float = 0.75


@dataclass(frozen=True)
class Candidates:
    """One stage of a fused search: the best ``limit`` points of one query, within ``filter``."""

    query: Nearest | Bm25
    limit: int
    filter: Filter | None = None


@dataclass(frozen=True)
class Fused:
    """Reciprocal-rank fusion of several stages' rankings (``k``: RRF's rank offset)."""

    stages: tuple[Candidates, ...]
    k: int = 60


@dataclass(frozen=True)
class Search:
    """A scored search: the best ``limit`` points of ``query`` that ``filter`` admits, best first."""

    query: Nearest | Bm25 | Fused
    limit: int
    filter: Filter | None = None
    with_payload: Fields = True
    with_vector: Fields = False
    # Exact (brute-force) search instead of the HNSW index: the reference an index's recall is measured against.
    exact: bool = False


@dataclass(frozen=True)
class Order:
    """Scroll order by a payload field (it needs an index of a number or datetime kind)."""

    key: str
    descending: bool = False


@dataclass(frozen=True)
class Scroll:
    """One page of points matching ``filter``.

    Without ``order`` pages go by id: pass the ``offset`` the previous page answered. With
    ``order`` there is no paging (the engine has none): narrow the filter to continue.
    """

    limit: int = 10
    filter: Filter | None = None
    offset: Any = None
    order: Order | None = None
    with_payload: Fields = True
    with_vector: Fields = False


# A point to write: (id, a plain dense vector or vectors by name, payload).
PointInput = tuple[str, Sequence[float] | dict[str, list[float]], dict[str, Any]]
# The same with its vectors always by name (what the engines receive).
NamedPoint = tuple[str, dict[str, list[float]], dict[str, Any]]


@dataclass(frozen=True)
class StoredPoint:
    """A point as every store answers it: id, payload, score (searches), vectors by name, order value (scrolls)."""

    id: Any
    payload: dict[str, Any] | None
    score: float = 0.0
    vector: Any = None
    order_value: Any = None


def fields(value: Fields) -> bool | list[str]:
    """``with_payload`` / ``with_vector`` as both engines take it: a bool or a list of names."""
    return value if isinstance(value, bool) else list(value)


def fields_in(value: Any) -> Fields:
    """:func:`fields` as it came over the wire (JSON: a list of names, or a bool)."""
    return tuple(str(name) for name in value) if isinstance(value, list | tuple) else bool(value)


def vectors_asked(vectors: dict[str, Any] | None, wanted: Fields) -> dict[str, Any] | None:
    """Of a point's vectors by name, those ``wanted`` asks for (``None`` when it asks for none)."""
    if isinstance(wanted, bool):
        return dict(vectors) if wanted and vectors is not None else None
    return None if vectors is None else {name: v for name, v in vectors.items() if name in wanted}
