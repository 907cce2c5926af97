"""A real viewer on a real runtime (Qdrant Edge, the local model), and a plain HTTP client for it."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.runtime import AgentMemory
from amplifier_module_tool_agent_memory.viewer.server import Viewer


@dataclass
class Answer:
    """An HTTP answer: status, headers and the JSON body (None when it is not JSON)."""

    status: int
    headers: dict[str, str]
    body: Any
    text: str


@dataclass
class Served:
    """A started viewer, its runtime and the runtime's tools (to put things in the store)."""

    viewer: Viewer
    runtime: AgentMemory
    tools: dict[str, Any]

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = "valid",
        host: str | None = None,
        headers: dict[str, str] | None = None,
        in_query: bool = False,
    ) -> Answer:
        """One request to the viewer; ``token='valid'`` sends its own token (as a header, or in the query)."""
        sent = dict(headers or {})
        sent["Host"] = host if host is not None else f"127.0.0.1:{self.viewer.port}"
        value = self.viewer.token if token == "valid" else token
        if value is not None:
            if in_query:
                path += ("&" if "?" in path else "?") + f"token={value}"
            else:
                sent["X-Agent-Memory-Token"] = value
        conn = http.client.HTTPConnection("127.0.0.1", self.viewer.port, timeout=60)
        try:
            conn.putrequest(method, path, skip_host=True)
            for name, v in sent.items():
                conn.putheader(name, v)
            conn.endheaders()
            response = conn.getresponse()
            text = response.read().decode("utf-8")
            headers_out = {k.lower(): v for k, v in response.getheaders()}
        finally:
            conn.close()
        try:
            body = json.loads(text)
        except ValueError:
            body = None
        return Answer(response.status, headers_out, body, text)

    def get(self, path: str, **kwargs: Any) -> Answer:
        """GET ``path`` with the token."""
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Answer:
        """POST ``path`` with the token in a header and the viewer's own Origin."""
        headers = {"Origin": f"http://127.0.0.1:{self.viewer.port}", **kwargs.pop("headers", {})}
        return self.request("POST", path, headers=headers, **kwargs)


@pytest.fixture
def served(
    make_runtime: Callable[..., AgentMemory], runtime_tools: Callable[[AgentMemory], dict[str, Any]]
) -> Iterator[Served]:
    """A viewer of identity 'alice' on a fresh root, serving on a free port; ``served.get(path)`` asks it."""
    runtime = make_runtime(session_id="viewer-test")
    viewer = Viewer(runtime)
    viewer.start(0)
    try:
        yield Served(viewer, runtime, runtime_tools(runtime))
    finally:
        viewer.stop()
