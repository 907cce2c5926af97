"""Deleting a whole identity: every memory, plan and cache item it has, on either backend, after a confirmation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .stores import MaintenanceError

if TYPE_CHECKING:
    from ..config import MemoryConfig


def delete_identity(config: MemoryConfig, identity: str, confirmation: str | None) -> dict[str, Any]:
    """Delete the identity's whole store for good once ``confirmation`` repeats its name; what was deleted.

    Refused while a session (of this or, on the embedded store, any process) has the store open.
    """
    if confirmation != identity:
        raise MaintenanceError(
            f"deleting identity {identity!r} removes every memory, plan and cache item it has, for good; "
            f"confirm by giving its name: --confirm {identity}"
        )
    if config.storage.backend == "server":
        from ..store.server import delete_server_store

        names = delete_server_store(config.storage, identity)
        return {"identity": identity, "backend": "server", "deleted": bool(names), "collections": names}
    from ..store.edge import delete_store

    path = config.resolved_root() / identity
    if not path.exists():
        raise MaintenanceError(f"there is no memory store of identity {identity} under {config.resolved_root()}")
    size = delete_store(config.resolved_root(), identity)
    return {"identity": identity, "backend": "edge", "deleted": True, "path": str(path), "bytes": size}
