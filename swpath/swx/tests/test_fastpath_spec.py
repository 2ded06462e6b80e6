"""The hand-written NAT fast path (swpath/swx/bench/nat_fastpath.spec) on
DPDK's SWX pipeline, through bench_swx_spec, the harness that measures it
(bench/swx_ceiling.py): every established packet leaves translated exactly
as scapy builds it (addresses, ports, TTL, MACs, both checksums), every
packet it must hand on leaves unchanged by the full program's port
(bench/swx_fastpath.py). As root (DPDK)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.packet import Packet

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
BENCH_SPEC = REPO / "swpath" / "build" / "swx" / "bench_swx_spec"
sys.path.insert(0, str(REPO / "bench"))

import swx_fastpath as fp  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not BENCH_SPEC.exists(), reason="needs root and make -C swpath/swx"
)


@pytest.fixture
def work() -> Iterator[Path]:
    """A directory of a short name: DPDK's I/O spec takes paths of at most
    63 characters (pytest's tmp_path can be longer)."""
    with tempfile.TemporaryDirectory(prefix="qn-fp-", dir="/tmp") as tmp:
        yield Path(tmp)


def run(spec: Path, sent: list[tuple[fp.Flow | None, Packet]], work: Path) -> dict[str, object]:
    flows = [f for f, _ in sent if f is not None]
    fp.write_entries(work / "entries", flows)
    fp.write_scapy_pcap(work / "in.pcap", [p for _, p in sent])
    out = work / "out"
    out.mkdir()
    args = [str(BENCH_SPEC), "-C", str(work / "cache"), "-o", str(out), "-n", str(len(sent))]
    args += ["-t", fp.TABLE, str(work / "entries"), str(spec), str(work / "in.pcap"), "0"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_fastpath_output_is_byte_correct(work: Path) -> None:
    sent = fp.check_packets(64)
    result = run(fp.SPEC, sent, work)
    assert fp.differences(sent, work / "out") == []
    handed_on = sum(1 for f, _ in sent if f is None)
    assert result["out"] == [0, len(sent) - handed_on, 0, handed_on]
    assert result["dropped"] == 0


def test_the_check_sees_a_wrong_checksum(work: Path) -> None:
    """The same check on the spec less its TTL checksum update (the header
    checksum left one off): it must fail, or it proves nothing."""
    broken = work / "broken.spec"
    text = fp.SPEC.read_text()
    line = "\tckadd h.ipv4.hdr_checksum h.ipv4.ttl\n"
    assert line in text
    broken.write_text(text.replace(line, ""))
    sent = fp.check_packets(8)
    run(broken, sent, work)
    problems = fp.differences(sent, work / "out")
    assert any("unexpected" in p for p in problems)
