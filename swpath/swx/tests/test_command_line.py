"""quicknat-swx's command line: a number it cannot take is refused with a
message and exit status 2, never read as 0 (strtoul's answer for "abc",
which for --idle-sleep-us meant a switch polling a whole core) or as a
huge number ("-1")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SWX = HERE.parents[1] / "build" / "swx" / "quicknat-swx"
PREFIX = f"swx-cli-{os.getpid()}"
EAL = ["--no-huge", "--no-pci", "-m", "256", "--no-shconf", "-l", "0,1"]
EAL += ["--file-prefix", PREFIX, "--log-level", "*:error"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not SWX.exists(), reason="needs root and make -C swpath/swx"
)


def refused(*args: str) -> str:
    try:
        done = subprocess.run(
            [str(SWX), *EAL, "--", *args], capture_output=True, text=True, timeout=30
        )
    finally:
        shutil.rmtree(Path("/var/run/dpdk") / PREFIX, ignore_errors=True)
    assert done.returncode == 2, (done.returncode, done.stderr)
    return done.stderr.rstrip("\n")


@pytest.mark.parametrize(
    ("option", "value", "bounds"),
    [
        ("--idle-sleep-us", "abc", "0 to 1000000"),
        ("--idle-sleep-us", "-1", "0 to 1000000"),
        ("--idle-sleep-us", "1000001", "0 to 1000000"),
        ("--idle-sleep-us", "", "0 to 1000000"),
        ("--device-id", "1x", "0 to 18446744073709551615"),
        ("--device-id", "18446744073709551616", "0 to 18446744073709551615"),
        ("--pool", "10", "1024 to 4294967295"),
    ],
)
def test_a_number_out_of_range_is_refused(option: str, value: str, bounds: str) -> None:
    assert refused(option, value) == f"quicknat-swx: {option} takes a number from {bounds}: {value}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--grpc-server-cert", "c.pem"], "need --grpc-server-ssl"),
        (["--grpc-server-with-client-auth"], "need --grpc-server-ssl"),
        (["--grpc-server-ssl"], "--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key"),
        (["--grpc-server-ssl", "--grpc-server-cert", "c.pem"], "needs --grpc-server-cert and"),
        (
            ["--grpc-server-ssl", "--grpc-server-cert", "c", "--grpc-server-key", "k",
             "--grpc-server-with-client-auth"],
            "--grpc-server-with-client-auth needs --grpc-server-cacert",
        ),
    ],
)  # fmt: skip
def test_tls_options_that_do_not_hold_together_are_refused(args: list[str], message: str) -> None:
    """Before any port starts: TLS without its certificate and key, client
    auth without the CA to check clients by, or a file given with TLS off."""
    assert message in refused(*args)


def test_a_tls_file_it_cannot_read_is_named(tmp_path: Path) -> None:
    """A certificate that is missing, or not PEM: the switch says which file
    and why, and does not serve (exit 1), rather than serving plaintext."""
    key = tmp_path / "k.pem"
    key.write_text("not a key\n")
    for cert, why in ((tmp_path / "none.pem", "No such file or directory"), (key, "not PEM")):
        try:
            done = subprocess.run(
                [str(SWX), *EAL, "--", "--grpc-addr", "127.0.0.1:0", "--grpc-server-ssl",
                 "--grpc-server-cert", str(cert), "--grpc-server-key", str(key)],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
        finally:
            shutil.rmtree(Path("/var/run/dpdk") / PREFIX, ignore_errors=True)
        assert done.returncode == 1, (done.returncode, done.stderr)
        assert f"quicknat-swx: --grpc-server-cert {cert}: {why}" in done.stderr, done.stderr
