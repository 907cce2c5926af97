"""The store language (store/query.py) means the same on both backends.

Congruence, as qdrant-client's own tests check its local mode against a server: one collection
with the same points on the embedded Qdrant Edge store and on the server backend (qdrant-client's
local mode standing in for a server), every kind of condition, scroll, count and search asked of
both, and the answers compared. Vectors are small and random: no embedding model is involved.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from data import SERVER_URL

from amplifier_module_tool_agent_memory.config import StorageConfig
from amplifier_module_tool_agent_memory.store.contract import Collection, CollectionSpec, IndexSpec
from amplifier_module_tool_agent_memory.store.edge import acquire_store, release_store
from amplifier_module_tool_agent_memory.store.query import (
    AnyOf,
    Bm25,
    Candidates,
    Filter,
    Fused,
    IsEmpty,
    Match,
    Nearest,
    Order,
    Range,
    Scroll,
    Search,
    all_of,
    fields_in,
    vectors_asked,
    where,
)
from amplifier_module_tool_agent_memory.store.server import acquire_server_store, release_server_store

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

DIM = 8
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SPEC = CollectionSpec(
    "things",
    (
        IndexSpec("kind", "keyword"),
        IndexSpec("tags", "keyword"),
        IndexSpec("n", "integer"),
        IndexSpec("at", "datetime"),
        IndexSpec("text", "text"),
    ),
    vectors=("dense", "other"),
)
WORDS = ("harbour", "lantern", "orchard", "granite", "meadow", "violin", "copper", "saffron")


def _points() -> list[tuple[str, dict[str, list[float]], dict[str, Any]]]:
    rng = random.Random(7)
    points = []
    for i in range(40):
        payload: dict[str, Any] = {
            "kind": ("fact", "note", "decision")[i % 3],
            "n": i,
            "at": (T0 + timedelta(hours=i)).isoformat().replace("+00:00", "Z"),
            "text": f"the {WORDS[i % len(WORDS)]} and the {WORDS[(i * 3) % len(WORDS)]}",
        }
        if i % 4:
            payload["tags"] = [f"t{i % 5}", f"t{i % 7}"]
        vectors = {name: [rng.uniform(-1, 1) for _ in range(DIM)] for name in ("dense", "other")}
        points.append((f"00000000-0000-0000-0000-{i:012d}", vectors, payload))
    return points


@pytest.fixture
def both(tmp_path: Path, server: Callable[[], Any]) -> Iterator[tuple[Collection, Collection]]:
    """The same collection, with the same points, on the embedded store and on the server backend."""
    edge_store = acquire_store(tmp_path / "edge", "alice", "test-model", DIM)
    server_store = acquire_server_store(StorageConfig(backend="server", url=SERVER_URL), "alice", "test-model", DIM)
    try:
        colls = (edge_store.collection(SPEC), server_store.collection(SPEC))
        for coll in colls:
            coll.upsert(_points())
        yield colls
    finally:
        release_store(edge_store)
        release_server_store(server_store)


def _ids(points: list[Any]) -> list[str]:
    return [str(p.id) for p in points]


def _ranking(points: list[Any]) -> tuple[list[float], list[tuple[float, str]]]:
    """Every score, best first, and (score, id) of the points above the last score, ties by id.

    Points of equal score (RRF ties) come in the engine's own order, and which of those tied at the
    cut make the page is the engine's choice too: only the scores of those are compared.
    """
    ranked = sorted(((round(p.score, 5), str(p.id)) for p in points), key=lambda s: (-s[0], s[1]))
    last = ranked[-1][0] if ranked else None
    return [score for score, _ in ranked], [(score, pid) for score, pid in ranked if score != last]


def _all(coll: Collection, flt: Filter | None) -> set[str]:
    found: set[str] = set()
    offset: Any = None
    while True:
        page, offset = coll.scroll(Scroll(limit=7, filter=flt, offset=offset, with_payload=False))
        found.update(_ids(page))
        if offset is None:
            return found


FILTERS: dict[str, Filter | None] = {
    "none": None,
    "match": where(kind="fact"),
    "match an integer": where(n=5),
    "any of": all_of(AnyOf("tags", ["t1", "t3"])),
    "match in a list": where(tags="t2"),
    "range of numbers": all_of(Range("n", gte=10, lt=20)),
    "range of datetimes": all_of(Range("at", gt=T0 + timedelta(hours=5), lte=T0 + timedelta(hours=9))),
    "is empty": all_of(IsEmpty("tags")),
    "must not": Filter(must_not=(Match("kind", "note"),)),
    "should": Filter(should=(Match("n", 1), Match("n", 2), Range("n", gte=38))),
    "nested": Filter(
        must=(Filter(should=(Match("kind", "fact"), Match("kind", "decision"))),),
        must_not=(IsEmpty("tags"), Range("n", lt=10)),
    ),
}


@pytest.mark.parametrize("name", FILTERS)
def test_every_condition_selects_the_same_points_on_both_backends(both: Any, name: str) -> None:
    edge, server = both
    flt = FILTERS[name]
    selected = _all(edge, flt)
    assert selected == _all(server, flt)
    assert edge.count(flt) == server.count(flt) == len(selected)
    if flt is not None:
        assert 0 < len(selected) < 40, "a filter that keeps all or nothing proves little"


@pytest.mark.parametrize("descending", [False, True])
def test_an_ordered_scroll_answers_the_same_page(both: Any, descending: bool) -> None:
    scroll = Scroll(limit=6, filter=where(kind="note"), order=Order("n", descending=descending))
    pages = [coll.scroll(scroll)[0] for coll in both]
    assert _ids(pages[0]) == _ids(pages[1])
    ns = [p.payload["n"] for p in pages[0]]
    assert ns == sorted(ns, reverse=descending) and len(ns) == 6


def test_a_partial_payload_and_named_vectors_come_back_alike(both: Any) -> None:
    for coll in both:
        page, _ = coll.scroll(Scroll(limit=1, filter=where(n=3), with_payload=("n", "kind"), with_vector=("other",)))
        assert page[0].payload == {"n": 3, "kind": "fact"}
        assert set(page[0].vector) == {"other"} and len(page[0].vector["other"]) == DIM


def test_a_retrieve_answers_the_vectors_it_names_and_only_those(both: Any) -> None:
    # Recall reads its best 10 with the dense vector only (the ctx vector doubled the read's cost).
    wanted = [_points()[4][0], _points()[9][0]]
    for coll in both:
        named, every, none = (coll.retrieve(wanted, with_vector=v) for v in (("dense",), True, False))
        assert [str(p.id) for p in named] == wanted
        for one, whole in zip(named, every, strict=True):
            assert set(one.vector) == {"dense"} and set(whole.vector) == {"dense", "other"}
            assert one.vector["dense"] == whole.vector["dense"] and one.payload == whole.payload
        assert all(not p.vector for p in none)


def test_the_vectors_asked_of_a_point_read_from_the_journal() -> None:
    vectors = {"dense": [1.0], "other": [2.0]}
    assert vectors_asked(vectors, ("other",)) == {"other": [2.0]}
    assert vectors_asked(vectors, True) == vectors and vectors_asked(vectors, False) is None
    assert vectors_asked(None, ("dense",)) is None
    assert fields_in(["dense"]) == ("dense",) and fields_in(True) is True and fields_in(None) is False


@pytest.mark.parametrize("using", ["dense", "other"])
def test_the_nearest_points_are_the_same_in_the_same_order(both: Any, using: str) -> None:
    target = _points()[11]  # a note: the kind filter below excludes it
    query = Nearest(target[1][using], using=using)
    unfiltered = [coll.query(Search(query, limit=5)) for coll in both]
    filtered = [coll.query(Search(query, limit=5, filter=where(kind="decision"))) for coll in both]
    for answers in (unfiltered, filtered):
        assert _ranking(answers[0]) == _ranking(answers[1])
    assert _ids(unfiltered[0])[0] == target[0]
    assert all(p.payload["kind"] == "decision" for p in filtered[0])


def test_a_fused_search_ranks_alike(both: Any) -> None:
    point = _points()[20][1]
    fused = Fused(
        (Candidates(Nearest(point["dense"]), 10), Candidates(Nearest(point["other"], using="other"), 10)), k=60
    )
    answers = [coll.query(Search(fused, limit=8)) for coll in both]
    assert _ranking(answers[0]) == _ranking(answers[1])
    assert _ids(answers[0])[0] == _points()[20][0]
    # The search's filter holds for every stage: the point itself, excluded, is in no stage's candidates.
    without = [coll.query(Search(fused, limit=8, filter=Filter(must_not=(Match("n", 20),)))) for coll in both]
    assert _ranking(without[0]) == _ranking(without[1])
    assert _points()[20][0] not in _ids(without[0])


def test_a_text_query_finds_its_word_on_both(both: Any) -> None:
    # Unstemmed words only: local mode's BM25 does not stem (a server's does, as Edge's).
    for coll in both:
        hits = coll.query(Search(Bm25("text", "violin"), limit=40))
        assert hits and all("violin" in p.payload["text"] for p in hits)
        assert {p.payload["n"] for p in hits} == {n for n in range(40) if "violin" in _points()[n][2]["text"]}


def test_delete_by_filter_deletes_the_same_points(both: Any) -> None:
    for coll in both:
        coll.delete_by_filter(all_of(Match("kind", "fact"), Range("n", lt=20)))
    assert _all(both[0], None) == _all(both[1], None)
    assert both[0].count() == 40 - 7


def test_a_range_refuses_mixed_bounds_and_no_bound() -> None:
    with pytest.raises(ValueError, match="mixes"):
        Range("n", gte=1, lt=T0)
    with pytest.raises(ValueError, match="at least one bound"):
        Range("n")


def test_an_exact_search_answers_the_same_on_both(both: Any) -> None:
    query = Nearest(_points()[5][1]["dense"])
    answers = [coll.query(Search(query, limit=10, filter=where(kind="note"), exact=True)) for coll in both]
    assert _ranking(answers[0]) == _ranking(answers[1]) and len(answers[0]) == 10
