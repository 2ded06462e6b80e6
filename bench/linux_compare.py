#!/usr/bin/env python3
"""swpath side by side with Linux's own NAT (nftables), in one run.

The topology of `make run-swpath` (topo/run_swpath.py: hosts h1, h2 and srv around a
"nat" namespace), twice: once with quicknat-swpath on af_packet in the middle,
once with the kernel forwarding and an nftables `snat` to the same pool
(203.0.113.0/30) in its place. The same generators: iperf3 in h1 against srv
(UDP with 64-byte frames, 18-byte payloads, as fast as it can send, then
TCP), DPDK's testpmd in txonly mode (64-byte UDP frames, a generator that
is not the limit; `testpmd()` below), and a sender that offers every NAT the
same 300k frames/s (`paced()`).

Reported for each: what srv received (packets/s and Mbit/s), and the CPU it
cost per packet delivered, over all CPUs of the machine (generator, NAT and
receiver: on one kernel they cannot be told apart fully) and for the NAT
alone. With iperf3 that is swpath's process time or the kernel's softirq time
(where forwarding and nftables NAT run); with testpmd, pinned to a CPU of its
own, it is everything but testpmd's own user and system time, the same sum
for both NATs (testpmd()).

Read it knowing what af_packet on veth is: every packet swpath forwards is
copied by the kernel into and out of the packet socket's ring, through the same
veth and softirq path the kernel router uses, so swpath pays the kernel's cost
and its own on top, and its polling core is busy whether or not packets come.
On a NIC with a poll-mode driver the kernel is out of the path (bench_swpath's
in-memory figures are that case). Needs root, iperf3, nft, dpdk-testpmd.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cpu_times import CpuTimes, process_cpu
from lab.netns import in_namespace, run
from lab.netns_lab import NAT, missing, running_lab
from lab.nodes import IPERF_PORT, Nodes
from lab.processes import raise_on_signals
from lab.topology import H1, LINKS, SRV

ROOT = Path(__file__).resolve().parent.parent

UDP_PAYLOAD = 18  # 14 Ethernet + 20 IPv4 + 8 UDP + 18 = 60 bytes, 64 with the FCS
NFT_RULES = """
table ip quicknat_compare {
    chain postrouting {
        type nat hook postrouting priority srcnat; policy accept;
        oifname "out0" ip saddr 10.0.0.0/8 snat to 203.0.113.0-203.0.113.3
    }
}
"""
# The nat namespace's interface addresses when the kernel routes (topo/lab.toml).
KERNEL_ADDRESSES = {"in0": "10.0.0.1/24", "in1": "10.0.1.1/24", "out0": "198.51.100.1/24"}


def iperf(lab: Nodes, args: list[str], seconds: float) -> dict[str, Any]:
    proc = subprocess.run(
        lab.command(H1.name, "iperf3", "-c", SRV.ip, "-J", "-t", str(seconds), *args),
        capture_output=True,
        text=True,
        timeout=seconds + 60,
        check=False,
    )
    result: dict[str, Any] = json.loads(proc.stdout)
    if "error" in result:
        raise RuntimeError(f"iperf3 {' '.join(args)}: {result['error']}")
    return result


# A generator that is not the limit: DPDK's testpmd in txonly mode on h1's
# veth (net_af_packet), 64-byte UDP frames of one flow to srv's port 9, as
# fast as it can (1.4 M frames/s into a bare veth on this VM: the kernel's
# pktgen is not built into this VM's kernel). Its main and forwarding lcores
# share CPU 0, so the NAT and the receiver have the other. srv drops port 9
# in its input hook, so it answers no port unreachable.
TESTPMD_PORT = 9
GENERATOR_CPU = 0  # testpmd's lcores, below
GENERATOR_PREFIX = "quicknat-compare-gen"  # its EAL file prefix
SRV_DROP = f"""
table inet quicknat_compare {{
    chain input {{
        type filter hook input priority filter; policy accept;
        udp dport {TESTPMD_PORT} drop
    }}
}}
"""


def srv_rx_packets(lab: Nodes) -> int:
    srv = next(link.a for link in LINKS if link.a.node == SRV.name)
    path = f"/sys/class/net/{lab.device(srv)}/statistics/rx_packets"
    return int(lab.run(SRV.name, "cat", path).strip())


def testpmd(lab: Nodes, workdir: Path, seconds: float, nat_pid: int | None) -> dict[str, Any]:
    """srv's received frames per second from testpmd (after 2 s of start-up),
    and the CPU they cost, as measure() reports it."""
    rules = workdir / "srv-drop.nft"
    rules.write_text(SRV_DROP)
    lab.run(SRV.name, "nft", "-f", str(rules))
    h1_end = next(link.a for link in LINKS if link.a.node == H1.name)
    nat_end = next(link.b for link in LINKS if link.a.node == H1.name)
    command = lab.command(
        H1.name,
        "dpdk-testpmd",
        "--lcores",
        f"(0,1)@{GENERATOR_CPU}",
        "--no-huge",
        "-m",
        "512",
        "--no-pci",
        "--no-shconf",  # no files under /var/run/dpdk; its directory, below
        "--file-prefix",
        GENERATOR_PREFIX,
        "--log-level",
        "*:error",
        "--vdev",
        f"net_af_packet0,iface={lab.device(h1_end)}",
        "--",
        "--forward-mode=txonly",
        "--txpkts=60",
        f"--tx-ip={H1.ip},{SRV.ip}",
        f"--tx-udp=5000,{TESTPMD_PORT}",
        f"--eth-peer=0,{nat_end.mac}",
        "--total-num-mbufs=8192",
        "--stats-period=3600",
        "--auto-start",
    )
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        if proc.poll() is not None:
            raise RuntimeError(f"dpdk-testpmd exited: {proc.returncode}")
        rx0, t0 = srv_rx_packets(lab), time.monotonic()
        cpu0, on_gen0 = CpuTimes.now(), CpuTimes.now(GENERATOR_CPU)
        nat0 = process_cpu(nat_pid) if nat_pid else 0.0
        gen0 = process_cpu(proc.pid)  # `ip netns exec` execs: testpmd's own
        time.sleep(seconds)
        rx, cpu = srv_rx_packets(lab) - rx0, CpuTimes.now() - cpu0
        on_gen = CpuTimes.now(GENERATOR_CPU) - on_gen0
        nat = (process_cpu(nat_pid) - nat0) if nat_pid else 0.0
        gen = process_cpu(proc.pid) - gen0
        elapsed = time.monotonic() - t0
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # the EAL makes its runtime directory even with --no-shconf, empty
        shutil.rmtree(Path("/var/run/dpdk") / GENERATOR_PREFIX, ignore_errors=True)
    return {
        "packets_per_s": round(rx / elapsed),
        "mbit_per_s": round(rx * 64 * 8 / elapsed / 1e6, 1),
        "cpu_ns_per_packet_all": round(cpu.busy / rx * 1e9) if rx else None,
        # All but the generator's own: every CPU's busy time less testpmd's
        # user and system time on its CPU. That keeps the softirq there, where
        # veth hands each frame on: the kernel's forwarding and NAT with
        # nftables, the XDP redirect and copy into the socket with AF_XDP.
        # Both include what srv's side costs (the bridge, srv's drop).
        "cpu_ns_per_packet_nat": round((cpu.busy - on_gen.task) / rx * 1e9) if rx else None,
        # swpath's process time alone (its TX system calls, and the softirqs
        # they run, included); the XDP receive is not in it
        **({"swpath_ns_per_packet": round(nat / rx * 1e9) if rx else None} if nat_pid else {}),
        # testpmd's process time (CPU s per s): with nftables it carries the
        # kernel's NAT too, which veth runs in the sender's context
        "generator_cpu_s_per_s": round(gen / elapsed, 2),
    }


# The same flow at one rate every NAT carries (equal load: what each costs for
# the same traffic, where testpmd above measures each at its peak): frames
# sent from h1 through an AF_PACKET socket by a Python loop that keeps to
# PACED_RATE, pinned to testpmd's CPU; /proc/stat copies taken by the sender
# around its sends. It reaches about 780k frames/s unpaced here.
PACED_RATE = 300_000
PACED = """
import socket, struct, sys, time
dev, dst_mac, src_mac, src, dst = sys.argv[1:6]
port, rate, seconds = int(sys.argv[6]), int(sys.argv[7]), float(sys.argv[8])
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 46, 1, 0, 64, 17, 0,
                 socket.inet_aton(src), socket.inet_aton(dst))
