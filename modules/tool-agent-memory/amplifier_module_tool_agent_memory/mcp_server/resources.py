"""``memory://`` URIs of the server's own identity, each read through a tool of the table.

Reading a resource is the tool call it names, so it has the same validation, errors, redaction
and event as the tool: ``memory://<identity>/memories/<id>`` is ``memory_get``,
``memory://<identity>/memories`` (``?before=...&limit=...``) a page of ``memory_list``,
``memory://<identity>/plans`` (``?offset=...&limit=...``) ``plan_list`` and
``memory://<identity>/plans/<plan_id>`` ``plan_get``. A resource whose tool the table does not
have is not served. A URI naming another identity is refused: one server, one identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ..errors import InvalidInput, NotFound
from ..tools import TOOLS_BY_NAME

SCHEME = "memory"
MEMORY_TEMPLATE = SCHEME + "://{identity}/memories/{id}"
PLAN_TEMPLATE = SCHEME + "://{identity}/plans/{plan_id}"
# The query parameters a list resource takes (all strings on the wire; the tool's model converts them).
_LIST_QUERY = {"memory_list": ("before", "limit", "kind"), "plan_list": ("offset", "limit", "stale", "contains")}
_INTEGER_QUERY = {"limit", "offset"}


@dataclass(frozen=True)
class ResourceCall:
    """The tool call a resource URI stands for."""

    tool: str
    args: dict[str, Any]


def memory_uri(identity: str, memory_id: str) -> str:
    return f"{SCHEME}://{identity}/memories/{memory_id}"


def list_uri(identity: str, what: str) -> str:
    return f"{SCHEME}://{identity}/{what}"


def served(tool: str) -> bool:
    """Whether the table has the tool a resource reads through."""
    return tool in TOOLS_BY_NAME


def resolve(uri: str, identity: str) -> ResourceCall:
    """The tool call ``uri`` stands for; :class:`InvalidInput` / :class:`NotFound` saying why when none."""
    parts = urlsplit(uri)
    if parts.scheme != SCHEME or not parts.netloc:
        raise InvalidInput(f"field 'uri': not a {SCHEME}:// resource of this server (memory://{identity}/...)")
    if unquote(parts.netloc) != identity:
        # Whether the other identity exists is not said: this server holds one identity's store only.
        raise InvalidInput(
            f"field 'uri': this server serves identity '{identity}' only; another identity's resources are not "
            "readable here"
        )
    segments = [unquote(s) for s in parts.path.split("/") if s]
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    if segments == ["memories"]:
        call = ResourceCall("memory_list", _list_args("memory_list", query, uri))
    elif len(segments) == 2 and segments[0] == "memories":
        call = ResourceCall("memory_get", {"id": segments[1]})
    elif segments == ["plans"]:
        call = ResourceCall("plan_list", _list_args("plan_list", query, uri))
    elif len(segments) == 2 and segments[0] == "plans":
        call = ResourceCall("plan_get", {"plan_id": segments[1]})
    else:
        raise NotFound(
            f"no resource {uri}: this server has memory://{identity}/memories, memory://{identity}/memories/<id>, "
            f"memory://{identity}/plans and memory://{identity}/plans/<plan_id>"
        )
    if not served(call.tool):
        raise NotFound(f"no resource {uri}: this version has no {call.tool} tool")
    return call


def _list_args(tool: str, query: dict[str, str], uri: str) -> dict[str, Any]:
    allowed = _LIST_QUERY[tool]
    unknown = sorted(set(query) - set(allowed))
    if unknown:
        takes = ", ".join(allowed)
        raise InvalidInput(f"field 'uri': unknown query parameter {unknown[0]!r} (this list takes {takes})")
    args: dict[str, Any] = {}
    for key, value in query.items():
        if key in _INTEGER_QUERY:
            try:
                args[key] = int(value)
            except ValueError:
                raise InvalidInput(f"field 'uri': query parameter {key!r} must be an integer") from None
        elif key == "stale":
            if value not in ("true", "false"):
                raise InvalidInput("field 'uri': query parameter 'stale' must be true or false")
            args[key] = value == "true"
        else:
            args[key] = value
    return args
