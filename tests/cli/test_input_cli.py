"""Bad input to the ``agent-memory`` command line: clear usage or config errors (exit 2), or a named
file-system error (exit 1), never "this is a bug"; ``export --out`` writes only a regular file or a new path."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.cli.main import main

pytestmark = pytest.mark.reliability

Run = Callable[..., tuple[int, str, str]]
SECRET = "sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56"


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Run:
    """Run ``agent-memory`` in-process from ``tmp_path``; returns (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)

    def call(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return call


def assert_usage_error(result: tuple[int, str, str], *words: str) -> None:
    code, _, err = result
    assert code == 2, err
    assert "this is a bug" not in err
    for word in words:
        assert word in err


def test_root_that_is_a_file_is_a_config_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    assert_usage_error(run("list", "--root", str(tmp_path / "afile")), "is not a folder")


@pytest.mark.parametrize("root", ["", "   "])
def test_empty_or_blank_root_is_a_config_error_and_creates_nothing(run: Run, tmp_path: Path, root: str) -> None:
    before = set(tmp_path.iterdir())
    assert_usage_error(run("list", "--root", root), "storage_root", "not empty or blank")
    assert set(tmp_path.iterdir()) == before


def test_empty_storage_root_in_a_config_file_is_a_config_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text('storage_root: ""\n')
    assert_usage_error(run("list", "--config", str(tmp_path / "c.yaml")), "storage_root")


def test_root_below_a_file_is_a_named_file_system_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = run("list", "--root", str(tmp_path / "afile" / "sub"))
    assert code == 1
    assert "Not a directory" in err and "this is a bug" not in err


def test_binary_config_is_a_usage_error(run: Run, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_bytes(bytes(range(256)) * 4)
    assert_usage_error(run("list", "--config", str(tmp_path / "c.yaml")), "not UTF-8")


def test_malformed_config_names_the_place_without_quoting_the_file(run: Run, tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text(f"embeddings:\n  api_key: {SECRET}\n  model: [1, 2\n")
    result = run("list", "--config", str(tmp_path / "c.yaml"))
    assert_usage_error(result, "not valid YAML/JSON", "line")
    assert SECRET not in result[2]


def test_export_refuses_a_folder(run: Run, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    assert_usage_error(run("export", "--root", str(tmp_path / "r"), "--out", str(tmp_path / "out")), "is a folder")
    assert (tmp_path / "out").is_dir()


def test_export_refuses_a_fifo_and_leaves_it(run: Run, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert_usage_error(run("export", "--root", str(tmp_path / "r"), "--out", str(fifo)), "not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node needs root")
def test_export_refuses_a_device_node_and_leaves_it(run: Run, tmp_path: Path) -> None:
    device = tmp_path / "null"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert_usage_error(run("export", "--root", str(tmp_path / "r"), "--out", str(device)), "not a regular file")
    assert stat.S_ISCHR(device.lstat().st_mode)


def test_export_refuses_a_symbolic_link_and_leaves_its_target(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    (tmp_path / "link").symlink_to(target)
    assert_usage_error(run("export", "--root", str(tmp_path / "r"), "--out", str(tmp_path / "link")), "symbolic link")
    assert target.read_text() == "keep me" and (tmp_path / "link").is_symlink()


def test_export_refuses_a_path_in_a_missing_folder(run: Run, tmp_path: Path) -> None:
    assert_usage_error(run("export", "--root", str(tmp_path / "r"), "--out", str(tmp_path / "no" / "x.jsonl")),
                       "does not exist")


def test_export_replaces_a_regular_file_keeping_its_mode(run: Run, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    out.write_text("old contents\n")
    out.chmod(0o640)
    code, _, err = run("export", "--root", str(tmp_path / "r"), "--out", str(out))
    assert code == 0, err
    assert out.read_text() == "" and stat.S_IMODE(out.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []


def test_import_names_a_line_nested_too_deeply(run: Run, tmp_path: Path) -> None:
    lines = tmp_path / "in.jsonl"
    lines.write_text('{"content": "ok"}\n' + "[" * 3000 + "]" * 3000 + "\n")
    assert_usage_error(run("import", str(lines), "--root", str(tmp_path / "r"), "--dry-run"), "line 2", "nests")


def test_import_names_a_non_finite_number(run: Run, tmp_path: Path) -> None:
    record = {"id": "0b6f7c2e-4f1e-4c59-9a53-1f0f3c1f2a10", "content": "x", "importance": "NaN",
              "created_at": "2026-01-01T00:00:00Z"}
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps(record).replace('"NaN"', "NaN") + "\n")
    assert_usage_error(run("import", str(lines), "--root", str(tmp_path / "r"), "--dry-run"),
                       "line 1", "importance", "finite number")