words = sum(struct.unpack("!10H", ip))
words = (words >> 16) + (words & 0xFFFF)
ip = ip[:10] + struct.pack("!H", ~(words + (words >> 16)) & 0xFFFF) + ip[12:]
frame = mac(dst_mac) + mac(src_mac) + b"\\x08\\x00" + ip
frame += struct.pack("!HHHH", 5001, port, 26, 0) + bytes(18)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
stat = lambda: "".join(x for x in open("/proc/stat") if x.startswith("cpu"))
before, start, sent = stat(), time.monotonic(), 0
while (now := time.monotonic() - start) < seconds:
    due = int(now * rate) + 64
    while sent < due:
        try:
            s.send(frame)
        except BlockingIOError:
            pass
        sent += 1
    ahead = sent / rate - (time.monotonic() - start)
    if ahead > 0:
        time.sleep(ahead)
elapsed, after = time.monotonic() - start, stat()
print(sent, elapsed)
print(before + "--")
print(after)
"""


def paced(lab: Nodes, seconds: float, nat_pid: int | None) -> dict[str, Any]:
    """PACED_RATE frames/s of one flow from h1 to srv's dropped port (after
    testpmd(), whose flow opened the session): what arrived, and the CPU per
    packet as testpmd() counts it."""
    h1_end = next(link.a for link in LINKS if link.a.node == H1.name)
    nat_end = next(link.b for link in LINKS if link.a.node == H1.name)
    args = (lab.device(h1_end), nat_end.mac, h1_end.mac, H1.ip, SRV.ip, str(TESTPMD_PORT))
    args += (str(PACED_RATE), str(seconds))
    rx0 = srv_rx_packets(lab)
    answer = lab.run(
        H1.name,
        "taskset",
        "-c",
        str(GENERATOR_CPU),
        "python3",
        "-c",
        PACED,
        *args,
        timeout=seconds + 30,
    )
    time.sleep(0.2)  # the last frames through
    rx = srv_rx_packets(lab) - rx0
    head, stats = answer.split("\n", 1)
    before, after = stats.split("--\n")
    sent, elapsed = int(head.split()[0]), float(head.split()[1])
    cpu = CpuTimes.parse(after) - CpuTimes.parse(before)
    on_gen = CpuTimes.parse(after, GENERATOR_CPU) - CpuTimes.parse(before, GENERATOR_CPU)
    return {
        "offered_per_s": round(sent / elapsed),
        "packets_per_s": round(rx / elapsed),
        "lost": max(0, sent - rx),
        "cpu_ns_per_packet_all": round(cpu.busy / sent * 1e9) if sent else None,
        "cpu_ns_per_packet_nat": round((cpu.busy - on_gen.task) / sent * 1e9) if sent else None,
        "busy_cpus": round(cpu.busy / elapsed, 2),
    }


def measure(lab: Nodes, seconds: float, nat_pid: int | None) -> dict[str, Any]:
    """UDP small packets, then TCP, with the CPU each cost."""
    out: dict[str, Any] = {}
    for name, args in (
        ("udp_64B", ["-u", "-b", "0", "-l", str(UDP_PAYLOAD)]),
        ("tcp", []),
    ):
        cpu0, nat0 = CpuTimes.now(), process_cpu(nat_pid) if nat_pid else 0.0
        result = iperf(lab, args, seconds)
        cpu, nat = CpuTimes.now() - cpu0, (process_cpu(nat_pid) - nat0) if nat_pid else 0.0
        end = result["end"]
        if name == "udp_64B":
            received = end["sum"]["packets"] - end["sum"]["lost_packets"]
            bits = end["sum"]["bits_per_second"] * received / max(end["sum"]["packets"], 1)
        else:
            bits = end["sum_received"]["bits_per_second"]
            # TCP segments of 1,448 bytes (MSS with timestamps on a 1,500 MTU)
            received = int(end["sum_received"]["bytes"] / 1448)
        duration = end["sum_received" if name == "tcp" else "sum"]["seconds"]
        out[name] = {
            "packets_per_s": round(received / duration),
            "mbit_per_s": round(bits / 1e6, 1),
            "cpu_ns_per_packet_all": round(cpu.busy / received * 1e9) if received else None,
            "cpu_ns_per_packet_nat": round((nat if nat_pid else cpu.softirq) / received * 1e9)
            if received
            else None,
        }
    return out


def with_swpath(workdir: Path, seconds: float, pmd: str) -> dict[str, Any]:
    (workdir / f"swpath-{pmd}").mkdir()
    with running_lab(workdir / f"swpath-{pmd}", pmd=pmd) as lab:
        if lab.pmd != pmd:
            return {"skipped": f"{pmd} not usable here"}
        lab.start_server(SRV.name, ["iperf3", "-s"], IPERF_PORT, "iperf3.log")
        assert lab.swpath is not None
        # The generator's first packets open the session; warm it up.
        iperf(lab, ["-u", "-b", "1M"], 1)
        # `ip netns exec` execs its command: the pid is swpath's own.
        result = measure(lab, seconds, lab.swpath.pid)
        result["udp_64B_testpmd"] = testpmd(lab, workdir, seconds, lab.swpath.pid)
        result["udp_64B_paced"] = paced(lab, seconds, lab.swpath.pid)
        return result


def with_nftables(workdir: Path, seconds: float) -> dict[str, Any]:
    (workdir / "nftables").mkdir()
    with running_lab(workdir / "nftables", nat=False) as lab:
        for dev, address in KERNEL_ADDRESSES.items():
            run("ip", "-n", NAT, "addr", "add", address, "dev", dev)
        run(*in_namespace(NAT, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"))
        rules = workdir / "nat.nft"
        rules.write_text(NFT_RULES)
        run(*in_namespace(NAT, "nft", "-f", str(rules)))
        lab.start_server(SRV.name, ["iperf3", "-s"], IPERF_PORT, "iperf3.log")
        iperf(lab, ["-u", "-b", "1M"], 1)
        result = measure(lab, seconds, None)
        result["udp_64B_testpmd"] = testpmd(lab, workdir, seconds, None)
        result["udp_64B_paced"] = paced(lab, seconds, None)
        return result


def compare(seconds: float) -> dict[str, Any]:
    reason = missing() or next(
        (
            f"needs {tool}"
            for tool in ("iperf3", "nft", "dpdk-testpmd")
            if shutil.which(tool) is None
        ),
        None,
    )
    if reason:
        return {"skipped": reason}
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-linux-compare-"))
    # swpath on the lab's default, AF_XDP, and on af_packet; then the kernel
    swpath = with_swpath(workdir, seconds, "af_xdp")
    packet = with_swpath(workdir, seconds, "af_packet")
    nft = with_nftables(workdir, seconds)

    def ratio(mine: dict[str, Any]) -> dict[str, float]:
        return {
            name: round(mine[name]["packets_per_s"] / nft[name]["packets_per_s"], 2)
            for name in nft
            if name in mine and nft[name]["packets_per_s"]
        }

    def cpu_ratio(mine: dict[str, Any]) -> dict[str, dict[str, float]]:
        """CPU per packet against nftables', at each one's peak (testpmd) and
        at the same load (paced)."""
        return {
            name: {
                field: round(mine[name][field] / nft[name][field], 2)
                for field in ("cpu_ns_per_packet_all", "cpu_ns_per_packet_nat")
                if mine[name].get(field) and nft[name].get(field)
            }
            for name in ("udp_64B_testpmd", "udp_64B_paced")
            if name in mine and name in nft
        }

    return {
        "swpath": swpath,
        "swpath_af_packet": packet,
        "nftables": nft,
        "swpath_over_nftables_pps": ratio(swpath),
        "swpath_af_packet_over_nftables_pps": ratio(packet),
        "swpath_over_nftables_cpu": cpu_ratio(swpath),
    }


def print_table(result: dict[str, Any]) -> None:
    if "skipped" in result:
        print(f"side by side with nftables: skipped ({result['skipped']})")
        return
    columns = ("swpath", "swpath_af_packet", "nftables")
    head = ("swpath AF_XDP", "af_packet", "nftables")
    print(f"{'netns lab, h1 -> srv':48} {head[0]:>14} {head[1]:>12} {head[2]:>12}")
    for name in ("udp_64B", "udp_64B_testpmd", "udp_64B_paced", "tcp"):
        for field, label in (
            ("offered_per_s", "offered/s"),
            ("packets_per_s", "packets/s"),
            ("busy_cpus", "CPUs busy"),
            ("mbit_per_s", "Mbit/s"),
            ("cpu_ns_per_packet_all", "CPU ns/packet, whole machine"),
            ("cpu_ns_per_packet_nat", "CPU ns/packet, NAT only"),
            ("swpath_ns_per_packet", "CPU ns/packet, swpath process"),
        ):
            if all(field not in result[c].get(name, {}) for c in columns):
                continue
            values = [result[c].get(name, {}).get(field, "-") for c in columns]
            print(f"{name + ' ' + label:48} {values[0]!s:>14} {values[1]!s:>12} {values[2]!s:>12}")
    print(f"swpath AF_XDP / nftables (packets/s): {result['swpath_over_nftables_pps']}")
    print(
        f"swpath af_packet / nftables (packets/s): {result['swpath_af_packet_over_nftables_pps']}"
    )
    print(f"swpath AF_XDP / nftables (CPU per packet): {result['swpath_over_nftables_cpu']}")


def main() -> int:
    """Alone (and in `make bench-peers`): the table, and its JSON in
    bench/results/linux_compare.json (`make bench-swpath` keeps the same
    figures in swpath.json's linux_side_by_side)."""
    from qns_bench import RESULTS, machine

    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=RESULTS / "linux_compare.json")
    args = ap.parse_args()
    raise_on_signals()  # SIGTERM too: the labs' finally clean-ups run
    result = compare(args.seconds)
    print_table(result)
    if "skipped" in result:
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "benchmark": "linux_compare",
                "date": datetime.now(UTC).isoformat(timespec="seconds"),
                "machine": machine(),
                "seconds_per_run": args.seconds,
                **result,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
