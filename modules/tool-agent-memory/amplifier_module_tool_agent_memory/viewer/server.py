"""The viewer's HTTP server: the standard library's threading server on 127.0.0.1, one runtime.

Every request passes the checks of :mod:`.security` in this order: the Host header (else 403), then
the token (``X-Agent-Memory-Token`` header or ``token`` query parameter; else 403), then, for a POST,
the token in the header and the page's own origin (else 403). Static files (the page's script and
style, which hold no data) are the one thing served without the token. Every JSON answer is
redacted once more on its way out and is never cached; every page forbids scripts from anywhere
but itself (Content-Security-Policy), so text that looks like HTML stays text.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from ..errors import AgentMemoryError, InvalidInput, NotFound
from ..redaction import redact_json, redact_text
from . import security, views

if TYPE_CHECKING:
    from ..runtime import AgentMemory

logger = logging.getLogger(__name__)

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
_STATIC_NAME = re.compile(r"^/static/([a-z]+\.(?:js|css))$")
_ID = r"([A-Za-z0-9-]{1,64})"

# GET routes: a pattern of the path and what answers it (with the path's captured id, if any).
Read = Callable[["AgentMemory", dict[str, list[str]], tuple[str, ...]], dict[str, Any]]
GETS: tuple[tuple[re.Pattern[str], Read], ...] = (
    (re.compile(r"^/api/summary$"), lambda rt, q, ids: views.summary(rt)),
    (re.compile(r"^/api/memories$"), lambda rt, q, ids: views.memories(rt, q)),
    (re.compile(rf"^/api/memories/{_ID}$"), lambda rt, q, ids: views.memory(rt, ids[0])),
    (re.compile(r"^/api/working$"), lambda rt, q, ids: views.working_memory(rt, q)),
    (re.compile(r"^/api/plans$"), lambda rt, q, ids: views.plans(rt, q)),
    (re.compile(rf"^/api/plans/{_ID}$"), lambda rt, q, ids: views.plan(rt, ids[0])),
    (re.compile(r"^/api/activity$"), lambda rt, q, ids: views.activity_days(rt)),
)
POST = re.compile(rf"^/api/memories/{_ID}/(forget|unlink)$")


def _static(name: str) -> bytes:
    return (resources.files(__package__) / "static" / name).read_bytes()


class Viewer:
    """One identity's viewer: the runtime it reads, its token and the server once started."""

    def __init__(self, runtime: AgentMemory, token: str | None = None) -> None:
        self.runtime = runtime
        self.token = token or security.new_token()
        self.httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port the server listens on (0 before it starts)."""
        return int(self.httpd.server_address[1]) if self.httpd is not None else 0

    @property
    def url(self) -> str:
        """The page's address with its token: what the user opens."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def start(self, port: int = 0) -> None:
        """Listen on 127.0.0.1:``port`` (0: any free port) and serve from a background thread."""
        viewer = self

        class Handler(_Handler):
            owner = viewer

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="agent-memory-viewer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and wait for the server thread."""
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    owner: Viewer
    server_version = "agent-memory-viewer"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        # The request line carries the token in its query: logged without it, at debug level only.
        logger.debug("viewer: %s", redact_text(re.sub(r"token=[^&\s]*", "token=...", format % args)))

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        body = json.dumps(redact_json(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        self._send(status, body, "application/json; charset=utf-8")

    def _refuse(self, why: str) -> None:
        self._json(HTTPStatus.FORBIDDEN, {"error": {"message": why, "type": "forbidden"}})

    def _fail(self, exc: Exception) -> None:
        if isinstance(exc, InvalidInput):
            status, kind = HTTPStatus.BAD_REQUEST, "invalid_input"
        elif isinstance(exc, NotFound):
            status, kind = HTTPStatus.NOT_FOUND, "not_found"
        elif isinstance(exc, AgentMemoryError):
            status, kind = HTTPStatus.CONFLICT, exc.kind
        else:
            logger.exception("viewer request failed", extra={"path": urlsplit(self.path).path})
            status, kind = HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error"
        self._json(status, {"error": {"message": redact_text(str(exc))[:300], "type": kind}})

    def _admitted(self, query: dict[str, list[str]], header_only: bool = False) -> bool:
        """The Host and token checks; answers 403 itself when one fails."""
        if not security.host_allowed(self.headers.get("Host"), self.owner.port):
            self._refuse("this viewer answers only at 127.0.0.1 or localhost")
            return False
        given = self.headers.get(security.TOKEN_HEADER)
        if given is None and not header_only:
            tokens = query.get("token") or []
            given = tokens[-1] if tokens else None
        if not security.token_matches(given, self.owner.token):
            self._refuse("missing or wrong access token: open the URL agent-memory ui printed")
            return False
        return True

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        static = _STATIC_NAME.match(parts.path)
        if static is not None:
            if not security.host_allowed(self.headers.get("Host"), self.owner.port):
                self._refuse("this viewer answers only at 127.0.0.1 or localhost")
                return
            name = static.group(1)
            try:
                body = _static(name)
            except (FileNotFoundError, OSError):
                self._json(HTTPStatus.NOT_FOUND, {"error": {"message": "no such file", "type": "not_found"}})
                return
            self._send(HTTPStatus.OK, body, STATIC_TYPES[name[name.rindex(".") :]])
            return
        if not self._admitted(query):
            return
        if parts.path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, _static("index.html"), "text/html; charset=utf-8")
            return
        for pattern, read in GETS:
            match = pattern.match(parts.path)
            if match is not None:
                try:
                    self._json(HTTPStatus.OK, read(self.owner.runtime, query, match.groups()))
                except Exception as exc:
                    self._fail(exc)
                return
        self._json(HTTPStatus.NOT_FOUND, {"error": {"message": f"no page {parts.path}", "type": "not_found"}})

    do_HEAD = do_GET

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        if not self._admitted({}, header_only=True):
            return
        if not security.same_origin(self.headers.get("Origin"), self.headers.get("Referer"), self.owner.port):
            self._refuse("a change must come from the viewer's own page (Origin)")
            return
        match = POST.match(parts.path)
        if match is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": {"message": f"no action {parts.path}", "type": "not_found"}})
            return
        memory_id, action = match.groups()
        try:
            answer = asyncio.run(views.act(self.owner.runtime, action, memory_id))
        except Exception as exc:
            self._fail(exc)
            return
        if answer["ok"]:
            self._json(HTTPStatus.OK, answer["result"])
        else:
            kind = answer["error"].get("type")
            status = {"invalid_input": 400, "not_found": 404}.get(str(kind), 409)
            self._json(status, {"error": answer["error"]})

    def _not_allowed(self) -> None:
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": {"message": "GET and POST only", "type": "not_allowed"}})

    do_PUT = do_DELETE = do_PATCH = _not_allowed
