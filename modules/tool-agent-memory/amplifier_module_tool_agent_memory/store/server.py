"""Qdrant server backend: the identity stores on a Qdrant server or cluster shared by many processes.

Selected by config ``storage: {backend: server, url: ...}``. The services speak the store
language (:mod:`.query`); :class:`ServerCollection` translates it into ``qdrant_client`` requests
and answers :class:`~.query.StoredPoint` as the embedded store does, so no service knows which
backend it runs on.

Layout on the server: one collection per identity and collection name,
``{collection_prefix}__{identity}__{name}`` (e.g. ``agent_memory__alice__memories``), so every
request of an identity reaches only its own collections. Each collection records the
embedding model it was written with in its collection metadata; opening it with another
model raises :class:`~.errors.ModelMismatchError`.

Concurrency: the server serialises single requests, so there is no file lock. Each
collection's ``lock`` is an in-process RLock shared by every session of the process (one
:class:`ServerStore` per server, prefix and identity, see :func:`acquire_server_store`):
read-modify-write sequences (dedup on store, plan use counters, cache blocks) are atomic
within one process, not across processes sharing an identity on the server.

Text indexes: on a server, the same stemmed English BM25 params as Edge. qdrant-client's
local mode (``QdrantClient(location=":memory:")`` or ``path=``, used by the tests through
:data:`client_factory`) implements BM25 only for the default word tokenizer, so there the
text indexes use it (see :func:`text_index_params`).
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..config import StorageConfig
from ..errors import AgentMemoryError, ConfigError, ModelMismatchError, StoreInUseError
from ..identity import validate_identity
from .contract import (
    SCHEMA_VERSION,
    BaseCollection,
    CollectionSpec,
    IndexSpec,
    NamedPoint,
    StoredPoint,
    iso,
    open_with_other_model,
    utc_now,
)
from .query import (
    AnyOf,
    Bm25,
    Bound,
    Condition,
    Fields,
    Filter,
    Fused,
    IsEmpty,
    Match,
    Nearest,
    Order,
    Range,
    Scroll,
    Search,
    fields,
)
from .registry import STORES, Registry

if TYPE_CHECKING:
    from qdrant_client import QdrantClient
    from qdrant_client.http import models as qm

logger = logging.getLogger(__name__)

API_KEY_ENV = "QDRANT_API_KEY"
SEPARATOR = "__"
# Collection metadata key holding the model record (so foreign metadata keys do not clash).
META_KEY = "agent_memory"


class StoreUnavailableError(AgentMemoryError):
    """The Qdrant server could not be reached or refused a request."""

    kind = "store_unavailable"


def build_client(config: StorageConfig) -> QdrantClient:
    """A REST client for ``config.url``; the API key falls back to ``$QDRANT_API_KEY``."""
    from qdrant_client import QdrantClient

    api_key = config.api_key or os.environ.get(API_KEY_ENV) or None
    return QdrantClient(url=config.url, api_key=api_key, timeout=max(1, math.ceil(config.timeout_s)))


# How a server store gets its client. Tests replace it (monkeypatch) with a function that returns a
# qdrant-client local-mode client, since no Qdrant server can run in the test environment.
client_factory: Callable[[StorageConfig], QdrantClient] = build_client


def is_local_mode(client: QdrantClient) -> bool:
    """Whether ``client`` is qdrant-client's in-process engine rather than a connection to a server."""
    options = client.init_options
    return options.get("location") == ":memory:" or options.get("path") is not None


def text_index_params(client: QdrantClient) -> qm.TextIndexParams:
    """BM25 text index params: Edge's stemmed English ones on a server, default tokenization in local mode."""
    from qdrant_client.http import models as qm

    if is_local_mode(client):
        # Local mode refuses text queries over any other tokenization (qdrant_client/local/bm25.py).
        return qm.TextIndexParams(type=qm.TextIndexType.TEXT, tokenizer=qm.TokenizerType.WORD, scoring=True)
    return qm.TextIndexParams(
        type=qm.TextIndexType.TEXT,
        tokenizer=qm.TokenizerType.WORD,
        lowercase=True,
        stopwords=qm.Language.ENGLISH,
        stemmer=qm.SnowballParams(type=qm.Snowball.SNOWBALL, language=qm.SnowballLanguage.ENGLISH),
        scoring=True,
        # No vector search is filtered on text: see IndexSpec.hnsw.
        enable_hnsw=False,
    )


