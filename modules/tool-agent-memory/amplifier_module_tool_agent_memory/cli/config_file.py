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
    except UnicodeDecodeError as exc:
        raise CliError(f"--config {path} is not UTF-8 text (byte {exc.start}): give a YAML or JSON file") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # Where and what, not the quoted snippet: the file may hold an API key.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "malformed"
        raise CliError(f"--config {path} is not valid YAML/JSON{where}: {problem}") from exc
    except RecursionError as exc:
        raise CliError(f"--config {path} nests too deeply to be a config") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"--config {path} must hold a mapping (the module's config block)")
    # Accept a whole bundle tool entry as well as its bare config block.
    inner = data.get("config") if set(data) <= {"module", "source", "config"} and "config" in data else data
    return dict(inner or {})
