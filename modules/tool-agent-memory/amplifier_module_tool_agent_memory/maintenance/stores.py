"""What the maintenance jobs share: their refusal, their progress meter, and reaching an embedded store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..store.edge import IdentityStore


class MaintenanceError(InvalidInput):
    """A maintenance job refused before changing anything (no store, another backend, a leftover of a past run)."""

    # The kind the CLI answered these refusals with when it held the jobs itself.
    kind = "cli_error"


class Meter(Protocol):
    """Where a long job reports its progress (the CLI draws it on standard error)."""

    total: int | None

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""

    def finish(self) -> None:
        """The job is over."""


class NoMeter:
    """A meter that shows nothing (library callers, ``--json``)."""

    total: int | None = None

    def advance(self, n: int = 1) -> None:
        """Nothing to show."""

    def finish(self) -> None:
        """Nothing to show."""


def embedded_store_path(config: MemoryConfig, identity: str, on_server: str) -> Path:
    """The folder of the identity's embedded store; ``on_server`` is the refusal when the backend is a server."""
    from ..store.edge import STORE_META

    if config.storage.backend != "edge":
        raise MaintenanceError(on_server)
    root = config.resolved_root()
    path = root / identity
    if not (path / STORE_META).is_file():
        raise MaintenanceError(f"there is no memory store of identity {identity} under {root}")
    return path


@contextmanager
def recorded_store(root: Path, identity: str) -> Iterator[IdentityStore]:
    """The identity's embedded store opened with whatever model wrote it (nothing is embedded), then released."""
    from ..store.edge import acquire_store, release_store

    store = acquire_store(root, identity, "", 0, adopt_recorded_model=True)
    try:
        yield store
    finally:
        release_store(store)