def _index_schema(client: QdrantClient, spec: IndexSpec) -> Any:
    from qdrant_client.http import models as qm

    if spec.kind == "text":
        return text_index_params(client)
    params: dict[str, Any] = {
        "keyword": qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, enable_hnsw=spec.hnsw),
        "datetime": qm.DatetimeIndexParams(type=qm.DatetimeIndexType.DATETIME, enable_hnsw=spec.hnsw),
        "float": qm.FloatIndexParams(type=qm.FloatIndexType.FLOAT, enable_hnsw=spec.hnsw),
        "integer": qm.IntegerIndexParams(type=qm.IntegerIndexType.INTEGER, enable_hnsw=spec.hnsw),
        "bool": qm.BoolIndexParams(type=qm.BoolIndexType.BOOL, enable_hnsw=spec.hnsw),
    }
    return params[spec.kind]


def collection_name(prefix: str, identity: str, name: str) -> str:
    """The server collection of one identity's collection: ``{prefix}__{identity}__{name}``."""
    if SEPARATOR in name:
        raise ValueError(f"collection name {name!r} must not contain {SEPARATOR!r}")
    return SEPARATOR.join((prefix, validate_identity(identity), name))


@contextmanager
def _server_errors(url: str) -> Iterator[None]:
    """Turn transport and HTTP failures into errors that say what to check."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    try:
        yield
    except ResponseHandlingException as exc:
        raise StoreUnavailableError(
            f"the Qdrant server at {url} did not answer ({exc.source or exc}); check storage.url and that "
            "the server is running"
        ) from exc
    except UnexpectedResponse as exc:
        hint = " check storage.api_key (or $QDRANT_API_KEY)" if exc.status_code in (401, 403) else ""
        detail = exc.content.decode("utf-8", "replace")[:300]
        raise StoreUnavailableError(
            f"the Qdrant server at {url} refused a request: HTTP {exc.status_code} {detail}.{hint}"
        ) from exc


# The store language (see .query) translated into qdrant_client models, in one place.


def _bound(value: Bound | None) -> Any:
    if value is None:
        return None
    return iso(value) if isinstance(value, datetime) else float(value)


def _condition(cond: Condition) -> Any:
    from qdrant_client.http import models as qm

    if isinstance(cond, Filter):
        return to_filter(cond)
    if isinstance(cond, Match):
        return qm.FieldCondition(key=cond.key, match=qm.MatchValue(value=cond.value))
    if isinstance(cond, AnyOf):
        return qm.FieldCondition(key=cond.key, match=qm.MatchAny(any=list(cond.values)))
    if isinstance(cond, Range):
        bounds = {name: _bound(getattr(cond, name)) for name in ("gt", "gte", "lt", "lte")}
        rng = qm.DatetimeRange(**bounds) if cond.of_datetimes else qm.Range(**bounds)
        return qm.FieldCondition(key=cond.key, range=rng)
    if isinstance(cond, IsEmpty):
        return qm.IsEmptyCondition(is_empty=qm.PayloadField(key=cond.key))
    raise TypeError(f"not a store condition: {cond!r}")


def to_filter(flt: Filter | None) -> qm.Filter | None:
    """The qdrant_client filter of a store filter (``None`` stays no filter)."""
    from qdrant_client.http import models as qm

    if flt is None:
        return None

    def conditions(items: tuple[Condition, ...]) -> list[Any] | None:
        return [_condition(c) for c in items] if items else None

    return qm.Filter(must=conditions(flt.must), should=conditions(flt.should), must_not=conditions(flt.must_not))


def _bm25_value(value: float) -> float:
    # BM25 parameters arrive as Python floats; rounded so a value read back from an f32 elsewhere sends as written.
    return round(float(value), 6)


def to_query(query: Nearest | Bm25 | Fused) -> tuple[Any, str | None, list[qm.Prefetch] | None]:
    """A store query as ``(qdrant_client query, using, prefetch stages)``."""
    from qdrant_client.http import models as qm

    if isinstance(query, Nearest):
        return qm.NearestQuery(nearest=list(query.vector)), query.using, None
    if isinstance(query, Bm25):
        bm25 = qm.Bm25Params(k=_bm25_value(query.k), b=_bm25_value(query.b))
        text = qm.TextQueryInput(query=query.text, scoring=qm.Bm25Scoring(bm25=bm25))
        # A text query names its payload field with `using`.
        return qm.TextQuery(text=text), query.field, None
    stages = []
    for stage in query.stages:
        inner, using, _ = to_query(stage.query)
        stages.append(qm.Prefetch(query=inner, using=using, filter=to_filter(stage.filter), limit=stage.limit))
    return qm.RrfQuery(rrf=qm.Rrf(k=query.k)), None, stages


def _order_by(order: Order | None) -> qm.OrderBy | None:
    from qdrant_client.http import models as qm

    if order is None:
        return None
    return qm.OrderBy(key=order.key, direction=qm.Direction.DESC if order.descending else qm.Direction.ASC)


def _point(p: Any) -> StoredPoint:
    return StoredPoint(
        id=p.id,
        payload=p.payload,
        score=float(getattr(p, "score", 0.0) or 0.0),
        vector=p.vector,
        order_value=getattr(p, "order_value", None),
    )


class ServerCollection(BaseCollection):
    """One identity's collection on the server.

    ``lock`` serialises read-modify-write sequences within this process only.
    """

    def __init__(self, name: str, server_name: str, client: QdrantClient, url: str, vector_count: int = 1) -> None:
        super().__init__(name, vector_count)
        self.server_name = server_name
        self.client = client
        self.url = url

    def _engine_upsert(self, points: list[NamedPoint]) -> None:
        from qdrant_client.http import models as qm

        batch = [qm.PointStruct(id=pid, vector=vecs, payload=payload) for pid, vecs, payload in points]
        with _server_errors(self.url):
            self.client.upsert(self.server_name, points=batch, wait=True)

    whole_payloads = False
    local_reads = False  # every read is an HTTP round trip

    def _engine_set_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        with _server_errors(self.url):
            self.client.set_payload(self.server_name, payload=payload, points=[point_id], wait=True)

    def _engine_delete_payload(self, point_id: str, keys: list[str]) -> None:
        with _server_errors(self.url):
            self.client.delete_payload(self.server_name, keys=keys, points=[point_id], wait=True)

    def _engine_overwrite_payload(self, point_id: str, payload: dict[str, Any]) -> None:
        with _server_errors(self.url):
            self.client.overwrite_payload(self.server_name, payload=payload, points=[point_id], wait=True)

    def _engine_update_vector(self, point_id: str, name: str, vector: list[float]) -> None:
        from qdrant_client.http import models as qm

        with _server_errors(self.url):
            self.client.update_vectors(
                self.server_name, points=[qm.PointVectors(id=point_id, vector={name: vector})], wait=True
            )

    def _engine_delete(self, point_ids: list[str]) -> None:
        from qdrant_client.http import models as qm

        with _server_errors(self.url):
            self.client.delete(self.server_name, points_selector=qm.PointIdsList(points=list(point_ids)), wait=True)

    def _engine_retrieve(self, point_ids: list[str], with_vector: Fields) -> list[StoredPoint]:
        with _server_errors(self.url):
            records = self.client.retrieve(
                self.server_name, ids=list(point_ids), with_payload=True, with_vectors=fields(with_vector)
            )
        # The server answers in any order; Edge in the order asked.
        rank = {str(pid): i for i, pid in enumerate(point_ids)}
        return [_point(r) for r in sorted(records, key=lambda r: rank.get(str(r.id), len(rank)))]

    def _engine_query(self, search: Search) -> list[StoredPoint]:
        from qdrant_client.http import models as qm

        query, using, prefetch = to_query(search.query)
        with _server_errors(self.url):
            response = self.client.query_points(
                self.server_name,
                query=query,
                using=using,
                prefetch=prefetch,
                query_filter=to_filter(search.filter),
                search_params=qm.SearchParams(exact=True) if search.exact else None,
                limit=search.limit,
                with_payload=fields(search.with_payload),
                with_vectors=fields(search.with_vector),
            )
        return [_point(p) for p in response.points]

    def _engine_scroll(self, scroll: Scroll) -> tuple[list[StoredPoint], Any]:
        with _server_errors(self.url):
            records, next_offset = self.client.scroll(
                self.server_name,
                scroll_filter=to_filter(scroll.filter),
                limit=scroll.limit,
                offset=scroll.offset,
                with_payload=fields(scroll.with_payload),
                with_vectors=fields(scroll.with_vector),
                order_by=_order_by(scroll.order),
            )
        return [_point(r) for r in records], next_offset

    def count(self, flt: Filter | None = None) -> int:
        """Exact number of points (matching ``flt``)."""
        with _server_errors(self.url):
            return int(self.client.count(self.server_name, count_filter=to_filter(flt), exact=True).count)

    def unindexed_count(self) -> int:
        """Points whose vectors the server has not indexed yet (it indexes in the background)."""
        with _server_errors(self.url):
            info = self.client.get_collection(self.server_name)
        indexed = int(info.indexed_vectors_count or 0) // max(1, self.vector_count)
        return max(0, int(info.points_count or 0) - indexed)

    def optimize(self) -> None:
        """Nothing to do: the server's optimizer builds indexes in the background, by its own thresholds."""

    def close(self) -> None:
        """Nothing to flush: the server persists every acknowledged write."""


