"""Update chains of long-term memory: which memory replaced which (issue 9).

A chain is a line of memories about one thing, oldest to newest: each newer memory's payload
has ``supersedes`` (the id it replaced) and each older one ``superseded_by`` (its
replacement). Links are only ever made from a memory being stored to the newest of a chain,
and are only removed by unlinking or forgetting, so a chain never branches or loops; walks
are still bounded so that a damaged store cannot hang a call.

Every function runs under the caller's ``Collection.lock`` when it writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..store.contract import Collection
from .ranking import Hit
from .record import SUPERSEDED_BY as SUPERSEDED_BY
from .record import SUPERSEDES as SUPERSEDES
from .record import MemoryFields, link_payload

# Far above any real chain; only a damaged store reaches it.
MAX_CHAIN = 1_000
# How far below its replacement a superseded memory is placed (scores are RRF sums, ~0.01-0.5).
_BELOW = 1e-6


@dataclass(frozen=True)
class Member:
    """One memory of a chain."""

    id: str
    payload: dict[str, Any]

    @property
    def stored(self) -> MemoryFields:
        """Typed reads of the member's payload."""
        return MemoryFields(self.payload)


def _payload_of(coll: Collection, memory_id: str) -> dict[str, Any] | None:
    records = coll.retrieve([memory_id])
    return dict(records[0].payload or {}) if records else None


def newest_of(coll: Collection, memory_id: str, payload: dict[str, Any]) -> Member:
    """The newest memory of ``memory_id``'s chain (itself when nothing superseded it)."""
    current = Member(memory_id, payload)
    for _ in range(MAX_CHAIN):
        successor = current.stored.superseded_by
        if not successor:
            return current
        found = _payload_of(coll, str(successor))
        if found is None:
            return current
        current = Member(str(successor), found)
    return current


def chain_of(coll: Collection, memory_id: str, payload: dict[str, Any]) -> list[Member]:
    """Every memory of ``memory_id``'s chain, oldest first (one member when it has no links)."""
    start = Member(memory_id, payload)
    seen = {memory_id}
    older = _walk(coll, start, SUPERSEDES, seen)
    newer = _walk(coll, start, SUPERSEDED_BY, seen)
    return [*reversed(older), start, *newer]


def _walk(coll: Collection, start: Member, link: str, seen: set[str]) -> list[Member]:
    """The members reached from ``start`` by following ``link``, nearest first (stops at a loop or a gap)."""
    found: list[Member] = []
    current = start
    for _ in range(MAX_CHAIN):
        target = current.stored.linked(link)
        if not target or target in seen:
            break
        next_payload = _payload_of(coll, str(target))
        if next_payload is None:
            break
        current = Member(str(target), next_payload)
        seen.add(current.id)
        found.append(current)
    return found


def link(coll: Collection, older_id: str, newer_id: str) -> None:
    """Record that ``newer_id`` replaces ``older_id`` (the newer's own payload is written by the caller)."""
    coll.set_payload(older_id, link_payload(SUPERSEDED_BY, newer_id))
    coll.set_payload(newer_id, link_payload(SUPERSEDES, older_id))


def unlink(coll: Collection, newer_id: str, older_id: str) -> None:
    """Remove the link between ``newer_id`` and the memory it superseded; both stand alone again."""
    coll.delete_payload(older_id, [SUPERSEDED_BY])
    coll.delete_payload(newer_id, [SUPERSEDES])


def repair_after_forget(coll: Collection, payload: dict[str, Any]) -> None:
    """Close the gap a forgotten memory leaves in its chain.

    A -> B -> C, forget B: A -> C (C still replaces what B replaced). Forget C (the newest):
    B is the newest again, as if C had never been stored. Forget A: B replaces nothing.
    """
    stored = MemoryFields(payload)
    older, newer = stored.supersedes, stored.superseded_by
    if older and newer:
        link(coll, str(older), str(newer))
    elif older:
        coll.delete_payload(str(older), [SUPERSEDED_BY])
    elif newer:
        coll.delete_payload(str(newer), [SUPERSEDES])


def _newer_path(coll: Collection, hit: Hit, known: dict[str, dict[str, Any]]) -> list[Member]:
    """The memories that replaced ``hit``, next one first, ending with the newest of its chain."""
    path: list[Member] = []
    payload = hit.payload
    seen = {hit.id}
    for _ in range(MAX_CHAIN):
        successor = MemoryFields(payload).superseded_by
        if not successor or successor in seen:
            break
        found = known.get(str(successor))
        if found is None:
            found = _payload_of(coll, str(successor))
            if found is None:
                break
            known[str(successor)] = found
        seen.add(str(successor))
        path.append(Member(str(successor), found))
        payload = found
    return path


def current_first(coll: Collection, hits: list[Hit], include_superseded: bool, *, add_newest: bool = True) -> list[Hit]:
    """Rank every memory of a chain below the memory that replaced it; best first.

    The newest of a chain takes the best score any of its members earned (a search that
    matches only the old wording still finds the new value) and is added when the search did
    not return it (``add_newest``: off when the search was filtered, since the newest may
    not pass the filter). Each older member keeps its own score, capped just below its
    replacement's, so it stays in view (marked ``superseded_by``) unless
    ``include_superseded`` is False, which drops it.
    """
    if not any(h.stored.superseded_by for h in hits):
        return hits
    known = {h.id: h.payload for h in hits}
    score = {h.id: h.score for h in hits}
    # newest id -> (its payload, {member id: distance from the newest})
    chains: dict[str, tuple[dict[str, Any], dict[str, int]]] = {}
    newest_of_hit: dict[str, str] = {}
    for h in hits:
        path = _newer_path(coll, h, known)
        newest = path[-1] if path else Member(h.id, h.payload)
        newest_of_hit[h.id] = newest.id
        _, members = chains.setdefault(newest.id, (newest.payload, {}))
        members[h.id] = len(path)
    ranked: list[Hit] = []
    for newest_id, (payload, members) in chains.items():
        best = max(score[m] for m in members)
        if newest_id in members or add_newest:
            ranked.append(Hit(newest_id, best, payload))
        cap = best
        for member_id, distance in sorted(members.items(), key=lambda kv: kv[1]):
            if distance == 0:
                continue
            cap = min(score[member_id], cap - _BELOW)
            if include_superseded:
                ranked.append(Hit(member_id, cap, known[member_id]))
    ranked.sort(key=lambda h: h.score, reverse=True)
    return ranked
