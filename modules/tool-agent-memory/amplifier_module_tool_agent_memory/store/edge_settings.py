"""Shard settings of the embedded store: how a collection's spec becomes a Qdrant Edge shard config.

Applied when a shard is created (an existing shard keeps the settings it was created with):
named dense vectors with their storage tiers and quantization, HNSW, payload index schemas,
and the vacuum setting that makes a forgotten payload's freed pages rewritten promptly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .contract import CollectionSpec, IndexSpec, MemoryTier

if TYPE_CHECKING:
    import qdrant_edge

# Any deleted point makes its segment due for a vacuum (Qdrant's default waits for 20%).
VACUUM_DELETED_SHARE = 1e-9

# Search pool threads per shard by default. Edge's own default is one per CPU it sees (8 on a 2-core
# container), and a query holds the GIL while it waits on the pool: every Python thread of the process
# stands still for it. At 10k memories (one segment) one thread cost the least: recall's first request's
# CPU 19.3 / 24.6 ms p50 / p95 with 1, 22.3 / 29.1 with 2, 26.8 / 33.0 with Edge's 8 (<= 15-word prompts,
# benchmarks/recall.py --vs-search-threads 1,2,0, one run, load ~25), results identical.
SEARCH_THREADS = 1


def tier(memory: MemoryTier | None) -> qdrant_edge.Memory | None:
    """Qdrant Edge's storage tier of a layout tier (``None``: Qdrant's default)."""
    import qdrant_edge as qe

    if memory is None:
        return None
    return {"pinned": qe.Memory.Pinned, "cached": qe.Memory.Cached, "cold": qe.Memory.Cold}[memory]


def index_schema(spec: IndexSpec, memory: MemoryTier | None = None) -> Any:
    """The Edge payload index params of one index (text: stemmed English BM25)."""
    import qdrant_edge as qe

    where = tier(memory)
    if spec.kind == "text":
        return qe.TextIndexParams(
            tokenizer=qe.TokenizerType.Word,
            lowercase=True,
            stopwords=qe.Language.English,
            stemmer=qe.SnowballParams(qe.SnowballLanguage.English),
            scoring=True,
            memory=where,
            enable_hnsw=spec.hnsw,
        )
    params: dict[str, Any] = {
        "keyword": qe.KeywordIndexParams,
        "datetime": qe.DatetimeIndexParams,
        "float": qe.FloatIndexParams,
        "integer": qe.IntegerIndexParams,
        "bool": qe.BoolIndexParams,
    }
    return params[spec.kind](memory=where, enable_hnsw=spec.hnsw)


def create_index_operation(spec: CollectionSpec, index: IndexSpec) -> Any:
    """The Edge update that creates one payload index of a collection (with its layout's tier)."""
    import qdrant_edge as qe

    return qe.UpdateOperation.create_field_index(index.field, index_schema(index, spec.layout.payload_indexes))


def segment_kb(points: int | None, vectors: int, dim: int) -> int | None:
    """Qdrant's ``max_segment_size`` (KB of float vectors in one segment) of ``points`` points, or None."""
    if points is None:
        return None
    return points * vectors * dim * 4 // 1024


def edge_config(spec: CollectionSpec, dim: int, threads: int | None = None) -> qdrant_edge.EdgeConfig:
    """The config a new shard of this collection is created with."""
    import qdrant_edge as qe

    layout = spec.layout
    quantization: qdrant_edge.ScalarQuantizationConfig | qdrant_edge.TurboQuantQuantizationConfig | None = None
    if layout.quantization == "int8":
        quantization = qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8, quantile=0.99, memory=tier(layout.quantized)
        )
    elif layout.quantization is not None:
        bits = {"turbo4": qe.TurboQuantBitSize.Bits4, "turbo2": qe.TurboQuantBitSize.Bits2}[layout.quantization]
        quantization = qe.TurboQuantQuantizationConfig(bits=bits, memory=tier(layout.quantized))
    hnsw = None
    if layout.hnsw is not None:
        hnsw = qe.HnswIndexConfig(
            m=layout.hnsw_m,
            ef_construct=layout.hnsw_ef_construct,
            full_scan_threshold=10_000,  # KB, Qdrant's default
            max_indexing_threads=layout.indexing_threads,
            payload_m=layout.payload_m,
            memory=tier(layout.hnsw),
        )
    vectors = {
        name: qe.EdgeVectorParams(
            size=dim,
            distance=qe.Distance.Cosine,
            memory=tier(layout.vectors),
            quantization_config=quantization,
            hnsw_config=hnsw,
        )
        for name in spec.vectors
    }
    # Edge's vacuum rewrites a segment without its deleted points as soon as it holds one (see
    # EdgeCollection.purge_engine): a forgotten payload's freed pages keep its text until then.
    optimizers = qe.EdgeOptimizersConfig(
        deleted_threshold=VACUUM_DELETED_SHARE,
        vacuum_min_vector_number=1,
        max_segment_size=segment_kb(layout.segment_points, len(spec.vectors), dim),
    )
    # No Edge WAL: the journal is the log (and keeps no copy of a forgotten point's text).
    return qe.EdgeConfig(
        vectors=vectors,
        payload_memory=tier(layout.payload),
        wal_enabled=False,
        optimizers=optimizers,
        max_search_threads=threads,
    )


def search_threads(setting: int | None) -> int | None:
    """The search pool size a shard is opened with: ``setting``, else :data:`SEARCH_THREADS`; ``0`` (``None``
    returned): Qdrant Edge's own (one per CPU it sees)."""
    if setting is None:
        return SEARCH_THREADS
    return setting or None


def apply_search_threads(path: Path, threads: int | None) -> None:
    """Record ``threads`` as the shard's search pool size in its persisted config, before it loads.

    Edge's ``load`` takes the pool size from the persisted config unless handed a whole config (whose
    vectors it checks against the shard's and writes back), and a size once persisted sticks: so the
    size is written on every open, and an existing store picks up the current setting.
    """
    config = path / "edge_config.json"
    settings = json.loads(config.read_bytes())
    if settings.get("max_search_threads") == threads:
        return
    if threads is None:
        settings.pop("max_search_threads", None)
    else:
        settings["max_search_threads"] = threads
    scratch = config.with_name(config.name + ".new")
    scratch.write_text(json.dumps(settings))
    os.replace(scratch, config)


def vacuums(path: Path) -> bool:
    """Whether the shard was created with the vacuum setting (older shards get it from ``agent-memory repair``)."""
    try:
        optimizers = json.loads((path / "edge_config.json").read_text()).get("optimizers") or {}
        threshold = optimizers.get("deleted_threshold")
    except (OSError, ValueError, AttributeError):
        return False
    return isinstance(threshold, int | float) and threshold <= VACUUM_DELETED_SHARE