@dataclass
class ServerStore:
    """An identity's collections on a Qdrant server: the interface the services use from IdentityStore."""

    identity: str
    url: str
    prefix: str
    model_id: str
    dim: int
    client: QdrantClient
    adopt_recorded_model: bool = False
    _collections: dict[str, ServerCollection] = field(default_factory=dict)
    _guard: threading.Lock = field(default_factory=threading.Lock)

    @property
    def path(self) -> str:
        """Where the store lives, for logs and ``inspect`` (the server collections' name pattern)."""
        return f"{self.url.rstrip('/')}/collections/{self.prefix}{SEPARATOR}{self.identity}{SEPARATOR}*"

    def _meta(self) -> dict[str, Any]:
        return {
            META_KEY: {
                "model_id": self.model_id,
                "dim": self.dim,
                "schema": SCHEMA_VERSION,
                "identity": self.identity,
                "created_at": iso(utc_now()),
            }
        }

    def open(self) -> None:
        """Check the model of every collection this identity already has on the server."""
        own = f"{self.prefix}{SEPARATOR}{self.identity}{SEPARATOR}"
        with _server_errors(self.url):
            names = [c.name for c in self.client.get_collections().collections if c.name.startswith(own)]
            for name in names:
                # Identities may contain '__': only a collection name (the last part) never does.
                if SEPARATOR not in name[len(own) :]:
                    self._check_model(name, self.client.get_collection(name).config.metadata)

    def _check_model(self, server_name: str, metadata: dict[str, Any] | None) -> None:
        record = (metadata or {}).get(META_KEY)
        if not isinstance(record, dict) or "model_id" not in record:
            raise ConfigError(
                f"the server collection {server_name!r} at {self.url} was not created by agent-memory (it has "
                "no model record); choose another storage.collection_prefix"
            )
        if self.adopt_recorded_model:
            self.model_id, self.dim = str(record["model_id"]), int(record.get("dim", -1))
            return
        if record.get("model_id") != self.model_id or int(record.get("dim", -1)) != self.dim:
            raise ModelMismatchError(
                f"the server collection {server_name!r} of identity {self.identity!r} at {self.url} was written "
                f"with embedding model {record.get('model_id')!r} (dim {record.get('dim')}), but this session uses "
                f"{self.model_id!r} (dim {self.dim}). Configure the store's model again, or reindex: "
                f"`agent-memory export --identity {self.identity} > memories.jsonl`, delete the collections "
                f"{self.prefix}{SEPARATOR}{self.identity}{SEPARATOR}* on the server, then "
                "`agent-memory import memories.jsonl` with the new model"
            )

    def collection(self, spec: CollectionSpec) -> ServerCollection:
        """The collection, created (with its vectors, indexes and model record) on first use."""
        with self._guard:
            coll = self._collections.get(spec.name)
            if coll is None:
                server_name = collection_name(self.prefix, self.identity, spec.name)
                with _server_errors(self.url):
                    self._ensure(server_name, spec)
                coll = ServerCollection(spec.name, server_name, self.client, self.url, len(spec.vectors))
                self._collections[spec.name] = coll
            return coll

    def _ensure(self, server_name: str, spec: CollectionSpec) -> None:
        from qdrant_client.http import models as qm

        if not self.client.collection_exists(server_name):
            vectors = {name: qm.VectorParams(size=self.dim, distance=qm.Distance.COSINE) for name in spec.vectors}
            try:
                self.client.create_collection(server_name, vectors_config=vectors, metadata=self._meta())
                logger.info("server collection created", extra={"collection": server_name, "identity": self.identity})
            except Exception:
                # Another process may have created it meanwhile; anything else is a real failure.
                if not self.client.collection_exists(server_name):
                    raise
        info = self.client.get_collection(server_name)
        self._check_model(server_name, info.config.metadata)
        existing = set(info.payload_schema or {})
        for index in spec.indexes:
            if index.field not in existing:
                # Idempotent on the server: a process that lost a creation race may repeat it.
                self.client.create_payload_index(
                    server_name, index.field, field_schema=_index_schema(self.client, index), wait=True
                )

    def disk_bytes(self) -> int:
        """Unknown on a server (its storage is not ours to measure): 0."""
        return 0

    def close(self) -> None:
        """Forget the collections; the client is released by :func:`release_server_store`."""
        with self._guard:
            self._collections.clear()


