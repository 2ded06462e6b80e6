"""The PTF base test: the target's NAT for each test (the one the test before
ran on, cleared, where their configurations are the same: harness/shared_nat.py),
packet I/O, and checks that read translated packets back.

Layer one of three (as in fabric-tna's ptf/): this base, the packet helpers in
packets.py, and the thin scenario classes grouped by feature in test_*.py.
"""

from __future__ import annotations

import time
import unittest
from pathlib import Path
from typing import Any, ClassVar

import ptf
from harness.shared_nat import NAT
from harness.targets import TARGETS, Target
from packets import checksums_ok, from_inside
from ptf import testutils
from ptf.base_tests import BaseTest
from scapy.packet import Packet

HERE = Path(__file__).resolve().parent

# PTF port numbers (run.py maps them to the veths facing the target's ports 1-3).
INSIDE, OUTSIDE, INSIDE2 = 0, 1, 2
RECEIVE_TIMEOUT = 2.0
# How long expect_nothing waits for a packet that must not come. A packet the
# target would forward wrongly comes within its transit, whose longest over a
# whole run (run.py prints it) was 6-10 ms on swpath, 12 ms on quicknat-swx
# (51 ms with make test's lab-free suites beside it), 43 ms on BMv2 and 63 ms
# in offload mode with learning, on this 2-vCPU VM shared with other runs: 0.3 s is more
# than four times that and still catches it (issue #33, docs/test-time.md:
# about 50 such waits a run, 0.5 s each before).
NOTHING_TIMEOUT = 0.3
# Each test's seconds (setUp, test, tearDown), the longest a packet it
# received took from its send (ms), and the seconds it waited for packets
# that did not come (expect_nothing, arrived() -> None): one
# "name<TAB>seconds<TAB>ms<TAB>seconds" line a test, in the run's directory.
# run.py prints the slowest tests, the longest transit (the figure
# expect_nothing's wait is set from) and the total waited for nothing.
DURATIONS = "durations.tsv"
# Packets that arrived after the test before had ended (its id, how many,
# the seconds it waited for packets that did not come): a packet a negative
# wait (expect_nothing) missed because it came late shows up here, where
# the next test's flush would otherwise drop it without a word. run.py
# prints them.
LATE = "late.tsv"
# The test that ran last: its id, when it ended (PTF's receive clock,
# time.time()) and the seconds it waited for nothing.
_last: tuple[str, float, float] | None = None


class QuickNatTest(BaseTest):
    target: Target
    # Settings this scenario needs on top of configs/ptf.toml (harness/configs.py).
    CONFIG: ClassVar[dict[str, Any]] = {}
    # A data path holding this many sessions (harness SMALL_TABLE), or its own size.
    TABLE_SIZE: ClassVar[int | None] = None
    # Why this scenario needs a NAT started for it alone, or None: it may run
    # on the one the scenario before ran on, cleared (harness/shared_nat.py).
    FRESH_NAT: ClassVar[str | None] = None

    def config_overlay(self, workdir: Path) -> dict[str, Any]:
        """The scenario's settings; a scenario whose settings name files in the
        run's directory computes them here."""
        return self.CONFIG

    def run(self, result: unittest.TestResult | None = None) -> unittest.TestResult | None:
        """The test, timed: where `make test`'s minutes go (issue #33)."""
        start = time.monotonic()
        self.sent_at: float | None = None
        self.transit_max = 0.0
        self.waited_for_nothing = 0.0
        problems = _problems(result)
        try:
            return super().run(result)
        finally:
            global _last
            _last = (self.id(), time.time(), self.waited_for_nothing)
            failed = result is None or _problems(result) > problems
            NAT.release(failed)
            seconds = time.monotonic() - start
            workdir = Path(testutils.test_params_get()["workdir"])
            with (workdir / DURATIONS).open("a") as log:
                transit_ms, nothing_s = self.transit_max * 1000, self.waited_for_nothing
                log.write(f"{self.id()}\t{seconds:.2f}\t{transit_ms:.1f}\t{nothing_s:.2f}\n")

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        params: dict[str, Any] = testutils.test_params_get()
        overlay = self.config_overlay(Path(params["workdir"]))
        wanted = TARGETS[params["target"]](params, overlay, self.TABLE_SIZE)
        # run() tells NAT how the test went: the NAT is stopped when the
        # next test cannot share it, or at the run's end.
        self.target = NAT.acquire(self.id(), wanted, self.FRESH_NAT)
        self._note_late(Path(params["workdir"]))
        self.dataplane.flush()  # what came late for the test before

    def _note_late(self, workdir: Path) -> None:
        """Counts, for run.py, what reached the ports after the test before
        ended (its leftovers that came in time are not counted)."""
        if _last is None:
            return
        name, ended, waited = _last
        late = sum(
            1 for queue in self.dataplane.packet_queues.values() for _, at in queue if at > ended
        )
        if late:
            with (workdir / LATE).open("a") as log:
                log.write(f"{name}\t{late}\t{waited:.2f}\n")

    def send(self, port: int, pkt: Packet) -> None:
        self.sent_at = time.time()  # the clock of PTF's receive timestamps
        testutils.send_packet(self, port, bytes(pkt))

    def receive(self, port: int, timeout: float = RECEIVE_TIMEOUT) -> Packet:
        """The next packet on a port, checksums verified."""
        from scapy.layers.l2 import Ether

        result = self.dataplane.poll(port_number=port, timeout=timeout)
        if isinstance(result, self.dataplane.PollFailure):
            self.fail(f"no packet on port {port} within {timeout} s")
        if self.sent_at is not None:
            # from the last send to this packet's arrival: an upper bound of
            # its transit (the packet may answer an earlier send)
            self.transit_max = max(self.transit_max, result.time - self.sent_at)
        pkt = Ether(result.packet)
        self.assertTrue(checksums_ok(pkt), f"bad checksum in {pkt.summary()}")
        return pkt

    def opened(self, src: str, dst: str, l4: Packet) -> tuple[str, int]:
        """Sends a TCP or UDP packet from inside host src (INSIDE port) to dst;
        the external address and port it leaves with (its destination kept)."""
        from scapy.layers.inet import IP, TCP, UDP

        self.send(INSIDE, from_inside(src, dst, l4))
        out = self.receive(OUTSIDE)
        layer = TCP if TCP in l4 else UDP
        self.assertEqual((out[IP].dst, out[layer].dport), (dst, l4[layer].dport))
        return str(out[IP].src), int(out[layer].sport)

    def arrived(self, port: int, timeout: float = 1.0) -> Packet | None:
        """The next packet on a port, or None (for a packet that may or may not
        come, e.g. one sent while its session ages out)."""
        from scapy.layers.l2 import Ether

        result = self.dataplane.poll(port_number=port, timeout=timeout)
        if isinstance(result, self.dataplane.PollFailure):
            self.waited_for_nothing += timeout
            return None
        return Ether(result.packet)

    def expect(self, port: int, pkt: Packet) -> None:
        """Exactly this packet on this port (and nothing else checked)."""
        testutils.verify_packet(self, bytes(pkt), port, timeout=RECEIVE_TIMEOUT)

    def expect_nothing(self, timeout: float = NOTHING_TIMEOUT) -> None:
        self.waited_for_nothing += timeout
        testutils.verify_no_other_packets(self, timeout=timeout)


def _problems(result: unittest.TestResult | None) -> int:
    """Failures and errors a result holds so far."""
    return 0 if result is None else len(result.failures) + len(result.errors)
