"""Resolve and validate the agent identity whose private store a session uses.

The identity is resolved once per mount, late: when every module of the session is mounted
(``on_session_ready``) or at the first tool call, whichever comes first, so that a capability
registered by a hook module (hooks are mounted after tools) is seen. First hit wins:

1. the capability ``agent_identity`` registered by another module;
2. module config ``agent_identity`` (the bundle's ``config:``, or the user's
   ``overrides.tool-agent-memory.config``);
3. deprecated: the mount plan's ``session.capabilities.agent_identity``. It is not a documented
   mount-plan key (foundation passes ``session:`` through, so it happens to arrive); it is still
   read for sessions that set it, with a warning;
4. the environment variable ``AMPLIFIER_AGENT_IDENTITY``;
5. ``default`` -- unless config ``require_identity`` is true, in which case every tool
   answers with an :class:`IdentityError` that explains how to set one.

An identity becomes a folder name, so it is validated, never normalised: anything that
does not match :data:`IDENTITY_PATTERN` (or contains ``..``) is refused. So is an empty
identity given by config, capability or mount plan; an empty environment variable counts as unset.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from typing import Any

from .errors import IdentityError

logger = logging.getLogger(__name__)

IDENTITY_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
IDENTITY_ENV = "AMPLIFIER_AGENT_IDENTITY"
CAPABILITY = "agent_identity"
DEFAULT_IDENTITY = "default"

HOW_TO_SET = (
    "set one with the module config `agent_identity: <name>` (in Amplifier settings: "
    "`overrides.tool-agent-memory.config.agent_identity`), the environment variable "
    f"{IDENTITY_ENV}, or an `{CAPABILITY}` capability registered by another module"
)


@dataclass(frozen=True)
class ResolvedIdentity:
    """The identity and where it came from (``capability``, ``config``, ``mount_plan`` (deprecated), ``env``,
    ``default``)."""

    name: str
    source: str

    @property
    def is_default(self) -> bool:
        return self.source == "default"


def validate_identity(name: object) -> str:
    """Return ``name`` if it is a valid identity, else raise :class:`IdentityError`."""
    if not isinstance(name, str):
        raise IdentityError(f"agent identity must be a string, got {type(name).__name__}")
    if ".." in name or not IDENTITY_PATTERN.fullmatch(name):
        raise IdentityError(
            f"agent identity {name[:80]!r} is invalid: it must match "
            f"{IDENTITY_PATTERN.pattern} (1-64 letters, digits, '_', '.', '-', starting "
            "with a letter or digit) and must not contain '..'"
        )
    return name


def _mount_plan_identity(coordinator: Any) -> object | None:
    plan = getattr(coordinator, "config", None)
    if not isinstance(plan, dict):
        return None
    session = plan.get("session")
    if not isinstance(session, dict):
        return None
    caps = session.get("capabilities")
    if not isinstance(caps, dict):
        return None
    return caps.get(CAPABILITY)


def _capability_identity(coordinator: Any) -> object | None:
    getter = getattr(coordinator, "get_capability", None)
    if getter is None:
        return None
    try:
        value: object | None = getter(CAPABILITY)
        return value
    except Exception:  # a coordinator without capabilities is not an error here
        return None


def resolve_identity(coordinator: Any, configured: str | None, require: bool) -> ResolvedIdentity:
    """Apply the resolution order; raise :class:`IdentityError` for an invalid or missing one."""
    candidates: list[tuple[str, object | None]] = [
        ("capability", _capability_identity(coordinator)),
        ("config", configured),
        ("mount_plan", _mount_plan_identity(coordinator)),
        ("env", os.environ.get(IDENTITY_ENV)),
    ]
    for source, value in candidates:
        # An empty environment variable means "unset"; an empty identity set explicitly (say, a
        # config template whose variable was empty) is refused rather than silently shared as "default".
        if value is None or (value == "" and source == "env"):
            continue
        if source == "mount_plan":
            logger.warning(
                "agent identity taken from the mount plan's session.capabilities.agent_identity, which is "
                "deprecated (not a documented mount-plan key): %s",
                HOW_TO_SET,
            )
        return ResolvedIdentity(validate_identity(value), source)
    if require:
        raise IdentityError(f"no agent identity is set and require_identity is true: {HOW_TO_SET}")
    return ResolvedIdentity(DEFAULT_IDENTITY, "default")
