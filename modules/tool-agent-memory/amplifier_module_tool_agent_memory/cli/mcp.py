"""``agent-memory mcp``: one identity's tools, resources and prompts as a stdio MCP server.

stdout carries only the protocol (the SDK's stdio transport even points file descriptor 1 at
stderr while it serves, so a stray write cannot corrupt it); logs and events go to stderr. Each
tool call's event is one JSON line there (``{"event": "memory:stored", "identity": ..., "tool": ...,
"latency_ms": ..., ...}``: the fields Amplifier's hooks receive). Nothing heavy is imported before
the first ``tools/list`` is answered: the embedding model and the store open on the first call that
needs them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..errors import AgentMemoryError
from .settings import build_config, resolve_cli_identity

if TYPE_CHECKING:
    from ..runtime import AgentMemory

PACKAGE = "amplifier-module-tool-agent-memory"
INSTALL_HINT = (
    f"agent-memory mcp needs the MCP Python SDK, an optional extra of this package: pip install '{PACKAGE}[mcp]' "
    "(or add the SDK alone to the environment that runs agent-memory: pip install 'mcp>=2.3,<3'; "
    "uv tool install --with 'mcp>=2.3,<3' ...; see docs/mcp.md)"
)
# The logger runtime.emit writes every event to (cache side events are logged once more by their service's
# logger as they happen; the runtime's record is the one with the call's fields).
EVENT_LOGGER = "amplifier_module_tool_agent_memory"


class McpUnavailable(AgentMemoryError):
    """The MCP SDK (the ``mcp`` extra) is not installed."""

    kind = "missing_dependency"


class StderrLog(logging.Handler):
    """Events as JSON lines, other records (warnings; everything with ``--verbose``) as text, on stderr."""

    def __init__(self, verbose: bool) -> None:
        super().__init__(logging.DEBUG)
        self.verbose = verbose
        self.text = logging.Formatter("%(levelname)s %(name)s: %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            event = getattr(record, "event", None)
            if event is not None and record.name == EVENT_LOGGER:
                line = json.dumps(event_line(record), ensure_ascii=False, default=str)
            elif record.levelno >= logging.WARNING or self.verbose:
                line = self.text.format(record)
            else:
                return
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except Exception:
            self.handleError(record)


def event_line(record: logging.LogRecord) -> dict[str, Any]:
    """The event a log record carries: its name and the fields the hooks receive (``ev_*`` extras)."""
    fields = {key[3:]: value for key, value in vars(record).items() if key.startswith("ev_")}
    ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
    return {"ts": ts, "event": getattr(record, "event", None), **fields}


def configure_logging(verbose: bool) -> None:
    """Route the package's logs to stderr through :class:`StderrLog` (events always, the rest by level)."""
    log = logging.getLogger(EVENT_LOGGER)
    log.handlers[:] = [StderrLog(verbose)]
    log.setLevel(logging.DEBUG if verbose else logging.INFO)
    log.propagate = False
    logging.getLogger("mcp").setLevel(logging.INFO if verbose else logging.WARNING)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return ""


async def serve(runtime: AgentMemory) -> None:
    """Serve ``runtime`` over this process's stdin and stdout until the client closes them."""
    from mcp.server.stdio import stdio_server

    from ..mcp_server.server import build_server

    server = build_server(runtime, version=_version())
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def cmd_mcp(args: argparse.Namespace) -> int:
    """Run the stdio MCP server of ``--identity`` until the client disconnects."""
    import asyncio

    if importlib.util.find_spec("mcp") is None:
        raise McpUnavailable(INSTALL_HINT)
    from ..runtime import AgentMemory

    configure_logging(bool(args.verbose))
    identity = resolve_cli_identity(args.identity)
    config = build_config(args, identity.name)
    # One server per client session: its own session id keeps the working cache's per-session state apart.
    runtime = AgentMemory(config, identity, session_id=f"mcp-{uuid.uuid4().hex[:12]}")
    logging.getLogger(EVENT_LOGGER).info(
        "agent-memory MCP server for identity %s (root %s)", identity.name, config.resolved_root()
    )
    try:
        asyncio.run(serve(runtime))
    finally:
        runtime.close()
    return 0


def register(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    """Add the ``mcp`` command through the CLI's ``add(name, handler, help)``."""
    p = add(
        "mcp",
        cmd_mcp,
        "serve this identity's memory to an MCP client over stdio (Claude Code, Copilot CLI, Cursor, VS Code)",
    )
    p.epilog = (
        "stdout carries only the MCP protocol; logs and one JSON line per tool event go to stderr. "
        f"Needs the 'mcp' extra: pip install '{PACKAGE}[mcp]'."
    )
