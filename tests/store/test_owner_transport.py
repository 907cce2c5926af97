"""Where the owner of a shared store listens (store/owner.py): AF_UNIX in the store folder where it can, else TCP on
127.0.0.1 (Windows' path, forced on Linux with AGENT_MEMORY_OWNER_TRANSPORT=tcp; a socket path too long for AF_UNIX;
a folder that cannot hold the socket file). Each is reached by a client with the token, and refused without it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from amplifier_module_tool_agent_memory.store import wire
from amplifier_module_tool_agent_memory.store.edge import IdentityStore, acquire_store, release_store
from amplifier_module_tool_agent_memory.store.owner import TRANSPORT_ENV, OwnerServer, connect, read_owner

DIM = 384


@pytest.fixture
def store(root: Path) -> Iterator[IdentityStore]:
    opened = acquire_store(root, "alice", "test-model", DIM)
    yield opened
    release_store(opened)


def _serve_and_reach(store: IdentityStore) -> str:
    """Start an owner on ``store``, reach it as a client would; the transport it published."""
    server = OwnerServer(store.path, store.collection, {"model_id": "test-model", "dim": DIM})
    server.start()
    try:
        info = read_owner(store.path)
        assert info is not None
        if info["family"] == "tcp":
            assert info["address"][0] == "127.0.0.1"
        sock = connect(info)
        wire.send(sock, {"token": info["token"], "protocol": wire.PROTOCOL})
        assert wire.receive(sock) == {"r": {"model_id": "test-model", "dim": DIM, "protocol": wire.PROTOCOL}}
        sock.close()
        stranger = connect(info)
        wire.send(stranger, {"token": "0" * 64, "protocol": wire.PROTOCOL})
        assert "wrong token" in wire.receive(stranger)["e"]["message"]
        stranger.close()
        # A process of another version (session 7's sent no protocol) is refused, not misread call by call.
        older = connect(info)
        wire.send(older, {"token": info["token"]})
        assert f"protocol {wire.PROTOCOL}, not 1" in wire.receive(older)["e"]["message"]
        older.close()
        return str(info["family"])
    finally:
        server.stop()
        assert read_owner(store.path) is None


def test_the_owner_listens_on_a_socket_file_by_default(store: IdentityStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    assert _serve_and_reach(store) == "unix"
    assert not (store.path / ".sock").exists()  # removed when the owner stops


def test_tcp_on_loopback_when_asked(store: IdentityStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "tcp")
    assert _serve_and_reach(store) == "tcp"


def test_tcp_when_the_folder_cannot_hold_the_socket_file(store: IdentityStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    # A directory where the socket file goes: neither removed nor bound over (as on a file system without sockets).
    (store.path / ".sock").mkdir()
    (store.path / ".sock" / "kept").write_text("x")
    assert _serve_and_reach(store) == "tcp"
    assert (store.path / ".sock" / "kept").read_text() == "x"


def test_tcp_when_the_socket_path_is_too_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    opened = acquire_store(deep, "alice", "test-model", DIM)
    try:
        assert _serve_and_reach(opened) == "tcp"
    finally:
        release_store(opened)
