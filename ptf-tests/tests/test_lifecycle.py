"""Sessions over time: idle timeout, and a restart of the NAT's control part."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from base import INSIDE, OUTSIDE, QuickNatTest
from harness.targets import Bmv2Target
from packets import from_inside, from_outside, to_inside, udp
from ptf.testutils import group
from quicknat.controller.status import query
from scapy.layers.inet import IP, UDP

UDP_TIMEOUT = 4  # configs/ptf.toml
# The restart scenarios stop and start the NAT's processes themselves.
RESTARTS = "it restarts the NAT's processes"


@group("aging")
class IdleTimeoutRemovesBothDirections(QuickNatTest):
    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(6000, 53)))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[UDP].sport
        self.assertEqual(len(self.target.sessions()), 1)
        self.target.wait_until(
            "session expired", lambda: not self.target.sessions(), UDP_TIMEOUT + 10
        )
        self.assertEqual(self.target.counter("sessions_expired"), 1)
        if isinstance(self.target, Bmv2Target):
            # offload mode: the manager deletes the switch's entries a batch
            # window after the instance closed the session (docs/offload.md)
            self.target.wait_in_switch(0)
        # The inbound direction is gone too: the old reply is not let in.
        self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
        self.expect_nothing()
        # A new packet of the flow is a new flow again.
        new_flows = self.target.counter("new_flows")
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(6000, 53)))
        self.receive(OUTSIDE)
        self.assertGreater(self.target.counter("new_flows"), new_flows)


@group("aging")
class OperatorDeletesSessions(QuickNatTest):
    """`quicknat sessions delete|flush` (conntrack -D/-F): the selected
    sessions go from the data path at once, the others stay, the old reply is
    not let in, and the flow's next packet is a new flow on another port (the
    deleted one rests before reuse, MAP-8)."""

    def runTest(self) -> None:
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(6001, 53)))
        first = self.receive(OUTSIDE)
        self.send(INSIDE, from_inside("10.0.0.20", "198.51.100.10", udp(6002, 53)))
        self.receive(OUTSIDE)
        if isinstance(self.target, Bmv2Target):
            # offload mode: both in the switch first, so that one there after
            # the delete is the one that stays
            self.target.wait_in_switch(2)
        self.assertEqual(len(self.target.sessions("src 10.0.0.10")), 1)
        self.assertEqual(self.target.delete_sessions("delete src 10.0.0.10 proto udp"), 1)
        self.target.wait_until(
            "deleted session gone",
            lambda: not self.target.sessions("src 10.0.0.10"),
            10,
        )
        self.assertEqual(len(self.target.sessions()), 1)
        self.assertEqual(self.target.counter("sessions_deleted"), 1)
        self.assertEqual(self.target.counter("sessions_expired"), 0)
        if isinstance(self.target, Bmv2Target):
            self.target.wait_in_switch(1)  # offload mode: as above
        self.target.let_go()  # a learning switch: the deleted one's lease ends
        # The inbound direction went with it.
        self.send(OUTSIDE, from_outside("198.51.100.10", first[IP].src, udp(53, first[UDP].sport)))
        self.expect_nothing()
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(6001, 53)))
        again = self.receive(OUTSIDE)
        self.assertNotEqual(again[UDP].sport, first[UDP].sport, "a resting port was reused")
        # flush: every session goes
        self.assertEqual(self.target.delete_sessions("flush"), 2)
        self.target.wait_until("flushed", lambda: not self.target.sessions(), 10)
        self.assertEqual(self.target.counter("sessions_deleted"), 3)


@group("restart")
class ControllerRestartKeepsFlows(QuickNatTest):
    """The NAT's process stopped and started again without a reset keeps its
    sessions, their ages and their ports: on BMv2 the controller reads them
    back from the switch; swpath takes them over from its --state file."""

    FRESH_NAT = RESTARTS
    # the flow outlives the restart however long it takes (as below)
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def runTest(self) -> None:
        if not self.target.keeps_sessions_across_restart:
            self.skipTest(f"{self.target.name} keeps sessions in the process that is restarted")
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7000, 53)))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[UDP].sport
        opened = time.monotonic()
        if isinstance(self.target, Bmv2Target):
            self.target.wait_in_switch(1)
        self.target.stop_nat()
        if self.target.has_separate_switch:
            # Established flows keep working while the NAT's control part is
            # away (swpath: the process that stopped is the data path).
            self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
            self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7000)))
        self.target.start_nat(reset=False)
        sessions = self.target.sessions()
        self.assertEqual(len(sessions), 1)
        self.assertEqual(sessions[0]["external"], f"{external}:{port}")
        # It keeps its age (the entry says when it opened), not 0 s.
        age = time.monotonic() - opened
        self.assertGreater(sessions[0]["age_s"], age - 1.5)
        self.assertLess(sessions[0]["age_s"], age + 1.5)
        # A new flow never gets the port the recovered session holds.
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7001, 53)))
        self.assertNotEqual(self.receive(OUTSIDE)[UDP].sport, port)
        self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7000)))


@group("restart")
class StandbyControllerTakesOver(QuickNatTest):
    """A second controller waits as the primary's backup (`--standby`, lower
    election id). The primary is killed (-9): the switch makes the backup
    primary, which adopts the switch's sessions within 2 s; established flows
    never stop (the switch translates them meanwhile) and new flows resume."""

    FRESH_NAT = RESTARTS

    TAKEOVER_S = 2.0

    def runTest(self) -> None:
        if not isinstance(self.target, Bmv2Target):
            self.skipTest("a standby controller is the P4 path's (swpath has no controller)")
        standby, standby_socket = self.target.start_standby()
        try:
            self.assertFalse(query(standby_socket, "stats")["connected"])  # waiting
            self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7100, 53)))
            out = self.receive(OUTSIDE)
            external, port = out[IP].src, out[UDP].sport
            self.target.wait_in_switch(1)
            self.target.kill_nat()
            killed = time.monotonic()
            # established: translated by the switch alone while no one is primary
            self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
            self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7100)))
            while not query(standby_socket, "stats")["connected"]:
                self.assertLess(time.monotonic() - killed, self.TAKEOVER_S, "no takeover in 2 s")
                time.sleep(0.02)
            took = time.monotonic() - killed
            print(f"takeover in {took:.3f} s")
        except BaseException:
            standby.kill()
            raise
        self.target.adopt(standby, standby_socket)
        stats = self.target.controller_stats()
        self.assertEqual(stats["counters"]["takeovers"], 1)
        sessions = self.target.sessions()
        self.assertEqual([s["external"] for s in sessions], [f"{external}:{port}"])
        # new flows resume, through the new primary, without reusing the port
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7101, 53)))
        self.assertNotEqual(self.receive(OUTSIDE)[UDP].sport, port)
        self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7100)))


@group("restart")
class SwitchRestartReinstallsSessions(QuickNatTest):
    FRESH_NAT = RESTARTS
    # The flow must outlive the restart, whatever the controller's reconnect
    # backoff makes of it: with the shared 4 s UDP timeout (8 s with a
    # learning switch's lease) a slow restart let the instance age the
    # session out before its reply came (ptf-offload-swx-learn, once in a
    # loaded run: the reply 8.3 s after the flow's first packet).
    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def runTest(self) -> None:
        if not isinstance(self.target, Bmv2Target):
            self.skipTest(f"{self.target.name}: the data plane and its control are one process")
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7100, 53)))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[UDP].sport
        self.target.wait_in_switch(1)
        controller = self.target.controller_stats
        pushes = controller()["counters"].get("pipeline_pushes", 0)
        self.target.restart_switch()  # a crash: no program, empty tables
        # The controller reconnects, pushes the pipeline again and reinstalls
        # what it knows (offload mode: what the instance holds), so the flow
        # keeps its mapping.
        self.target.wait_until(
            "controller reinstalled the switch",
            lambda: (
                controller()["counters"].get("pipeline_pushes", 0) > pushes
                and controller()["connected"]  # its configuration written
                # a learning switch learns it again from its next packet
                and controller()["installed"] == (0 if self.target.learns else 1)
            ),
            30,
        )
        new_flows = self.target.counter("new_flows")
        self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7100)))
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7100, 53)))
        again = self.receive(OUTSIDE)
        self.assertEqual((again[IP].src, again[UDP].sport), (external, port))
        self.assertEqual(self.target.counter("new_flows"), new_flows)  # no punt: installed


@group("restart")
class ResetRefusesWhileTheSwitchHoldsSessions(QuickNatTest):
    """A restart must not break flows by accident: `quicknat controller --reset`
    against a switch that runs the program and holds sessions exits (code 2,
    one message saying how many and what to do) and changes nothing; without
    --reset the controller adopts them. Clearing them needs --force."""

    FRESH_NAT = RESTARTS

    CONFIG: ClassVar[dict[str, Any]] = {"timeouts": {"udp": 120}}

    def runTest(self) -> None:
        if not self.target.has_separate_switch:
            self.skipTest(f"{self.target.name} has no switch apart from the NAT process")
        if self.target.learns:
            self.skipTest(
                f"{self.target.name}: the switch's sessions are leases the instances hold "
                "too; the controller has none to lose (or to read)"
            )
        assert isinstance(self.target, Bmv2Target)
        self.send(INSIDE, from_inside("10.0.0.10", "198.51.100.10", udp(7002, 53)))
        out = self.receive(OUTSIDE)
        external, port = out[IP].src, out[UDP].sport
        self.target.wait_in_switch(1)
        self.target.stop_nat()
        message = self.target.reset_refused()
        self.assertIn("--reset would drop the 1 sessions", message)
        self.assertIn("--force", message)
        self.send(OUTSIDE, from_outside("198.51.100.10", external, udp(53, port)))
        self.expect(INSIDE, to_inside("198.51.100.10", "10.0.0.10", udp(53, 7002)))
        self.target.start_nat(reset=False)
        self.assertEqual([s["external"] for s in self.target.sessions()], [f"{external}:{port}"])
