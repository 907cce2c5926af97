"""``agent-memory ui``: the local viewer of one identity (see :mod:`..viewer`).

The first line of standard output is the page's URL with its access token, so a script (or a
test) can read it and nothing else; the server runs until interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
import threading
import uuid
import webbrowser
from collections.abc import Callable

from .settings import build_config, resolve_cli_identity

logger = logging.getLogger(__name__)


def cmd_ui(args: argparse.Namespace) -> int:
    """Serve the viewer of ``--identity`` on 127.0.0.1 until interrupted (Ctrl-C)."""
    from ..runtime import AgentMemory
    from ..viewer.server import Viewer

    identity = resolve_cli_identity(args.identity)
    config = build_config(args, identity.name)
    runtime = AgentMemory(config, identity, session_id=f"viewer-{uuid.uuid4().hex[:12]}")
    viewer = Viewer(runtime)
    viewer.start(args.port)
    try:
        # Open the store and load the model before the URL is printed: the first page is then fast.
        runtime.memory()
        print(viewer.url, flush=True)
        print(f"agent-memory viewer of identity {identity.name}; Ctrl-C stops it", file=sys.stderr, flush=True)
        if not args.no_browser:
            webbrowser.open(viewer.url)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.stop()
        runtime.close()
    return 0


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, got {text}")
    return value


def register(add: Callable[[str, Callable[[argparse.Namespace], int], str], argparse.ArgumentParser]) -> None:
    """Add the ``ui`` command through the CLI's ``add(name, handler, help)``."""
    p = add("ui", cmd_ui, "browse this identity's memories, working memory, plans and activity in a local web page")
    p.add_argument("--port", type=_port, default=0, help="port on 127.0.0.1 (default: any free port)")
    p.add_argument("--no-browser", action="store_true", help="print the URL only; do not open a browser")
    p.epilog = "The first line printed is the URL with its access token; only requests with the token are answered."
