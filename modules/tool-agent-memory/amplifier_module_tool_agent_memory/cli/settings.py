"""What a command runs with: the identity (``--identity``), the config (``--config``, ``--root``), the runtime.

Every command that opens a store takes these the same way, the MCP server included.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import MemoryConfig, parse_config
from ..identity import DEFAULT_IDENTITY, IDENTITY_ENV, ResolvedIdentity, validate_identity
from .config_file import load_config_file

if TYPE_CHECKING:
    from ..runtime import AgentMemory


def resolve_cli_identity(flag: str | None) -> ResolvedIdentity:
    """``--identity``, else ``$AMPLIFIER_AGENT_IDENTITY``, else ``default``; validated."""
    if flag is not None:
        return ResolvedIdentity(validate_identity(flag), "flag")
    env = os.environ.get(IDENTITY_ENV)
    if env:
        return ResolvedIdentity(validate_identity(env), "env")
    return ResolvedIdentity(DEFAULT_IDENTITY, "default")


def read_store_meta(store_path: Path) -> dict[str, Any] | None:
    """The store's store.json, or None when it is missing or unreadable."""
    from ..store.edge import STORE_META

    try:
        meta = json.loads((store_path / STORE_META).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _embeddings_from_meta(meta: dict[str, Any]) -> dict[str, Any] | None:
    """The embedding config a store was written with, when its model id says enough to rebuild it."""
    model_id = str(meta.get("model_id", ""))
    provider, _, name = model_id.partition(":")
    if provider == "local":
        return {"provider": "local"}
    if provider == "fastembed" and name:
        return {"provider": "fastembed", "model": name}
    if provider == "openai" and name:
        return {"provider": "openai", "model": name, "dimensions": int(meta.get("dim", 0)) or None}
    return None


def build_config(args: argparse.Namespace, identity: str) -> MemoryConfig:
    """The module config the CLI runs with: ``--config`` file, then ``--root``.

    Without ``--config`` the embedding model is the one the identity's store was written
    with (from its ``store.json``), so the CLI works on any existing store out of the box.
    """
    raw: dict[str, Any] = load_config_file(args.config) if getattr(args, "config", None) is not None else {}
    if getattr(args, "root", None) is not None:
        raw["storage_root"] = args.root  # --root '' is refused by the config, not taken for the default
    config = parse_config(raw)
    if "embeddings" not in raw:
        meta = read_store_meta(config.resolved_root() / identity)
        embeddings = _embeddings_from_meta(meta) if meta else None
        if embeddings is not None:
            config = parse_config({**raw, "embeddings": embeddings})
    return config


@contextmanager
def open_runtime(
    args: argparse.Namespace, *, adopt_recorded_model: bool = False, session_id: str = "cli"
) -> Iterator[AgentMemory]:
    """An :class:`AgentMemory` for the command's identity and root, closed on exit."""
    from ..runtime import AgentMemory

    identity = resolve_cli_identity(getattr(args, "identity", None))
    config = build_config(args, identity.name)
    runtime = AgentMemory(config, identity, session_id=session_id, adopt_recorded_model=adopt_recorded_model)
    try:
        yield runtime
    finally:
        runtime.close()
