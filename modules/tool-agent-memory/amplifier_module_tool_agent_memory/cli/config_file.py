"""Reading a ``--config`` file: the CLI and the demo take the same module config block."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import AgentMemoryError


class CliError(AgentMemoryError):
    """A CLI-level problem (unreadable file, bad JSON line); always a usage error."""

    kind = "cli_error"


def load_config_file(path: str) -> dict[str, Any]:
    """The module config block in a YAML/JSON file (a whole bundle tool entry is accepted too)."""
    import yaml

    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read --config {path}: {exc.strerror or exc}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CliError(f"--config {path} is not valid YAML/JSON: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"--config {path} must hold a mapping (the module's config block)")
    # Accept a whole bundle tool entry as well as its bare config block.
    inner = data.get("config") if set(data) <= {"module", "source", "config"} and "config" in data else data
    return dict(inner or {})
