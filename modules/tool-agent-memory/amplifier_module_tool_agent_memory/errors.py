"""Exceptions with messages written for the agent (and the person) that reads them.

Every error a tool can answer with is one of these; the tool adapters turn them into
``ToolResult(success=False, error={"message": ..., "type": ...})``.
"""

from __future__ import annotations


class AgentMemoryError(Exception):
    """Base class of the module's errors; ``str(err)`` is the user-facing message."""

    kind = "error"


class InvalidInput(AgentMemoryError):
    """A tool input broke a rule; the message names the field and the rule."""

    kind = "invalid_input"


class ConfigError(AgentMemoryError):
    """The module config is invalid."""

    kind = "config_error"


class IdentityError(AgentMemoryError):
    """The agent identity is missing (when required) or malformed."""

    kind = "identity_error"


class StoreInUseError(AgentMemoryError):
    """Another process holds this identity's embedded store."""

    kind = "store_in_use"


class ModelMismatchError(AgentMemoryError):
    """The store was written with another embedding model."""

    kind = "model_mismatch"


class NotFound(AgentMemoryError):
    """An id that does not exist (or belongs to another identity)."""

    kind = "not_found"


class EmbeddingError(AgentMemoryError):
    """The embedding provider failed (missing model file, server down, ...)."""

    kind = "embedding_error"


class StorageFullError(AgentMemoryError):
    """The store's filesystem has less free space than a write safely needs; reads keep working."""

    kind = "storage_full"


class ReadOnlyStoreError(AgentMemoryError):
    """The store is on read-only media (or opened read-only): reads and export work, writes do not."""

    kind = "read_only"


class StoreDamagedError(AgentMemoryError):
    """A store file failed a check (size, header, checksum); the message names it and the repair command."""

    kind = "store_damaged"
