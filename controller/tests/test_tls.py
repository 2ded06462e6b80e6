"""The controller's P4Runtime client over TLS and mutual TLS, against each
real switch serving TLS with certificates made here (openssl): BMv2's
simple_switch_grpc where it is installed, and quicknat-swx, which takes the
same command-line words (docs/p4-targets.md)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab import swx
from lab.bmv2 import switch_command
from lab.processes import start, stop, wait_for_tcp
from quicknat.p4rt.client import P4RuntimeClient, P4RuntimeError, Tls

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")

# each switch's TLS words are simple_switch_grpc's
TLS_FLAGS = [
    "--grpc-server-ssl",
    "--grpc-server-cacert",
    "ca.pem",
    "--grpc-server-cert",
    "switch.pem",
    "--grpc-server-key",
    "switch.key",
    "--grpc-server-with-client-auth",
]


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _certificates(d: Path) -> None:
    """A CA, the switch's certificate (for 127.0.0.1) and the controller's."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
             "-out", "ca.pem", "-days", "1", "-subj", "/CN=quicknat-test-ca", cwd=d)  # fmt: skip
    for name, san in (("switch", "IP:127.0.0.1,DNS:switch.test"), ("controller", "DNS:ctl")):
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=d)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-out", f"{name}.pem", "-days", "1",
                 "-extfile", f"{name}.ext", cwd=d)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command(which: str, address: str, d: Path) -> list[str]:
    """The switch `which` serving mutual TLS on `address`."""
    flags = [str(d / f) if f.endswith((".pem", ".key")) else f for f in TLS_FLAGS]
    if which == "bmv2":
        if shutil.which("simple_switch_grpc") is None:
            pytest.skip("needs simple_switch_grpc")
        return [*switch_command({}, address, d), *flags]
    if swx.missing() or os.geteuid() != 0:
        pytest.skip("needs root and quicknat-swx (make build)")
    return [*swx.null_switch_command([1], address, d), *flags]


@pytest.fixture(scope="module", params=["bmv2", "swx"])
def switch(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Path]]:
    d = tmp_path_factory.mktemp(f"tls-{request.param}")
    _certificates(d)
    port = _free_port()
    address = f"127.0.0.1:{port}"
    proc = start(_command(request.param, address, d), d / "switch.log")
    try:
        wait_for_tcp("127.0.0.1", port, 30, proc)
        yield address, d
    finally:
        stop(proc)
        swx.remove_runtime_dir(d)


async def _cookie(address: str, tls: Tls | None) -> int | None:
    client = P4RuntimeClient(address, 1, 1, tls)
    try:
        await client.connect(timeout=5)
        return await client.get_pipeline_cookie()
    finally:
        await client.close()


def test_mutual_tls_connects_and_becomes_primary(switch: tuple[str, Path]) -> None:
    address, d = switch
    tls = Tls(d / "ca.pem", d / "controller.pem", d / "controller.key")
    assert asyncio.run(_cookie(address, tls)) is None  # connected: no pipeline yet


def test_the_name_in_the_certificate_can_be_given(switch: tuple[str, Path]) -> None:
    address, d = switch
    tls = Tls(d / "ca.pem", d / "controller.pem", d / "controller.key", "switch.test")
    assert asyncio.run(_cookie(address, tls)) is None


@pytest.mark.parametrize("which", ["plaintext", "no client certificate", "another CA"])
def test_what_the_switch_refuses(switch: tuple[str, Path], which: str, tmp_path: Path) -> None:
    address, d = switch
    tls: Tls | None = None
    if which == "no client certificate":
        tls = Tls(d / "ca.pem")
    elif which == "another CA":
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "o.key",
                 "-out", "other.pem", "-days", "1", "-subj", "/CN=other", cwd=tmp_path)  # fmt: skip
        tls = Tls(tmp_path / "other.pem", d / "controller.pem", d / "controller.key")
    with pytest.raises(P4RuntimeError):
        asyncio.run(_cookie(address, tls))
