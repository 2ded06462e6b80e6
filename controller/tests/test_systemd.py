"""sd_notify's protocol, received on a socket as systemd would."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from quicknat.controller.systemd import notify


def test_notify_sends_one_datagram_to_the_socket(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "notify.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind(str(path))
        systemd.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", str(path))
        assert notify("READY=1\nSTATUS=primary")
        assert systemd.recv(64) == b"READY=1\nSTATUS=primary"


def test_notify_abstract_socket(monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"quicknat-test-{id(monkeypatch)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as systemd:
        systemd.bind("\0" + name)
        systemd.settimeout(2)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert notify("STOPPING=1")
        assert systemd.recv(64) == b"STOPPING=1"


def test_without_systemd_nothing_is_sent(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert not notify("READY=1")
    monkeypatch.setenv("NOTIFY_SOCKET", "relative/path")
    assert not notify("READY=1")
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "nobody-listens"))
    assert not notify("READY=1")