# The server stores' clients, one per server (url, API key, timeout), shared by its stores.
_CLIENTS = Registry()


def _close_client(client: QdrantClient) -> None:
    try:
        client.close()
    except Exception:
        logger.exception("closing the Qdrant client failed")


def acquire_server_store(
    config: StorageConfig, identity: str, model_id: str, dim: int, *, adopt_recorded_model: bool = False
) -> ServerStore:
    """The process's shared store of ``identity`` on the server of ``config`` (one client per server).

    ``adopt_recorded_model``: open it whatever model wrote it (for export, which embeds nothing).
    """
    if config.url is None:
        raise ConfigError("invalid tool-agent-memory config: field 'storage.url' is required when backend is 'server'")
    url = config.url
    identity = validate_identity(identity)
    client_key = (url, config.api_key, config.timeout_s)

    def open_store() -> ServerStore:
        client = _CLIENTS.acquire(client_key, lambda: client_factory(config), _close_client)
        store = ServerStore(identity, url, config.collection_prefix, model_id, dim, client, adopt_recorded_model)
        try:
            store.open()
        except BaseException:
            _CLIENTS.release(client)
            raise
        return store

    def close_store(store: ServerStore) -> None:
        store.close()
        _CLIENTS.release(store.client)

    def reuse(store: ServerStore) -> None:
        if not adopt_recorded_model and (store.model_id != model_id or store.dim != dim):
            raise open_with_other_model(identity, store.model_id, store.dim, model_id, dim)

    return STORES.acquire(("server", url, config.collection_prefix, identity), open_store, close_store, reuse)


