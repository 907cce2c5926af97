"""Store files open on a platform whose ``os`` lacks O_NOFOLLOW / O_DIRECTORY / O_BINARY (Windows).

Windows cannot be run here; what can be checked is that no store module reaches for those flags directly (an
AttributeError at the first open there) and that the fallback used without O_NOFOLLOW still refuses a link.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import amplifier_module_tool_agent_memory as package
from amplifier_module_tool_agent_memory.errors import ConfigError
from amplifier_module_tool_agent_memory.store import files

PACKAGE = Path(package.__file__).parent
POSIX_ONLY = re.compile(r"\bos\.O_(NOFOLLOW|DIRECTORY|BINARY)\b")


def test_no_module_names_a_flag_windows_lacks_except_through_files_py() -> None:
    offenders = [
        f"{path.relative_to(PACKAGE)}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "files.py" or path.parent.name != "store"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if POSIX_ONLY.search(line)
    ]
    assert offenders == []


def test_without_o_nofollow_a_link_is_still_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "NO_FOLLOW", 0)
    target = tmp_path / "real"
    target.write_bytes(b"x")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(ConfigError, match="symbolic link"):
        files.open_no_follow(link, os.O_RDONLY)
    fd = files.open_no_follow(target, os.O_RDONLY)
    try:
        assert os.read(fd, 1) == b"x"
    finally:
        os.close(fd)


def test_with_o_nofollow_a_link_is_refused_by_the_open_itself(tmp_path: Path) -> None:
    if not files.NO_FOLLOW:
        pytest.skip("this platform has no O_NOFOLLOW")
    (tmp_path / "real").write_bytes(b"x")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(ConfigError, match="symbolic link"):
        files.open_no_follow(tmp_path / "link", os.O_RDONLY)
