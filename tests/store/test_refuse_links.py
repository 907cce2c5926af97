"""refuse_links walks the whole store folder at every open: a link at any depth is refused, a tree without
one passes (store/files.py; the walk reads each entry's type from the directory listing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.errors import ConfigError
from amplifier_module_tool_agent_memory.store.files import refuse_links


def _tree(root: Path) -> Path:
    store = root / "alice" / "memories"
    for segment in ("a", "b"):
        folder = store / "segments" / segment / "payload_index" / "kind-map"
        folder.mkdir(parents=True)
        (folder / "data.bin").write_bytes(b"x")
    return store


def test_a_tree_without_links_passes(tmp_path: Path) -> None:
    store = _tree(tmp_path)
    refuse_links(store, tmp_path)


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_a_link_deep_inside_is_refused_wherever_it_is(tmp_path: Path, kind: str) -> None:
    store = _tree(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("another identity's")
    deep = store / "segments" / "b" / "payload_index" / "kind-map"
    if kind == "file":
        os.symlink(outside / "secret", deep / "linked.bin")
    else:
        os.symlink(outside, deep / "linked")
    with pytest.raises(ConfigError, match="symbolic link") as caught:
        refuse_links(store, tmp_path)
    assert "linked" in str(caught.value)


def test_a_store_outside_the_root_is_refused(tmp_path: Path) -> None:
    store = _tree(tmp_path / "one")
    with pytest.raises(ConfigError, match="outside the storage root"):
        refuse_links(store, tmp_path / "two")
