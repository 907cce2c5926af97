"""Working-memory cache: thin items in episodic blocks, two-phase search and token-budgeted packs (cache_pack.py).

The identity's ``cache`` collection is the source of truth: every item and block is a
point there (items carry their content's embedding, closed blocks their summary's). On
first use of a scope the service loads that scope into an in-memory index shared by every
session of the process that uses the same store, so that packs, searches and dedup never
scan Qdrant; every change is written through to the store under ``Collection.lock``.

Versions: each scope has a counter bumped by every write, merge, block close and eviction;
an item and a block record the version of their last change, so a delta pack is "the
live items whose version is greater than ``since_version``". The open block records the
current version on every write, so the counter survives a reopen.
"""

from __future__ import annotations

import logging
import threading
import uuid
import weakref
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..compare import Comparison, announced_update, says_a_change
from ..compare.policy import ANNOUNCED_CANDIDATES, compared, cosine, merges, replaces
from ..config import CacheConfig
from ..embeddings.providers import Embedder
from ..errors import InvalidInput, NotFound
from ..redaction import redact_fields
from ..store.contract import DENSE, Collection, CollectionSpec, IndexSpec, iso
from ..store.query import Match, Order, Range, Scroll, all_of, where
from ..tokens import count_tokens
from .calls import CURRENT_CALL, notify
from .models import (
    MAX_CONTENT_CHARS,
    CacheBlock,
    CacheFields,
    CacheItem,
    CachePackInput,
    CacheSearchInput,
    CacheWriteInput,
)
from .pack import FAR_FUTURE, build_pack, finish
from .state import CachedPack, ScopeState
from .summarise import Summariser, extractive_lines, render_summary

if TYPE_CHECKING:
    pass


logger = logging.getLogger(__name__)

# Live items of the same kind compared with a new one: one, as for long-term memory
# (memory/service.py COMPARE_CANDIDATES).
COMPARE_CANDIDATES = 1

CACHE = CollectionSpec(
    "cache",
    (
        IndexSpec("type", "keyword"),
        IndexSpec("scope", "keyword"),
        IndexSpec("block_id", "keyword"),
        IndexSpec("kind", "keyword"),
        IndexSpec("status", "keyword"),
        IndexSpec("ttl_expires_at", "datetime"),
        IndexSpec("seq", "integer"),
        IndexSpec("version", "integer"),
    ),
)

class _CacheState:
    """Everything the process knows about one identity's cache collection."""

    def __init__(self) -> None:
        self.scopes: dict[str, ScopeState] = {}
        # Earliest ttl_expires_at in the store; None = unknown (ask the store).
        self.next_expiry: datetime | None = None


_states: weakref.WeakKeyDictionary[Collection, _CacheState] = weakref.WeakKeyDictionary()
_states_lock = threading.Lock()


def _state_of(coll: Collection) -> _CacheState:
    with _states_lock:
        state = _states.get(coll)
        if state is None:
            state = _CacheState()
            _states[coll] = state
        return state


