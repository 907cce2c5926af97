"""The openai embedding provider, offline: the real ``openai`` client talks to a small local
server that speaks OpenAI's embeddings API and answers with the real local model."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import EmbeddingConfig
from amplifier_module_tool_agent_memory.embeddings.providers import LOCAL_MODEL_ID, CachedEmbedder, get_embedder
from amplifier_module_tool_agent_memory.runtime import AgentMemory

SERVED_MODEL = "all-MiniLM-L6-v2"
SHORTENABLE_MODEL = "text-embedding-3-small"  # served by the same local model, but accepts `dimensions`


class EmbeddingServer(ThreadingHTTPServer):
    """POST /v1/embeddings in OpenAI's JSON shape, computed by the real local model."""

    daemon_threads = True

    def __init__(self, embedder: CachedEmbedder) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.embedder = embedder
        self.requests: list[dict[str, Any]] = []
        self.truncate_to: int | None = None  # answer with shorter vectors than the model's

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: EmbeddingServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        """Quiet: the test output is not the place for access logs."""

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._reply(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        if self.path != "/v1/embeddings":
            self._error(404, f"no route {self.path}")
            return
        if self.headers.get("Authorization") != "Bearer test":
            self._error(401, "Incorrect API key provided")
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append(body)
        model = body.get("model")
        if model not in (SERVED_MODEL, SHORTENABLE_MODEL):
            self._error(404, f"The model {model!r} does not exist")
            return
        if "dimensions" in body and model != SHORTENABLE_MODEL:
            self._error(400, "This model does not support specifying dimensions.")
            return
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        vectors = self.server.embedder.embed_documents(texts)
        # Like OpenAI's text-embedding-3 models: `dimensions` keeps the leading components.
        cut = body.get("dimensions") or self.server.truncate_to
        if cut:
            vectors = [v[:cut] for v in vectors]
        data = [
            {"object": "embedding", "index": i, "embedding": _encode(vec, body.get("encoding_format", "float"))}
            for i, vec in enumerate(vectors)
        ]
        tokens = sum(len(t.split()) for t in texts)
        self._reply(
            200,
            {
                "object": "list",
                "data": data,
                "model": model,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


def _encode(vec: list[float], encoding_format: str) -> list[float] | str:
    """Floats, or (as the OpenAI client asks for by default) base64 of little-endian float32."""
    if encoding_format == "base64":
        import numpy as np

        return base64.b64encode(np.asarray(vec, dtype="<f4").tobytes()).decode()
    return vec


@pytest.fixture(scope="module")
def embedding_server(embedder: CachedEmbedder) -> Iterator[EmbeddingServer]:
    server = EmbeddingServer(embedder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def server(embedding_server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    embedding_server.requests.clear()
    embedding_server.truncate_to = None
    yield embedding_server
    embedding_server.truncate_to = None


def openai_config(server: EmbeddingServer, **overrides: Any) -> dict[str, Any]:
    return {
        "provider": "openai",
        "base_url": server.base_url,
        "api_key": "test",
        "model": SERVED_MODEL,
        "dimensions": 384,
        **overrides,
    }


async def test_store_and_search_round_trip_through_the_openai_provider(
    mount_tools: Callable[..., Any], server: EmbeddingServer, call: Any
) -> None:
    tools, _ = await mount_tools(embeddings=openai_config(server))
    invoices = "The billing service stores invoices in PostgreSQL"
    stored = await call(tools["memory_store"], {"content": invoices})
    await call(tools["memory_store"], {"content": "The office plants are watered on Mondays"})
    found = await call(tools["memory_search"], {"query": "which database holds the invoices?"})
    assert found["results"][0]["id"] == stored["id"]
    assert len(server.requests) >= 3
    assert {r["model"] for r in server.requests} == {SERVED_MODEL}


async def test_the_store_records_the_openai_model(
    mount_tools: Callable[..., Any], server: EmbeddingServer, root: Path, call: Any
) -> None:
    tools, _ = await mount_tools(embeddings=openai_config(server))
    await call(tools["memory_store"], {"content": "hello"})
    meta = json.loads((root / "alice" / "store.json").read_text())
    assert (meta["model_id"], meta["dim"]) == ("openai:all-MiniLM-L6-v2", 384)


def test_openai_vectors_equal_the_served_model_and_are_unit_length(
    server: EmbeddingServer, embedder: CachedEmbedder
) -> None:
    remote = get_embedder(EmbeddingConfig.model_validate(openai_config(server)))
    texts = ["first text", "a second, longer text about deploy freezes"]
    for got, want in zip(remote.embed_documents(texts), embedder.embed_documents(texts), strict=True):
        assert len(got) == 384
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) < 1e-5
        assert abs(sum(a * a for a in got) - 1.0) < 1e-5


def test_the_openai_provider_batches_requests(server: EmbeddingServer) -> None:
    remote = get_embedder(EmbeddingConfig.model_validate(openai_config(server, batch_size=2)))
    server.requests.clear()
    vectors = remote.embed_documents([f"text number {i}" for i in range(5)])
    assert len(vectors) == 5
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]


async def test_a_store_written_by_openai_refuses_the_local_model(
    mount_tools: Callable[..., Any],
    make_runtime: Callable[..., AgentMemory],
    server: EmbeddingServer,
    call: Any,
    runtime_tools: Any,
) -> None:
    remote = make_runtime(embeddings=openai_config(server))
    await call(runtime_tools(remote)["memory_store"], {"content": "hello from openai"})
    remote.close()

    local, _ = await mount_tools()
    error = await call.error(local["memory_search"], {"query": "hello"})
    assert error["type"] == "model_mismatch"
    assert "'openai:all-MiniLM-L6-v2' (dim 384)" in error["message"]
    assert f"'{LOCAL_MODEL_ID}' (dim 384)" in error["message"]
    assert "reindex" in error["message"]


async def test_a_store_written_locally_refuses_the_openai_provider(
    make_runtime: Callable[..., AgentMemory], server: EmbeddingServer, call: Any, runtime_tools: Any
) -> None:
    local = make_runtime()
    await call(runtime_tools(local)["memory_store"], {"content": "hello from local"})
    local.close()
    error = await call.error(runtime_tools(make_runtime(embeddings=openai_config(server)))["memory_list"], {})
    assert error["type"] == "model_mismatch"
    assert "openai:all-MiniLM-L6-v2" in error["message"] and LOCAL_MODEL_ID in error["message"]


async def test_a_wrong_configured_dimension_is_a_clear_embedding_error(
    make_runtime: Callable[..., AgentMemory], server: EmbeddingServer, call: Any, runtime_tools: Any
) -> None:
    tools = runtime_tools(make_runtime(embeddings=openai_config(server, dimensions=256)))
    error = await call.error(tools["memory_store"], {"content": "hello"})
    assert error["type"] == "embedding_error"
    assert "384-dimensional" in error["message"] and "256" in error["message"]
    assert "embeddings.dimensions" in error["message"]


async def test_a_server_answering_with_the_wrong_size_is_refused(
    make_runtime: Callable[..., AgentMemory], server: EmbeddingServer, call: Any, runtime_tools: Any
) -> None:
    tools = runtime_tools(make_runtime(embeddings=openai_config(server, query_cache_size=5)))
    await call(tools["memory_store"], {"content": "stored while the server was right"})
    server.truncate_to = 100
    error = await call.error(tools["memory_store"], {"content": "stored while the server is wrong"})
    assert error["type"] == "embedding_error"
    assert "100-dimensional" in error["message"]


async def test_the_dimension_is_probed_when_not_configured(
    make_runtime: Callable[..., AgentMemory], server: EmbeddingServer, root: Path, call: Any, runtime_tools: Any
) -> None:
    config = openai_config(server)
    del config["dimensions"]
    tools = runtime_tools(make_runtime(embeddings=config))
    await call(tools["memory_store"], {"content": "hello"})
    assert json.loads((root / "alice" / "store.json").read_text())["dim"] == 384


async def test_an_unreachable_server_is_an_embedding_error(
    mount_tools: Callable[..., Any], server: EmbeddingServer, call: Any
) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    config = openai_config(server, base_url=f"http://127.0.0.1:{closed_port}/v1", timeout_s=2)
    tools, _ = await mount_tools(embeddings=config)
    error = await call.error(tools["memory_store"], {"content": "hello"})
    assert error["type"] == "embedding_error"
    assert "embedding request to 'all-MiniLM-L6-v2' failed" in error["message"]


async def test_a_wrong_api_key_is_an_embedding_error(
    mount_tools: Callable[..., Any], server: EmbeddingServer, call: Any
) -> None:
    tools, _ = await mount_tools(embeddings=openai_config(server, api_key="wrong"))
    error = await call.error(tools["memory_store"], {"content": "hello"})
    assert error["type"] == "embedding_error"
    assert "Incorrect API key" in error["message"]


async def test_a_shortened_text_embedding_3_model_asks_the_server_for_that_size(
    make_runtime: Callable[..., AgentMemory], server: EmbeddingServer, root: Path, call: Any, runtime_tools: Any
) -> None:
    config = openai_config(server, model=SHORTENABLE_MODEL, dimensions=128)
    tools = runtime_tools(make_runtime(embeddings=config))
    stored = await call(tools["memory_store"], {"content": "The billing service stores invoices"})
    found = await call(tools["memory_search"], {"query": "where are invoices stored?"})
    assert found["results"][0]["id"] == stored["id"]
    assert {r.get("dimensions") for r in server.requests} == {128}
    meta = json.loads((root / "alice" / "store.json").read_text())
    assert (meta["model_id"], meta["dim"]) == ("openai:text-embedding-3-small", 128)


async def test_dimensions_are_not_sent_to_models_that_cannot_shorten(
    mount_tools: Callable[..., Any], server: EmbeddingServer, call: Any
) -> None:
    tools, _ = await mount_tools(embeddings=openai_config(server))
    await call(tools["memory_store"], {"content": "hello"})
    assert server.requests
    assert all("dimensions" not in r for r in server.requests)