def release_server_store(store: ServerStore) -> None:
    """Drop one reference; the last one forgets the store, and the last store of a server closes its client."""
    STORES.release(store)


def open_server_store_count() -> int:
    """How many server stores this process has open (for tests and ``inspect``)."""
    return STORES.count("server")


def delete_server_store(config: StorageConfig, identity: str) -> list[str]:
    """Delete every collection of ``identity`` on the server of ``config``, for good; their names.

    Refused while this process has the identity's store open; other processes sharing the server are
    not seen from here (their next request recreates empty collections).
    """
    if config.url is None:
        raise ConfigError("invalid tool-agent-memory config: field 'storage.url' is required when backend is 'server'")
    url = config.url
    identity = validate_identity(identity)
    if STORES.is_open(("server", url, config.collection_prefix, identity)):
        raise StoreInUseError(f"the store of identity {identity!r} on {url} is open in this process")
    client = _CLIENTS.acquire((url, config.api_key, config.timeout_s), lambda: client_factory(config), _close_client)
    own = f"{config.collection_prefix}{SEPARATOR}{identity}{SEPARATOR}"
    try:
        with _server_errors(url):
            names = [c.name for c in client.get_collections().collections if c.name.startswith(own)]
            # Identities may contain '__': only a collection name (the last part) never does.
            names = [name for name in names if SEPARATOR not in name[len(own) :]]
            for name in names:
                client.delete_collection(name)
    finally:
        _CLIENTS.release(client)
    logger.info("server store deleted", extra={"identity": identity, "collections": len(names)})
    return sorted(names)
