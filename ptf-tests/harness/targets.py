"""The data paths under test, as PTF tests see them.

A test asks its target to start the NAT (the controller for BMv2, the swpath
process for DPDK, both for offload mode), to list sessions and counters, and to
restart. The packet
scenarios are written once against this interface: they name counters by the
canonical names of COUNTERS, and each target says where it keeps each one.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, ClassVar

import grpc
from finsy.proto import p4r, p4r_grpc
from lab import bmv2, swx
from lab.netns import SLOW_PATH_PORT, Topology
from lab.processes import start, start_dpdk, stop, wait_for_tcp, wait_for_unix_socket
from lab.swpath import QUICKNAT, compile_commands, swpath_command
from quicknat.config.leases import lease_for
from quicknat.controller.program import Pipeline
from quicknat.controller.status import query
from quicknat.counters import VOCABULARY, Counter
from quicknat.p4.constants import DropReason

from harness.configs import merged, variant

REPO = Path(__file__).resolve().parents[2]
# The connection-table size of p4src/build/small/ (make -C p4src), and the
# --sessions swpath gets for the same scenarios.
SMALL_TABLE = 64

# The counters scenarios read are the canonical ones of quicknat/counters.py;
# each target reads them under its own names from there.
COUNTERS = {c.name: c.help for c in VOCABULARY}
# `quicknat` commands that change nothing a next scenario would see (any
# other, e.g. `rule` or `reload`, leaves the NAT to its scenario alone).
READ_ONLY_COMMANDS = ("rules", "stats", "sessions", "routes")
# The ICMP errors a NAT sends come out of a token bucket (RFC 1812 sec.
# 4.3.2.8; [icmp] rate 100/s, burst 50 by default) that a flush does not
# refill: a scenario that sent this many, or was refused one, leaves the next
# too few for a burst of its own, so the next gets a NAT of its own.
ICMP_SENT = ("icmp_time_exceeded_sent", "icmp_frag_needed_sent", "icmp_prohibited_sent")
ICMP_SENT_SHARED_MAX = 10


class Target:
    name = "target"
    # Canonical counter name (COUNTERS) -> this target's counter.
    counters: ClassVar[dict[str, str]] = {}
    # Whether stop_nat() then start_nat(reset=False) finds the sessions again.
    keeps_sessions_across_restart = False
    # The native counter of ICMP errors not sent for the rate (ICMP_SENT).
    rate_limited = "icmp_error_rate_limited"
    # Whether the data plane runs apart from the NAT's control part, so that it
    # can be restarted alone (restart_switch), and forwards established flows
    # while the NAT's process is stopped.
    has_separate_switch = False
    # Whether fragments are reassembled before the NAT sees them (then the NAT's
    # own virtual reassembly is not what a scenario exercises).
    reassembles_fragments = False
    # Whether a packet without DF over the egress MTU leaves as fragments
    # (RFC 4787 REQ-13): swpath's own egress does; a switch drops it
    # (docs/nat-behavior.md MTU-1), in offload mode too.
    fragments_on_output = False
    # Whether the switch keeps its clone sessions across pipeline pushes, so
    # that each controller start (--reset pushes the pipeline) adds a replica
    # of the CPU clone: BMv2 does; scenarios that count copies then need a
    # switch of their own (test_rfc.NatOriginatedError).
    clones_outlive_pushes = False

    def restart_switch(self) -> None:
        raise NotImplementedError(f"{self.name} has no separate switch")

    def __init__(
        self,
        params: dict[str, Any],
        overlay: dict[str, Any] | None = None,
        table_size: int | None = None,
    ) -> None:
        missing = COUNTERS.keys() ^ self.counters.keys()
        assert not missing, f"{self.name}: counters not mapped or unknown: {sorted(missing)}"
        self.params = params
        self.workdir = Path(params["workdir"])
        # The shared configuration, or a scenario's variant of it (harness/configs.py).
        self.config = variant(Path(params["config"]), overlay or {}, self.workdir)
        self.socket = self.workdir / f"{self.name}.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        # Sessions the data path holds, where a scenario needs a small table
        # (SMALL_TABLE); None: the data path's own size.
        if table_size not in (None, SMALL_TABLE):
            raise AssertionError(f"table size {table_size}: only {SMALL_TABLE} is built")
        self.table_size = table_size
        # The counters as they stood when the scenario began, by where they
        # are read (a status socket, the switch's drops): a NAT the scenario
        # shares with the one before it (harness/shared_nat.py) reads as if
        # it had started afresh. Empty: the processes started for it.
        self.baseline: dict[str, dict[str, int]] = {}
        # What a scenario did to the NAT that clear() does not undo (a
        # process stopped, rules changed): why the next one needs its own.
        self.dirty: str | None = None

    def share_key(self) -> tuple[str, str, int | None]:
        """What makes two scenarios' NATs the same one: the target, the
        configuration file (named by its content, harness/configs.py) and the
        table size. The run's other parameters are the same for all."""
        return (self.name, str(self.config), self.table_size)

    def start_nat(self, reset: bool = True) -> None:
        """The NAT's processes (reset: from empty tables)."""
        self.baseline = {}  # a process started counts from zero
        if not reset:
            self.dirty = "restarted by the scenario"
        self.start_processes(reset)

    def start_processes(self, reset: bool) -> None:
        raise NotImplementedError

    def stop_nat(self) -> None:
        self.dirty = "stopped"
        stop(self.proc)
        self.proc = None

    def clear(self) -> None:
        """What a scenario leaves that the next on this NAT must not see,
        undone: every session flushed (the operator's `sessions flush`),
        until the data path holds none. Their ports rest (RFC 6888 REQ-8):
        a scenario that needs a fresh allocator says so (FRESH_NAT, base.py)."""
        self.delete_sessions("flush")
        self.wait_equal("the sessions flushed", self.sessions, [], 10)

    def start_counting(self) -> None:
        """From here on, counters read as deltas (baseline)."""
        self.baseline = {}
        self.baseline = self.counter_sources()

    def counter_sources(self) -> dict[str, dict[str, int]]:
        """Every place counters are read, as it stands: source -> counters."""
        return {str(self.socket): self.stats()["counters"]}

    def since_start(self, source: str, counters: dict[str, Any]) -> dict[str, Any]:
        """`counters` of `source` less the scenario's baseline: the one place
        a shared NAT's counters are made to start at zero."""
        base = self.baseline.get(source, {})
        return {k: v - base.get(k, 0) if isinstance(v, int) else v for k, v in counters.items()}

    def leftover(self) -> str | None:
        """What the scenario that just ran left that clear() does not undo
        (read before clear): why the next scenario needs a NAT of its own, or
        None."""
        if self.dirty:
            return self.dirty
        if self.counter("fragment_held"):
            # held for their first fragment: a flush drops sessions, not them
            return "fragments held for reassembly"
        sent = sum(self.counter(name) for name in ICMP_SENT)
        if sent >= ICMP_SENT_SHARED_MAX or self.read_counter(self.rate_limited):
            return f"ICMP errors' token bucket drawn on ({sent} sent)"
        return None

    def sessions(self, filters: str = "") -> list[dict[str, Any]]:
        """The sessions the data path holds (`filters`: as `quicknat sessions`
        sends them, e.g. "src 10.0.0.10 proto udp")."""
        answer = query(self.socket, f"sessions list {filters}".strip())
        assert isinstance(answer, list), answer
        return answer

    def cli(self, *args: str) -> str:
        """`quicknat ARGS --socket` against this target's NAT: its output;
        AssertionError with its message when it fails."""
        command, *rest = args  # the options before `rule`'s words
        proc = subprocess.run(
            [str(QUICKNAT), command, "--socket", str(self.cli_socket(command)), *rest],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0, f"quicknat {' '.join(args)}: {proc.stderr.strip()}"
        if command not in READ_ONLY_COMMANDS:
            self.dirty = f"quicknat {command} at run time"
        return proc.stdout

    def cli_socket(self, command: str) -> Path:
        """Where `quicknat COMMAND` goes."""
        return self.socket

    def delete_sessions(self, words: str) -> int:
        """`sessions delete ...` or `sessions flush`: how many were deleted."""
        answer = query(self.socket, f"sessions {words}")
        assert isinstance(answer, dict) and "deleted" in answer, answer
        return int(answer["deleted"])

    def stats(self) -> dict[str, Any]:
        answer = query(self.socket, "stats")
        assert isinstance(answer, dict)
        answer["counters"] = self.since_start(str(self.socket), answer["counters"])
        return answer

    def counter(self, name: str) -> int:
        """A canonical counter (COUNTERS) as this target counts it."""
        return self.read_counter(self.counters[name])

    def same_counter(self, a: str, b: str) -> bool:
        """Whether canonical counters `a` and `b` are one counter on this target."""
        return self.counters[a] == self.counters[b]

    def read_counter(self, native: str) -> int:
        return int(self.stats()["counters"].get(native, 0))

    def data_plane_timeouts(self) -> list[int] | None:
        """Idle timeouts (s) the data plane itself holds for the ageing entries,
        where it is apart from the NAT's state (a switch); None otherwise."""
        return None

    # Whether the switch learns sessions by itself (no writes, leases).
    learns: ClassVar[bool] = False

    def session_timeout(self, seconds: int) -> int:
        """The idle timeout the NAT holds a session of `seconds`' kind to
        (its sessions' `timeout_s`): that, but where a lease adds to it."""
        return seconds

    def let_go(self) -> None:
        """Until the data plane holds nothing the control deleted (a learning
        switch's leases); at once elsewhere."""

    def wait_equal(self, what: str, read: Any, want: Any, timeout: float) -> None:
        """Until read() gives want; the failure says what it gave last."""
        last: list[Any] = []

        def done() -> bool:
            last[:] = [read()]
            return bool(last[0] == want)

        try:
            self.wait_until(what, done, timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {last[0]!r}, not {want!r}") from None

    def wait_until(self, what: str, predicate: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.1)
        raise AssertionError(f"{self.name}: {what} did not happen within {timeout} s")


class Bmv2Target(Target):
    """The P4 program on BMv2 and the controller: the controller counts what is
    punted to it; the switch's drop_counter (read as `drop.REASON`) counts what
    the data plane drops on its own."""

    name = "bmv2"
    counters: ClassVar[dict[str, str]] = {c.name: c.p4 for c in VOCABULARY}
    rate_limited = "icmp_gen.rate_limited"
    # The sessions live in the switch's tables; a restarted controller reads them back.
    keeps_sessions_across_restart = True
    has_separate_switch = True
    clones_outlive_pushes = True
    # The switch (`quicknat controller --target`), and where its builds are
    # (make -C p4src): the program with the default connection tables, and
    # with SMALL_TABLE-entry ones in small/.
    switch = "bmv2"
    build = REPO / "p4src" / "build"
    device_config = "quicknat.json"
    # A switch in controller mode alone (offload mode adds an instance).
    controller_mode = True

    def switch_command(self, ports: dict[int, str]) -> list[str]:
        return bmv2.switch_command(ports, self.grpc_addr, self.workdir)

    def restart_switch(self) -> None:
        """Kill the switch (as a crash would) and start a fresh one with no
        program and empty tables, on the same ports and gRPC address."""
        self.dirty = "switch restarted"
        pid_file = self.workdir / "switch.pid"
        pid = int(pid_file.read_text())
        os.killpg(pid, signal.SIGKILL)
        self.wait_until("the old switch is gone", lambda: not _alive(pid), 10)
        host, port = self.grpc_addr.rsplit(":", 1)
        topology = Topology(slow_path=not self.controller_mode)
        command = self.switch_command(topology.switch_ports())

        def start_once() -> subprocess.Popen[bytes]:
            switch = start(command, self.workdir / "switch.log")
            try:
                wait_for_tcp(host, int(port), 30, switch)
            except RuntimeError:
                stop(switch)
                raise
            return switch

        switch = start_dpdk(start_once, self.workdir / "switch.log")
        pid_file.write_text(str(switch.pid))

    def __init__(
        self,
        params: dict[str, Any],
        overlay: dict[str, Any] | None = None,
        table_size: int | None = None,
    ) -> None:
        super().__init__(params, overlay, table_size)
        # the controller's status socket (in offload mode self.socket is the instance's)
        self.controller_socket = self.socket
        self.grpc_addr = params["grpc_addr"]
        build = self.build / ("small" if table_size else "")
        self.p4info, self.program = build / "quicknat.p4info.txtpb", build / self.device_config
        self.pipeline = Pipeline.load(self.p4info, self.program)

    def controller_command(self, socket: Path) -> list[str]:
        """`quicknat controller` for this switch, program and configuration."""
        return [
            str(QUICKNAT),
            "controller",
            "--config",
            str(self.config),
            "--grpc-addr",
            self.grpc_addr,
            "--socket",
            str(socket),
            "--target",
            self.switch,
            "--p4info",
            str(self.p4info),
            "--device-config",
            str(self.program),
        ]

    def start_processes(self, reset: bool) -> None:
        # election id 2: a standby (start_standby) has 1
        args = [*self.controller_command(self.controller_socket), "-v", "--election-id", "2"]
        if reset:
            # each scenario starts from empty tables, whatever the last one left
            args += ["--reset", "--force"]
        self.controller_socket.unlink(missing_ok=True)
        self.proc = start(args, self.workdir / "controller.log")
        self.wait_until("controller connected", self._connected, 30)

    def controller_stats(self) -> dict[str, Any]:
        """`quicknat stats` of the controller: its counters, `installed`
        (sessions the switch holds), `connected`."""
        answer = query(self.controller_socket, "stats")
        assert isinstance(answer, dict)
        answer["counters"] = self.since_start(str(self.controller_socket), answer["counters"])
        return answer

    def counter_sources(self) -> dict[str, dict[str, int]]:
        controller = self.controller_stats()["counters"]
        return {
            **super().counter_sources(),
            str(self.controller_socket): controller,
            "drops": self.drops(),
        }

    def clear(self) -> None:
        """Flushed as everywhere, and until the switch's tables hold none:
        a flushed session's delete may still be in flight (wait_in_switch).
        A learning switch's leases cannot be read: OffloadSwxLearnTarget
        empties them its own way."""
        super().clear()
        if not self.learns:
            self.wait_in_switch(0)

    def wait_in_switch(self, sessions: int) -> None:
        """Until the switch holds this many sessions: at once on BMv2 (the
        controller installs before the first packet leaves), soon in offload
        mode (the manager installs what the instance announced). Counted
        twice: by the controller, and in the switch's own nat_out2in table,
        which still holds a session whose delete is in flight (the controller
        no longer counts it), so that a packet sent next meets the switch as
        the test expects."""
        out2in = p4r.Entity(
            table_entry=p4r.TableEntry(table_id=self.pipeline.p4info.table("nat_out2in").id)
        )

        def held() -> bool:
            if self.controller_stats()["installed"] != sessions:
                return False
            return len(asyncio.run(_read(self.grpc_addr, out2in))) == sessions

        self.wait_until(f"{sessions} sessions in the switch", held, 10)

    def start_standby(self) -> tuple[subprocess.Popen[bytes], Path]:
        """A second controller, `--standby` with a lower election id: it waits
        connected as the primary's backup. Its process and status socket."""
        self.dirty = "a standby controller started"
        socket = self.workdir / "standby.sock"
        args = [*self.controller_command(socket), "-v", "--election-id", "1", "--standby"]
        proc = start(args, self.workdir / "standby.log")
        wait_for_unix_socket(socket, 30, proc)
        return proc, socket

    def kill_nat(self) -> None:
        """The primary controller dies (SIGKILL: no goodbye to the switch)."""
        self.dirty = "controller killed"
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=10)

    def adopt(self, proc: subprocess.Popen[bytes], socket: Path) -> None:
        """The standby is this target's controller from now on."""
        self.dirty = "the standby took over"
        if self.socket == self.controller_socket:
            self.socket = socket
        self.proc, self.controller_socket = proc, socket

    def reset_refused(self) -> str:
        """Runs `quicknat controller --reset` (no --force) against the switch
        and returns what it said on its way out; fails if it did not refuse."""
        self.dirty = "a second controller tried a reset"
        args = [*self.controller_command(self.workdir / "refused.sock"), "--reset"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=30, check=False)
        assert proc.returncode == 2, f"--reset did not refuse: {proc.returncode} {proc.stderr}"
        return proc.stderr

    def _connected(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(
                f"controller exited with {self.proc.returncode}; "
                f"see {self.workdir / 'controller.log'}"
            )
        try:
            return bool(self.controller_stats()["connected"])
        except OSError:
            return False

    def read_counter(self, native: str) -> int:
        """One native counter, or the sum of several joined by `+`."""
        total = 0
        for name in native.split("+"):
            if name.startswith("drop."):
                total += self.drops().get(name.removeprefix("drop."), 0)
            else:
                total += int(self.controller_stats()["counters"].get(name, 0))
        return total

    def data_plane_timeouts(self) -> list[int] | None:
        table_id = self.pipeline.p4info.table("nat_in2out").id
        entities = asyncio.run(
            _read(self.grpc_addr, p4r.Entity(table_entry=p4r.TableEntry(table_id=table_id)))
        )
        return [e.table_entry.idle_timeout_ns // 1_000_000_000 for e in entities]

    def drops(self) -> dict[str, int]:
        """Data-plane drops by reason (names as DropReason, lower case)."""
        counter_id = self.pipeline.p4info.object_id("drop_counter")
        entities = asyncio.run(
            _read(self.grpc_addr, p4r.Entity(counter_entry=p4r.CounterEntry(counter_id=counter_id)))
        )
        result = {}
        for entity in entities:
            entry = entity.counter_entry
            try:
                name = DropReason(entry.index.index).name.lower()
            except ValueError:
                continue
            result[name] = entry.data.packet_count
        return self.since_start("drops", result)


class SwxTarget(Bmv2Target):
    """The P4 program's PNA build on quicknat-swx (DPDK's SWX pipeline,
    docs/p4-targets.md) and the controller: the same scenarios as on BMv2,
    with what the target cannot do itself (copy a TCP state change, walk
    IPv4 options) punted and done by the controller."""

    name = "swx"
    switch = "swx"
    build = REPO / "p4src" / "build" / "pna"
    device_config = "quicknat.spec"
    # No packet replication engine at all (swx/p4rt/program.cc): no clones.
    clones_outlive_pushes = False
    # Its ports are DPDK's af_packet too (lab/swx.py), whose fanout has the
    # kernel reassemble fragments first (SwpathTarget).
    reassembles_fragments = True

    def switch_command(self, ports: dict[int, str]) -> list[str]:
        return swx.switch_command(ports, self.grpc_addr, self.workdir)


def _alive(pid: int) -> bool:
    """Running, and not just a zombie: the switch's parent is the harness, which
    reaps it only at the end of the run."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def _read(address: str, entity: p4r.Entity) -> list[p4r.Entity]:
    # Reads need no arbitration: a second, read-only client next to the controller.
    async with grpc.aio.insecure_channel(address) as channel:
        stub = p4r_grpc.P4RuntimeStub(channel)
        result: list[p4r.Entity] = []
        async for reply in stub.Read(p4r.ReadRequest(device_id=1, entities=[entity])):
            result.extend(reply.entities)
        return result


class SwpathTarget(Target):
    """quicknat-swpath on net_af_packet over the qnsN veth ends: one process
    for a run of tests of the same configuration, flushed between them
    (harness/shared_nat.py), so every test starts with empty tables and
    counters at zero."""

    name = "swpath"
    counters: ClassVar[dict[str, str]] = {c.name: c.swpath for c in VOCABULARY}
    # Sessions outlive the process in its --state file (session_store.h): a
    # restart takes them over, unless it starts afresh (reset).
    keeps_sessions_across_restart = True
    # DPDK's af_packet PMD joins its sockets to a fanout group with
    # PACKET_FANOUT_FLAG_DEFRAG, so the kernel hands swpath whole datagrams
    # (on other PMDs swpath translates the fragments themselves: frag.h,
    # tested on pcap files by swpath/tests/sp_e2e.py).
    reassembles_fragments = True
    fragments_on_output = True

    def __init__(
        self,
        params: dict[str, Any],
        overlay: dict[str, Any] | None = None,
        table_size: int | None = None,
    ) -> None:
        super().__init__(params, overlay, table_size)
        self.commands = self.workdir / f"{self.config.stem}.cmds"
        if not self.commands.exists():  # compiled once per run and config
            compile_commands(self.config, self.commands)

    def start_processes(self, reset: bool) -> None:
        """reset: without the sessions of a process before it."""
        # in the run's work directory, with the logs (not tmpfs: a test's few
        # sessions need no speed, and nothing is left behind elsewhere)
        self.proc = start_swpath(self, Topology().target_ports(), self.commands, "swpath", reset)


def start_swpath(
    target: Target, ports: dict[int, str], commands: Path, name: str, reset: bool
) -> subprocess.Popen[bytes]:
    """quicknat-swpath for a target, serving target.socket, logging to
    NAME.log, its sessions in NAME.state (reset: without those of a process
    before it)."""
    # in the run's work directory, with the logs (not tmpfs: a test's few
    # sessions need no speed, and nothing is left behind elsewhere)
    state = target.workdir / f"{name}.state"
    if reset:
        state.unlink(missing_ok=True)
    target.socket.unlink(missing_ok=True)
    command = swpath_command(
        ports, commands, target.socket, f"quicknat-ptf-{os.getpid()}", state=state
    )
    if target.table_size is not None:
        command += ["--sessions", str(target.table_size)]
    log = target.workdir / f"{name}.log"

    def start_once() -> subprocess.Popen[bytes]:
        proc = start(command, log)
        try:
            wait_for_unix_socket(target.socket, 30, proc)
        except RuntimeError as exc:
            stop(proc)
            raise AssertionError(f"{exc}; see {log}") from exc
        return proc

    return start_dpdk(start_once, log)


# The slow-path instance of the offload target, and the prefix of its counters'
# names in OffloadTarget.counters.
INSTANCE = "sp0"


def _offload_counter(c: Counter) -> str:
    """Where offload mode counts `c` (docs/offload.md), `+` between places: a
    packet meets the switch (its drops, and the controller answering its TTL
    and MTU copies, as in controller mode) or, on a miss, a slow-path
    instance (everything else, under swpath's names), never both; so a
    canonical counter is the sum of the two."""
    return _OFFLOAD_ONLY.get(c.name, f"{c.p4}+{INSTANCE}.{c.swpath}")


_OFFLOAD_ONLY = {
    # the controller's packet-ins are the switch's TTL and MTU copies now
    "new_flows": f"{INSTANCE}.sessions_created",
    # the switch drops what is for an address the NAT does not own; the
    # instance refuses what is for the pool without a mapping
    "unsolicited_no_mapping": "drop.no_mapping",
    "unsolicited": f"{INSTANCE}.drop_unsolicited",
    # the switch's parser sees every packet first: no instance gets one it rejects
    "malformed_dropped": "drop.parser_error",
    "truncated_dropped": "drop.parser_error",
}


class OffloadTarget(Bmv2Target):
    """Offload mode (docs/offload.md): BMv2 caches the established sessions,
    one quicknat-swpath instance behind the switch's port SLOW_PATH_PORT takes
    every miss, and the controller is the offload manager between them. The
    sessions (and so `stats`, the CLI) are the instance's; the scenarios
    list and delete them through the controller's view of its instances."""

    name = "offload"
    counters: ClassVar[dict[str, str]] = {c.name: _offload_counter(c) for c in VOCABULARY}
    # the controller answers the switch's TTL and MTU copies, the instance the rest
    rate_limited = f"icmp_gen.rate_limited+{INSTANCE}.icmp_error_rate_limited"
    controller_mode = False
    # The instance is on af_packet too, and the kernel takes the 802.1Q tag
    # off before its defragmenting fanout looks at the packet (SwpathTarget).
    reassembles_fragments = True

    def __init__(
        self,
        params: dict[str, Any],
        overlay: dict[str, Any] | None = None,
        table_size: int | None = None,
    ) -> None:
        workdir = Path(params["workdir"])
        instance_socket = workdir / f"{INSTANCE}.sock"
        # every port of every pool is the one instance's block
        slow_path = {"name": INSTANCE, "port": SLOW_PATH_PORT, "control": str(instance_socket)}
        slow_path["ports"] = "1-65535"
        super().__init__(params, merged(overlay or {}, {"slow_path": [slow_path]}), table_size)
        self.socket = instance_socket
        self.instance: subprocess.Popen[bytes] | None = None
        self.commands = self.workdir / f"{self.config.stem}.{INSTANCE}.cmds"
        if not self.commands.exists():  # compiled once per run and config
            compile_commands(self.config, self.commands, slow_path=INSTANCE)

    def start_processes(self, reset: bool) -> None:
        """The instance (reset: without its sessions of before), then the
        controller."""
        ports = {0: Topology.slow_path_instance_end}
        self.instance = start_swpath(self, ports, self.commands, INSTANCE, reset)
        super().start_processes(reset)

    def stop_nat(self) -> None:
        super().stop_nat()
        stop(self.instance)
        self.instance = None

    def cli_socket(self, command: str) -> Path:
        """Rules are the system's: the controller changes the switch and
        every instance (docs/offload.md); routes are the switch's."""
        controller = ("rule", "rules", "reload", "routes")
        return self.controller_socket if command in controller else self.socket

    def sessions(self, filters: str = "") -> list[dict[str, Any]]:
        """The instance's sessions as the operator sees them: in the
        controller's one view of every instance (offload_view.py), each row
        naming its instance."""
        answer = query(self.controller_socket, f"sessions list {filters}".strip())
        assert isinstance(answer, list), answer
        assert {row["instance"] for row in answer} <= {INSTANCE}, answer
        return answer

    def clear(self) -> None:
        """As on the switch, and until the instance itself holds none."""
        super().clear()

        def held() -> Any:
            return query(self.socket, "sessions list")

        self.wait_equal("the instance's sessions flushed", held, [], 10)

    def delete_sessions(self, words: str) -> int:
        """Deleted through the controller, which sends it to the instance."""
        answer = query(self.controller_socket, f"sessions {words}")
        assert isinstance(answer, dict) and "deleted" in answer, answer
        return int(answer["deleted"])

    def read_counter(self, native: str) -> int:
        total = 0
        for place in native.split("+"):
            if place.startswith(f"{INSTANCE}."):
                counters = self.stats()["counters"]
                total += int(counters.get(place.removeprefix(f"{INSTANCE}."), 0))
            else:
                total += super().read_counter(place)
        return total


class OffloadSwxTarget(OffloadTarget):
    """Offload mode with quicknat-swx as the switch (SwxTarget's PNA build)."""

    name = "offload-swx"
    # The PNA parser does not walk IPv4 options (p4src/README.md): a datagram
    # with options goes to the instance, which drops a malformed list itself.
    counters: ClassVar[dict[str, str]] = {
        **OffloadTarget.counters,
        "malformed_dropped": f"drop.parser_error+{INSTANCE}.drop_malformed",
    }
    switch = "swx"
    build = SwxTarget.build
    device_config = SwxTarget.device_config
    clones_outlive_pushes = SwxTarget.clones_outlive_pushes

    def switch_command(self, ports: dict[int, str]) -> list[str]:
        return swx.switch_command(ports, self.grpc_addr, self.workdir)


class OffloadSwxLearnTarget(OffloadSwxTarget):
    """Offload mode on quicknat-swx with the switch learning the sessions
    (`[offload] install = "learn"`, docs/offload.md "Learning"): no write per
    flow. Every timeout class of the switch is LEASE_S: each session is
    learned under that lease, which ends within a scenario, and the instance
    holds each for its timeout plus that. DPDK 22.11 keeps a learned entry's
    expiry in units of 2^32 TSC cycles (rte_swx_table_learner.c), so an entry
    lives between LEASE_S less one unit (1.65 s at 2.6 GHz, 2.15 s at 2 GHz)
    and LEASE_S: 4 s leaves a scenario over 1.8 s in which the switch alone
    surely carries a flow it learned (ControllerRestartKeepsFlows sends its
    reply about 0.5 s after the learn, with the NAT stopped; at 2 s that
    reply met an expired entry now and then)."""

    name = "offload-swx-learn"
    LEASE_S = 4
    LEARN_TIMEOUTS_S = (LEASE_S,) * 8

    def __init__(
        self,
        params: dict[str, Any],
        overlay: dict[str, Any] | None = None,
        table_size: int | None = None,
    ) -> None:
        learn = {"offload": {"install": "learn", "learn_timeouts": list(self.LEARN_TIMEOUTS_S)}}
        super().__init__(params, merged(overlay or {}, learn), table_size)

    learns = True

    def wait_in_switch(self, sessions: int) -> None:
        """The switch learns a session from its first packet as the packet
        passes (so at once), and lets go of one by itself when its lease
        ends, which no P4Runtime read can see (DPDK 22.11 lists no learner
        entry): for none, until a lease has run out (let_go)."""
        if sessions == 0:
            self.let_go()

    def let_go(self) -> None:
        time.sleep(self.LEASE_S + 0.5)

    def clear(self) -> None:
        """Flushed as in offload mode, and the switch's learner tables
        emptied: a flush leaves what the switch learned until its lease
        ends, and no P4Runtime read or delete reaches a learned entry (DPDK
        22.11), but a pipeline push empties them. So the controller starts
        again with --reset (it pushes the pipeline); the instance, whose EAL
        is most of a fresh start's time, is kept."""
        super().clear()
        stop(self.proc)
        self.proc = None
        Bmv2Target.start_processes(self, reset=True)

    def session_timeout(self, seconds: int) -> int:
        """The instance holds a session it tagged for its timeout plus the
        lease (config/leases.py, docs/offload.md)."""
        return seconds + lease_for(self.LEARN_TIMEOUTS_S, seconds).seconds

    def data_plane_timeouts(self) -> list[int] | None:
        return None  # leases, not idle timeouts, and unreadable


TARGETS: dict[str, type[Target]] = {
    "bmv2": Bmv2Target,
    "swx": SwxTarget,
    "swpath": SwpathTarget,
    "offload": OffloadTarget,
    "offload-swx": OffloadSwxTarget,
    "offload-swx-learn": OffloadSwxLearnTarget,
}
