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
