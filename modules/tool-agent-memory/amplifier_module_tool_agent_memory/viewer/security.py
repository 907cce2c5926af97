"""Who may talk to the viewer: the three checks every request passes, as small pure functions.

- the token: the random secret printed with the URL (compared in constant time);
- the Host header: only the loopback names, so a page of another site whose name was re-pointed
  at 127.0.0.1 (DNS rebinding) is refused even though its requests reach the port;
- the origin of a state-changing request: a POST from a page of another origin is refused even
  when the browser would send it (the token is in a header, which another origin's page cannot set
  without a CORS preflight the viewer never grants; the origin check refuses it outright).
"""

from __future__ import annotations

import hmac
import secrets
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
TOKEN_HEADER = "X-Agent-Memory-Token"


def new_token() -> str:
    """A fresh access token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def token_matches(given: str | None, token: str) -> bool:
    """Whether ``given`` is the token (constant-time; a missing one never matches)."""
    return given is not None and hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def host_allowed(host: str | None, port: int) -> bool:
    """Whether a request's Host header names this server by a loopback name and its port."""
    if not host:
        return False
    return host.strip().lower() in {f"{name}:{port}" for name in LOOPBACK_NAMES}


def origins(port: int) -> frozenset[str]:
    """The origins the viewer's own page has."""
    return frozenset(f"http://{name}:{port}" for name in LOOPBACK_NAMES)


def same_origin(origin: str | None, referer: str | None, port: int) -> bool:
    """Whether a state-changing request comes from the viewer's own page: its ``Origin``, or failing
    that its ``Referer``, is one of :func:`origins`. Neither header: refused."""
    allowed = origins(port)
    if origin:
        return origin.rstrip("/").lower() in allowed
    if referer:
        parts = urlsplit(referer)
        return f"{parts.scheme}://{parts.netloc}".lower() in allowed
    return False