class CacheService:
    """One identity's working-memory cache, as seen by one session."""

    def __init__(
        self,
        collection: Callable[[], Collection],
        embedder: Callable[[], Embedder],
        config: CacheConfig,
        *,
        clock: Callable[[], datetime],
        identity: str | None,
        session_id: str = "local",
        llm: Summariser | None = None,
    ) -> None:
        self._collection_factory = collection
        self._embedder_factory = embedder
        self.config = config
        self.clock = clock
        self.identity = identity
        self.session_id = session_id
        self.llm = llm
        self._coll: Collection | None = None
        self._embedder: Embedder | None = None
        self._touched: set[str] = set()

    @property
    def coll(self) -> Collection:
        if self._coll is None:
            self._coll = self._collection_factory()
        return self._coll

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def _now(self) -> datetime:
        return self.clock().astimezone(UTC)

    def _expiry(self, now: datetime, ttl_minutes: float) -> datetime | None:
        return now + timedelta(minutes=ttl_minutes) if ttl_minutes > 0 else None

    # Loading and persistence

    def _scope(self, scope: str) -> ScopeState:
        state = _state_of(self.coll)
        st = state.scopes.get(scope)
        if st is None or self._written_elsewhere(st):
            st = self._load_scope(scope)
            state.scopes[scope] = st
        return st

    def _written_elsewhere(self, st: ScopeState) -> bool:
        """Whether another process sharing the store (docs/sharing.md) changed the scope since this one loaded it.

        Called under the collection lock. The open block records the scope's version on every change, and a
        close replaces it: a newer version there, or a block no longer open, means another process wrote.
        A scope without an open block has never been written here: read again (cheap, it holds nothing).
        """
        if st.open_block_id is None:
            return True
        found = self.coll.retrieve([st.open_block_id])
        if not found:
            return True
        block = CacheFields(found[0].payload or {})
        return block.status != "open" or block.version > st.version

    def _load_scope(self, scope: str) -> ScopeState:
        st = ScopeState(scope)
        flt = where(scope=scope)
        items: list[tuple[CacheItem, list[float]]] = []
        offset: Any = None
        while True:
            records, offset = self.coll.scroll(Scroll(offset=offset, limit=512, filter=flt, with_vector=True))
            for rec in records:
                payload = {**dict(rec.payload or {}), "id": str(rec.id)}
                vec = (rec.vector or {}).get(DENSE)
                try:
                    kind = CacheFields(payload).type
                    if kind == "block":
                        block = CacheBlock.model_validate(payload)
                        st.blocks[block.id] = block
                        st.block_items.setdefault(block.id, [])
                        if vec:
                            import numpy as np

                            st.block_vecs[block.id] = np.asarray(vec, dtype=np.float32)
                    elif kind == "item" and vec:
                        items.append((CacheItem.model_validate(payload), list(vec)))
                except ValueError:
                    logger.warning("skipping an unreadable cache record", extra={"id": str(rec.id), "scope": scope})
            if offset is None:
                break
        for item, vec in sorted(items, key=lambda pair: (pair[0].version, pair[0].created_at)):
            st.add_item(item, vec)
        open_blocks = sorted((b for b in st.blocks.values() if b.status == "open"), key=lambda b: b.seq)
        st.open_block_id = open_blocks[-1].id if open_blocks else None
        st.version = max(
            [0, *(b.version for b in st.blocks.values()), *(i.version for i in st.items.values())]
        )
        return st

    def _put_block(self, block: CacheBlock, vec: Sequence[float] | None = None) -> None:
        vectors: dict[str, Any] = {DENSE: list(vec)} if vec is not None else {}
        self.coll.upsert([(block.id, vectors, block.payload())])

    def _open_block(self, st: ScopeState, now: datetime) -> CacheBlock:
        seq = max([0, *(b.seq for b in st.blocks.values())]) + 1
        block = CacheBlock(id=str(uuid.uuid4()), scope=st.scope, seq=seq, created_at=now, version=st.bump())
        st.blocks[block.id] = block
        st.block_items[block.id] = []
        st.open_block_id = block.id
        self._put_block(block)
        return block

    def _open(self, st: ScopeState, now: datetime) -> CacheBlock:
        if st.open_block_id is None or st.open_block_id not in st.blocks:
            return self._open_block(st, now)
        return st.blocks[st.open_block_id]

    # Sweeping expired items

    def _earliest_expiry(self) -> datetime:
        records, _ = self.coll.scroll(Scroll(limit=1, filter=where(type="item"), order=Order("ttl_expires_at")))
        if not records:
            return FAR_FUTURE
        return CacheFields(records[0].payload or {}).ttl_expires_at or FAR_FUTURE

    def _sweep(self, now: datetime, limit: int | None) -> int:
        state = _state_of(self.coll)
        if state.next_expiry is not None and now < state.next_expiry:
            return 0
        removed = 0
        drained = False
        flt = all_of(Match("type", "item"), Range("ttl_expires_at", lte=now))
        while limit is None or removed < limit:
            batch = self.config.sweep_batch if limit is None else min(self.config.sweep_batch, limit - removed)
            records, _ = self.coll.scroll(Scroll(limit=batch, filter=flt))
            if records:
                self._remove_expired(state, [(str(r.id), dict(r.payload or {})) for r in records])
                removed += len(records)
            if len(records) < batch:
                drained = True
                break
        if drained:
            state.next_expiry = self._earliest_expiry()
        if removed:
            logger.info("cache sweep", extra={"identity": self.identity, "removed": removed})
        return removed

    def _remove_expired(self, state: _CacheState, records: list[tuple[str, dict[str, Any]]]) -> None:
        self.coll.delete([rid for rid, _ in records])
        touched_blocks: dict[str, str] = {}
        for rid, payload in records:
            item = CacheFields(payload)
            scope = item.scope
            st = state.scopes.get(scope)
            if st is not None:
                st.remove_items([rid])
            touched_blocks[item.block_id] = scope
        emptied: list[str] = []
        for block_id, scope in touched_blocks.items():
            st = state.scopes.get(scope)
            if st is not None:
                block = st.blocks.get(block_id)
                if block is not None and block.status == "closed" and not st.block_items.get(block_id):
                    st.remove_block(block_id)
                    emptied.append(block_id)
                continue
            remaining = self.coll.count(where(block_id=block_id))
            stored = self.coll.retrieve([block_id])
            if remaining == 0 and stored and CacheFields(stored[0].payload or {}).status == "closed":
                emptied.append(block_id)
        if emptied:
            self.coll.delete(emptied)
            notify("cache:evicted", {"identity": self.identity, "block_ids": emptied, "reason": "expired"})

    def sweep_expired(self, limit: int | None = None) -> int:
        """Delete expired items (at most ``limit``; all when None) and closed blocks left empty; return how many items.

        Reads already ignore expired items; this reclaims their space. ``agent-memory gc`` calls it.
        """
        with self.coll.lock:
            return self._sweep(self._now(), limit)

    # Blocks: closing and eviction

    def _close_open_block(self, st: ScopeState, now: datetime) -> tuple[CacheBlock, CacheBlock] | None:
        """Close the scope's open block (if it has live items): summary, embedding, a new open block, eviction."""
        if st.open_block_id is None:
            return None
        block = st.blocks[st.open_block_id]
        live = st.live_items_of(block.id, now)
        if not live:
            return None
        lines = extractive_lines(live)
        text = render_summary(lines, {it.id for it in live}, len(live))
        vec = self.embedder.embed_documents([text])[0]
        block.status = "closed"
        block.closed_at = now
        block.summary_lines = lines
        block.summary_text = None
        block.summary_source = "extractive"
        block.closed_items = len(live)
        block.version = st.bump()
        self._put_block(block, vec)
        import numpy as np

        st.block_vecs[block.id] = np.asarray(vec, dtype=np.float32)
        new_block = self._open_block(st, now)
        notify(
            "cache:block_closed",
            {
                "identity": self.identity,
                "scope": st.scope,
                "block_id": block.id,
                "seq": block.seq,
                "items": len(live),
                "token_count": block.token_count,
                "summary_tokens": count_tokens(text),
                "summary_source": "extractive",
            },
        )
        self._evict(st)
        return block, new_block

    def _evict(self, st: ScopeState) -> None:
        closed = sorted((b for b in st.blocks.values() if b.status == "closed"), key=lambda b: b.seq)
        while len(closed) > self.config.max_closed_blocks:
            oldest = closed.pop(0)
            self.coll.delete_by_filter(where(block_id=oldest.id))
            self.coll.delete([oldest.id])
            item_ids = st.remove_block(oldest.id)
            notify(
                "cache:evicted",
                {
                    "identity": self.identity,
                    "scope": st.scope,
                    "block_ids": [oldest.id],
                    "seq": oldest.seq,
                    "items": len(item_ids),
                    "reason": "max_closed_blocks",
                },
            )

    def _upgrade_summary(self, scope: str, block_id: str, items: list[CacheItem]) -> bool:
        """Replace a closed block's extractive summary with the LLM's; False when the LLM gave none."""
        if self.llm is None:
            return False
        ctx = CURRENT_CALL.get()
        text = self.llm.summarise(items, ctx.loop if ctx else None)
        if not text:
            return False
        vec = self.embedder.embed_documents([text])[0]
        with self.coll.lock:
            st = self._scope(scope)
            block = st.blocks.get(block_id)
            if block is None or block.status != "closed":
                return False
            block.summary_text = text
            block.summary_source = "llm"
            self._put_block(block, vec)
            import numpy as np

            st.block_vecs[block_id] = np.asarray(vec, dtype=np.float32)
        return True

    def _after_close(self, closed: CacheBlock | None, items: list[CacheItem]) -> str | None:
        """Which summariser the closed block ended with (None: nothing closed).

        The LLM pass runs outside the lock: a slow provider must not stall other sessions.
        """
        if closed is None:
            return None
        llm = self.config.summariser == "llm" and self._upgrade_summary(closed.scope, closed.id, items)
        source = "llm" if llm else "extractive"
        # The close's event is emitted after the call: it reports the summary the block ended with.
        ctx = CURRENT_CALL.get()
        for name, data in ctx.events if ctx is not None else ():
            if name == "cache:block_closed" and data.get("block_id") == closed.id:
                data["summary_source"] = source
        return source

    def _summary_of(self, st: ScopeState, block: CacheBlock, live: list[CacheItem]) -> str:
        live_ids = {it.id for it in live}
        if block.status == "open":
            return render_summary(extractive_lines(live), live_ids, len(live))
        if block.summary_source == "llm" and block.summary_text and len(live) == block.closed_items:
            return block.summary_text
        return render_summary(block.summary_lines, live_ids, len(live))

    # The tools' operations

    def _judge(
        self, st: ScopeState, content: str, vec: Sequence[float], kind: str, now: datetime
    ) -> tuple[str, CacheItem, Comparison] | None:
        """("same" | "changed", the live item, the comparison) for the nearest live items of ``kind``; None: new.

        Live items at least ``dedup_threshold`` similar are compared, nearest first; the first
        restatement or change answers. A merge keeps one text and drops the other, so only a pair certified
        the same merges (``compare.policy.merges``); a change replaces by ``compare.policy.replaces``; anything
        else keeps both (the cosine only bounds the work).
        """
        # A new item with a marker of change is compared with as many nearest live items as a memory is, whatever
        # their cosine, and replaces only one it announces a change of.
        announcing = says_a_change(content)
        limit = ANNOUNCED_CANDIDATES if announcing else COMPARE_CANDIDATES
        nearest = self._nearest_same_kind(st, vec, kind, now, limit)
        for rank, (item, similarity) in enumerate(nearest):
            # A far item (past the nearest, or under the cosine) is only replaced by a change announced of it.
            far = rank >= COMPARE_CANDIDATES or similarity < self.config.dedup_threshold
            if far and not (announcing and announced_update(item.content, content)):
                continue
            comparison = compared(item.content, content, cosine(st.vecs[item.id].tolist(), vec))
            if not far and merges(item.content, content):
                return "same", item, comparison
            if replaces(comparison, item.content, content):
                return "changed", item, comparison
        return None

    def write(self, inp: CacheWriteInput) -> dict[str, Any]:
        """Append an item to the scope's open block, merge a restatement into the live item it restates,
        or replace a live item whose value it changes (the older is marked superseded)."""
        fields, report = redact_fields({"content": inp.content, "file_ref": inp.file_ref or ""})
        content = str(fields["content"])[:MAX_CONTENT_CHARS]
        file_ref = str(fields["file_ref"]) or None
        vec = self.embedder.embed_documents([content])[0]
        closed: CacheBlock | None = None
        closed_items: list[CacheItem] = []
        with self.coll.lock:
            now = self._now()
            state = _state_of(self.coll)
            self._sweep(now, self.config.sweep_batch)
            st = self._scope(inp.scope)
            self._touched.add(inp.scope)
            judged = self._judge(st, content, vec, inp.kind, now)
            replaced: CacheItem | None = None
            if judged is not None and judged[0] == "changed":
                replaced = judged[1]
            if judged is not None and judged[0] == "same":
                _, item, comparison = judged
                similarity = comparison.similarity
                ttl = inp.ttl_minutes if inp.ttl_minutes is not None else item.ttl_minutes
                item.importance = min(1.0, round(item.importance + 0.1, 6))
                item.access_count += 1
                item.updated_at = now
                item.ttl_minutes = ttl
                item.ttl_expires_at = self._expiry(now, ttl)
                item.version = st.bump()
                st.changed(item.id)
                self.coll.set_payload(item.id, item.payload())
                if item.ttl_expires_at is None:
                    self.coll.delete_payload(item.id, ["ttl_expires_at"])
                self._record_version(st)
                block = st.blocks[item.block_id]
                out = self._write_result(st, block, item, now, merged=True)
                out["similarity"] = round(similarity, 4)
            else:
                ttl = inp.ttl_minutes if inp.ttl_minutes is not None else self.config.ttl_minutes
                block = self._open(st, now)
                item = CacheItem(
                    id=str(uuid.uuid4()),
                    scope=inp.scope,
                    block_id=block.id,
                    kind=inp.kind,
                    content=content,
                    importance=inp.importance,
                    file_ref=file_ref,
                    created_at=now,
                    updated_at=now,
                    ttl_minutes=ttl,
                    ttl_expires_at=self._expiry(now, ttl),
                    version=st.bump(),
                    tokens=count_tokens(content),
                    session=self.session_id,
                )
                self.coll.upsert([(item.id, vec, item.payload())])
                st.add_item(item, vec)
                block.token_count += item.tokens
                block.version = st.version
                self.coll.set_payload(block.id, block.payload_of("token_count", "version"))
                if replaced is not None:
                    # Kept (until it expires) but no longer live: packs, cache_get and searches skip it.
                    replaced.superseded_by = item.id
                    replaced.version = st.bump()
                    st.changed(replaced.id)
                    self.coll.set_payload(replaced.id, replaced.payload_of("superseded_by", "version"))
                    self._record_version(st)
                out = self._write_result(st, block, item, now, merged=False)
                if replaced is not None and judged is not None:
                    out["superseded"] = {
                        "item_id": replaced.id,
                        "content": replaced.content,
                        "differences": [d.describe() for d in judged[2].differences],
                    }
                if block.token_count >= self.config.close_threshold_tokens:
                    closed_items = st.live_items_of(block.id, now)
                    result = self._close_open_block(st, now)
                    if result is not None:
                        closed = result[0]
                        out["block_status"] = "closed"
                        out["new_block_id"] = result[1].id
            if item.ttl_expires_at is not None and state.next_expiry is not None:
                state.next_expiry = min(state.next_expiry, item.ttl_expires_at)
        self._after_close(closed, closed_items)
        if report:
            out["redacted"] = report
        return out

    def _record_version(self, st: ScopeState) -> None:
        """Keep the scope's version on its open block, which is never evicted or swept."""
        if st.open_block_id is not None and st.open_block_id in st.blocks:
            block = st.blocks[st.open_block_id]
            block.version = st.version
            self.coll.set_payload(block.id, block.payload_of("version"))

    def _nearest_same_kind(
        self, st: ScopeState, vec: Sequence[float], kind: str, now: datetime, limit: int
    ) -> list[tuple[CacheItem, float]]:
        """The ``limit`` live items of ``kind`` nearest to ``vec``, nearest first."""
        if not st.items:
            return []
        rows, sims = st.similarities(vec)
        found: list[tuple[CacheItem, float]] = []
        for item_id, row in rows.items():
            item = st.items[item_id]
            if item.kind == kind and item.alive(now):
                found.append((item, float(sims[row])))
        found.sort(key=lambda pair: pair[1], reverse=True)
        return found[:limit]

    def _write_result(
        self, st: ScopeState, block: CacheBlock, item: CacheItem, now: datetime, *, merged: bool
    ) -> dict[str, Any]:
        return {
            "item_id": item.id,
            "merged": merged,
            "block_id": block.id,
            "block_status": block.status,
            "token_count": block.token_count,
            "items_in_block": len(st.live_items_of(block.id, now)),
            "version": st.version,
        }

    def search(self, inp: CacheSearchInput) -> list[dict[str, Any]]:
        """Phase one: blocks of the scope ranked by relevance of their summary or best live item to the query."""
        qvec = self.embedder.embed_query(inp.query)
        import numpy as np

        q = np.asarray(qvec, dtype=np.float32)
        with self.coll.lock:
            now = self._now()
            st = self._scope(inp.scope)
            rows, sims = st.similarities(qvec)
            hits: list[tuple[float, CacheBlock, list[CacheItem]]] = []
            for block in st.blocks.values():
                live = st.live_items_of(block.id, now)
                if not live:
                    continue
                relevance = max(float(sims[rows[it.id]]) for it in live)
                summary_vec = st.block_vecs.get(block.id)
                if summary_vec is not None:
                    relevance = max(relevance, float(summary_vec @ q))
                hits.append((relevance, block, live))
            hits.sort(key=lambda h: (-h[0], -h[1].seq))
            return [
                {
                    "block_id": block.id,
                    "summary": self._summary_of(st, block, live),
                    "relevance": round(relevance, 4),
                    "created_at": iso(block.created_at),
                    "status": block.status,
                    "seq": block.seq,
                    "items": len(live),
                }
                for relevance, block, live in hits[: inp.limit]
            ]

    def _find_block(self, block_id: str) -> tuple[ScopeState, CacheBlock] | None:
        state = _state_of(self.coll)
        for st in state.scopes.values():
            block = st.blocks.get(block_id)
            if block is not None:
                return st, block
        stored = self.coll.retrieve([block_id])
        found = CacheFields(stored[0].payload or {}) if stored else None
        if found is None or found.type != "block":
            return None
        st = self._scope(found.scope)
        block = st.blocks.get(block_id)
        return (st, block) if block is not None else None

    def get(self, block_id: str) -> dict[str, Any]:
        """Phase two: a block's live items in full (reading them counts as an access: their TTL restarts)."""
        with self.coll.lock:
            now = self._now()
            found = self._find_block(block_id)
            if found is None:
                raise NotFound(
                    f"no cache block with id {block_id} for this identity: it never existed, "
                    "or it was evicted or expired. Run cache_search for current blocks"
                )
            st, block = found
            live = st.live_items_of(block.id, now)
            if block.status == "closed" and not live:
                raise NotFound(
                    f"cache block {block_id} has expired: all its items outlived their TTL or were replaced"
                )
            for item in live:
                item.access_count += 1
                item.ttl_expires_at = self._expiry(now, item.ttl_minutes)
                st.changed(item.id)
                self.coll.set_payload(item.id, item.payload_of("access_count", "ttl_expires_at"))
            self._touched.add(st.scope)
            return {
                "block_id": block.id,
                "scope": st.scope,
                "seq": block.seq,
                "status": block.status,
                "summary": self._summary_of(st, block, live),
                "token_count": block.token_count,
                "created_at": iso(block.created_at),
                "closed_at": iso(block.closed_at) if block.closed_at else None,
                "items": [it.full_view() for it in live],
            }

    def compact(self, scope: str, trigger: str = "cache_compact") -> dict[str, Any]:
        """Close the scope's open block now (if it holds live items); a new block opens."""
        closed: CacheBlock | None = None
        items: list[CacheItem] = []
        with self.coll.lock:
            now = self._now()
            st = self._scope(scope)
            self._touched.add(scope)
            if st.open_block_id is not None:
                items = st.live_items_of(st.open_block_id, now)
            result = self._close_open_block(st, now)
            if result is None:
                new_block = self._open(st, now)
            else:
                closed, new_block = result
        source = self._after_close(closed, items)
        return {
            "scope": scope,
            "closed_block_id": closed.id if closed else None,
            "new_block_id": new_block.id,
            "summary_generated": closed is not None,
            "summary_source": source,
            "items_closed": len(items) if closed else 0,
            "trigger": trigger,
        }

    def compact_touched(self, trigger: str) -> list[dict[str, Any]]:
        """Close the open block of every scope this session used; nothing is opened if it used none."""
        results = []
        for scope in sorted(self._touched):
            try:
                result = self.compact(scope, trigger=trigger)
            except Exception:
                logger.exception("compacting a cache scope failed", extra={"scope": scope})
                continue
            if result["summary_generated"]:
                results.append(result)
        return results

    # Looking without touching (the viewer)

    def scopes(self, limit: int = 200) -> list[str]:
        """The scopes that have blocks in the store, most recently started first (at most ``limit``)."""
        newest: dict[str, str] = {}
        offset: Any = None
        while True:
            records, offset = self.coll.scroll(Scroll(offset=offset, limit=512, filter=where(type="block")))
            for rec in records:
                block = CacheFields(rec.payload or {})
                scope, created = block.scope, block.created_at
                if scope and created > newest.get(scope, ""):
                    newest[scope] = created
            if offset is None:
                break
        return sorted(newest, key=lambda name: newest[name], reverse=True)[:limit]

    def peek(self, scope: str, budget: int) -> dict[str, Any]:
        """A scope as the store holds it now: live items, blocks with their summaries, and the pack the
        agent would get for ``budget`` tokens. Reads a fresh copy and changes nothing: no access count,
        no TTL, no pack cache, no touched scope (cache_get and cache_pack do all four)."""
        st = self._load_scope(scope)
        now = self._now()
        blocks = []
        for block in sorted(st.blocks.values(), key=lambda b: b.seq, reverse=True):
            live = st.live_items_of(block.id, now)
            blocks.append(
                {
                    "block_id": block.id,
                    "seq": block.seq,
                    "status": block.status,
                    "summary": self._summary_of(st, block, live),
                    "summary_source": block.summary_source,
                    "created_at": iso(block.created_at),
                    "closed_at": iso(block.closed_at) if block.closed_at else None,
                    "items": [item.full_view() for item in live],
                }
            )
        pack, _ = build_pack(st, budget, None, None, now, self.identity)
        return {"scope": scope, "version": st.version, "blocks": blocks, "pack": finish(dict(pack))}

    # Packs

    def pack(self, inp: CachePackInput) -> dict[str, Any]:
        """The memory pack: the scope's most useful live items rendered within ``token_budget`` tokens."""
        budget = inp.token_budget if inp.token_budget is not None else self.config.default_pack_budget
        key = (budget, inp.query, inp.since_version)
        with self.coll.lock:
            now = self._now()
            st = self._scope(inp.scope)
            self._touched.add(inp.scope)
            cached = st.packs.get(key)
            if cached is not None and cached.version == st.version and now < cached.valid_until:
                return finish({**cached.output, "is_fresh": True})
        qvec = self.embedder.embed_query(inp.query) if inp.query else None
        with self.coll.lock:
            now = self._now()
            st = self._scope(inp.scope)
            if inp.since_version is not None and inp.since_version > st.version:
                raise InvalidInput(
                    f"field 'since_version': {inp.since_version} is newer than scope {inp.scope!r}'s "
                    f"current version {st.version}; ask a full pack (no since_version) to resynchronise"
                )
            output, valid_until = build_pack(st, budget, qvec, inp.since_version, now, self.identity)
            if self.config.fresh_seconds > 0:
                st.packs[key] = CachedPack(
                    st.version, min(valid_until, now + timedelta(seconds=self.config.fresh_seconds)), output
                )
                if len(st.packs) > 32:
                    st.packs.pop(next(iter(st.packs)))
            return finish(dict(output))
