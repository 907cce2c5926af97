"""``agent-memory mcp``: one identity's tools, resources and prompts as a stdio MCP server.

stdout carries only the protocol (file descriptor 1 points at stderr while it serves, so a stray
write cannot corrupt it); logs and events go to stderr. Each tool call's event is one JSON line there
(``{"event": "memory:stored", "identity": ..., "tool": ..., "latency_ms": ..., ...}``: the fields
Amplifier's hooks receive). The fast start (``mcp_server/fast_start.py``) answers ``initialize`` and
``tools/list`` while the SDK is imported; then the embedding model and the store open on a background
thread (``warm_up``) while the SDK's server starts, so the first call waits only for what is not ready yet.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from ..errors import AgentMemoryError
from ..mcp_server.fast_start import Front, Wire, initialize_result
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


def claim_stdio() -> tuple[BinaryIO, BinaryIO]:
    """The protocol's own copies of stdin and stdout; file descriptors 0 and 1 then point at the null device
    and at stderr, so a stray print (or a child process) can neither corrupt the protocol nor eat its input.
    Where descriptors cannot be moved, the streams themselves are used."""
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
        os.dup2(2, 1)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    except OSError:
        return sys.stdin.buffer, sys.stdout.buffer
    return os.fdopen(wire_in, "rb"), os.fdopen(wire_out, "wb")


def make_front(identity: str, out: BinaryIO) -> Front:
    """The fast start of ``identity``'s server (``mcp_server/fast_start.py``), writing the protocol to ``out``."""
    from ..mcp_server.about import instructions, tool_listing
    from ..tools import TOOLS

    version, text = _version(), instructions(identity)
    return Front(Wire(out), [tool_listing(spec) for spec in TOOLS],
                 lambda negotiated: initialize_result(negotiated, version, text))


def start_front(identity: str, source: BinaryIO, out: BinaryIO) -> tuple[Front, threading.Thread]:
    """The fast start, answering from now on (its own thread reads ``source``) while the SDK is imported."""
    front = make_front(identity, out)
    reader = threading.Thread(target=front.pump, args=(source,), name="mcp-stdin", daemon=True)
    reader.start()
    return front, reader


async def serve(runtime: AgentMemory, front: Front) -> None:
    """Serve ``runtime`` with the SDK's server, which takes over from the fast start's queue."""
    import anyio
    from mcp.server.stdio import stdio_server

    from ..mcp_server.server import build_server

    server = build_server(runtime, version=_version())
    # The SDK's own stdio transport (its parsing and its framing), over the front's queue and wire.
    stdin, stdout = cast("IO[str]", front.sdk_input), cast("IO[str]", front.sdk_output)
    async with stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout)) as (read_stream, write_stream):
        front.hand_over()
        await server.run(read_stream, write_stream, server.create_initialization_options())


def cmd_mcp(args: argparse.Namespace) -> int:
    """Run the stdio MCP server of ``--identity`` until the client disconnects."""
    import asyncio

    if importlib.util.find_spec("mcp") is None:
        raise McpUnavailable(INSTALL_HINT)
    configure_logging(bool(args.verbose))
    identity = resolve_cli_identity(args.identity)
    config = build_config(args, identity.name)
    front, reader = start_front(identity.name, *claim_stdio())
    from ..runtime import AgentMemory

    # One server per client session: its own session id keeps the working cache's per-session state apart.
    runtime = AgentMemory(config, identity, session_id=f"mcp-{uuid.uuid4().hex[:12]}")
    logging.getLogger(EVENT_LOGGER).info(
        "agent-memory MCP server for identity %s (root %s)", identity.name, config.resolved_root()
    )
    try:
        try:  # the SDK's server, imported here (while the front answers) so a broken install is reported
            import mcp.server.stdio  # noqa: F401

            from ..mcp_server import server  # noqa: F401
        except ImportError as exc:
            front.fail(f"the MCP SDK could not be imported ({exc}); {INSTALL_HINT}")
            logging.getLogger(EVENT_LOGGER).error("the MCP SDK could not be imported: %s", exc)
            reader.join()
            return 1
        # The model and the store open in the background from here, not beside the SDK's import: on 2 loaded cores
        # that import and the warm-up side by side delayed the SDK's first answer from 6.2 to 9.2 s.
        runtime.warm_up()
        asyncio.run(serve(runtime, front))
    finally:
        # However the server ended, no thread of the SDK's transport may stay blocked waiting for a line.
        front.sdk_input.end()
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
