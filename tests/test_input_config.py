"""The storage root in the config: empty, blank, NUL or a file is a config error naming the rule,
never the default in disguise nor a folder named with spaces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from amplifier_module_tool_agent_memory.config import ROOT_ENV, parse_config
from amplifier_module_tool_agent_memory.errors import ConfigError

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize("root", ["", "   ", "\t\n", "/tmp/a\x00b"])
def test_a_storage_root_that_names_no_folder_is_a_config_error(root: str) -> None:
    with pytest.raises(ConfigError, match="storage_root"):
        parse_config({"storage_root": root})


def test_a_storage_root_that_is_a_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(ConfigError, match="is not a folder"):
        parse_config({"storage_root": str(tmp_path / "afile")}).resolved_root()


def test_a_blank_root_variable_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, "   ")
    with pytest.raises(ConfigError, match=ROOT_ENV):
        parse_config({}).resolved_root()


def test_an_empty_root_variable_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ROOT_ENV, "")
    assert parse_config({}).resolved_root().name == "agent-memory"


async def test_the_tools_of_a_mount_with_an_empty_root_answer_config_error(
    mount_tools: Callable[..., Any], call: Any
) -> None:
    tools, _ = await mount_tools(storage_root="")
    error = await call.error(tools["memory_list"], {})
    assert error["type"] == "config_error" and "storage_root" in error["message"]
