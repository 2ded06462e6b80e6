#!/usr/bin/env python3
"""New flows per second against the number of NAT rules: iptables, nftables
and swpath on the same namespace topology, one generator (issue #16, 1).

The paper's headline claim, brought up to date. The `make run-swpath` topology
(topo/run_swpath.py) with, in the "nat" namespace, each of:

- **iptables** (Debian's, the nft backend): one `-j SNAT` rule per prefix in
  POSTROUTING, the matching one last: a linear walk per new flow;
- **nftables** with a map, `snat to ip saddr map { PREFIX : POOL, ... }`
  (an interval map: Linux's hashed/tree answer);
- **swpath** (on the lab's AF_XDP) with the same rules in its configuration
  (QNS).

The rules: RULES - 1 plausible non-matching prefixes (/24, /28 and /32, one
per /24 upward from 100.64.0.0), then the one that matches (10.0.0.0/23,
topo/lab.toml's).
The generator, in h1, sends FLOWS UDP datagrams through an AF_PACKET socket,
each a new flow (200 source addresses of 10.0.0.0/24 x 250 source ports, so
swpath's per-host limits are not what is measured), as fast as it can, pinned
to CPU 0; what srv's interface received until all but 1 % had come is the new
flows per second the NAT set up, with the CPU per flow over the send. The
generator's own rate (the NAT's ceiling here) is measured too, with the
packets dropped at h1's side, and reported. Needs root, nft, iptables (make
deps), make build.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from cpu_times import CpuTimes
from lab.netns import in_namespace, run
from lab.netns_lab import NAT, namespace, running_lab
from lab.processes import raise_on_signals
from lab.swpath import QUICKNAT

ROOT = Path(__file__).resolve().parent.parent
SIZES = [100, 1_000, 10_000, 100_000]
POOL = "203.0.113.0-203.0.113.3"
KERNEL_ADDRESSES = {"in0": "10.0.0.1/24", "in1": "10.0.1.1/24", "out0": "198.51.100.1/24"}
H1_DEV, SRV_DEV = "h1-eth0", "srv-eth0"
SENDER_CPU = 0  # the generator's; swpath's worker polls the last CPU
NAT_IN_MAC = "02:00:00:00:00:01"  # topo/lab/topology.py: the NAT's end on h1's link

# h1: FLOWS frames, each a new UDP flow to srv, sent once as fast as possible.
SENDER = """
import socket, struct, sys, time
n, dst_mac, src_mac = int(sys.argv[1]), sys.argv[2], sys.argv[3]
mac = lambda m: bytes(int(x, 16) for x in m.split(":"))
def csum(b):
    s = sum(struct.unpack("!10H", b))
    s = (s >> 16) + (s & 0xFFFF)
    return ~(s + (s >> 16)) & 0xFFFF
frames = []
eth = mac(dst_mac) + mac(src_mac) + b"\\x08\\x00"
dst = socket.inet_aton("198.51.100.10")
for i in range(n):
    src = socket.inet_aton(f"10.0.0.{2 + i % 200}")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28, i & 0xFFFF, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    udp = struct.pack("!HHHH", 1024 + i // 200, 9, 8, 0)
    frames.append(eth + ip + udp + bytes(18))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[4], 0))
stat = lambda: "".join(x for x in open("/proc/stat") if x.startswith("cpu"))
stat0, start = stat(), time.monotonic()
for f in frames:
    try:
        s.send(f)
    except BlockingIOError:
        pass
elapsed, stat1 = time.monotonic() - start, stat()
print(elapsed)
print(stat0 + "--")
print(stat1)
"""


def prefixes(count: int) -> list[str]:
    """`count` distinct non-matching prefixes from 100.64.0.0 up, mixed lengths."""
    out = []
    for i in range(count):
        base = (100 << 24) + (64 << 16) + (i << 8)  # a /24 each
        length = (24, 28, 32)[i % 3]
        out.append(f"{base >> 24}.{(base >> 16) & 255}.{(base >> 8) & 255}.{base & 255}/{length}")
    return out


# srv: watches its interface's receive counter (every 0.5 ms) from a start
# signal until it has not moved for a second; prints the packets received and
# the time from the first to the burst's last: the NAT's rate, not the
# sender's (a NAT that queues finishes after the sender).
WATCHER = """
import sys, time
path = f"/sys/class/net/{sys.argv[1]}/statistics/rx_packets"
read = lambda: int(open(path).read())
start = read()
print("ready", flush=True)
samples, last, last_t = [], start, None
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    now, n = time.monotonic(), read()
    if n != last:
        samples.append((now, n))
        last, last_t = n, now
    elif last_t and now - last_t > 1.0:
        break
    time.sleep(0.0005)
# the burst's end: when all but 1 % had come (a few frames can straggle in
# 0.15 s later, and an ARP or two), and how many had come by then
end, by_end = next(((t, n) for t, n in samples if n >= last - max(4, (last - start) // 100)),
                   (0.0, start))
print(last - start, end - samples[0][0] if samples else 0.0, by_end - start)
"""


def send(lab: Any, flows: int) -> tuple[float, int, float, int, CpuTimes, CpuTimes]:
    """Sends the flows: (seconds the sender took, packets srv received, seconds
    from srv's first to the burst's end and the packets by then, and the CPU
    time of the machine and of the sender's CPU over the send)."""
    watcher = subprocess.Popen(
        in_namespace(namespace("srv"), "python3", "-c", WATCHER, SRV_DEV, "600"),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert watcher.stdout is not None
    assert watcher.stdout.readline().strip() == "ready"
    # srv's receive on the sender's CPU (RPS), for every NAT. The kernel's NAT
    # delivers there anyway (veth hands a frame on in the sender's context).
    # swpath's transmit would leave it on swpath's CPU, queued behind the
    # worker until it yields: the last frames of a burst came up to 0.1 s
    # late, and the worker's socket ring overflowed meanwhile.
    rps = f"/sys/class/net/{SRV_DEV}/queues/rx-0/rps_cpus"
    lab.run("srv", "sh", "-c", f"echo {1 << SENDER_CPU:x} > {rps}")
    args = [str(flows), NAT_IN_MAC, "02:00:00:00:01:10", H1_DEV]
    sender = ("taskset", "-c", str(SENDER_CPU), "python3", "-c", SENDER, *args)
    # /proc/stat just before the first frame and after the last, taken by the
    # sender: not its start-up (building the frames), while swpath's worker
    # polls its CPU regardless
    answer = lab.run("h1", *sender, timeout=600)
    seconds, stats = answer.split("\n", 1)
    before, after = stats.split("--\n")
    sent_s = float(seconds)
    machine = CpuTimes.parse(after) - CpuTimes.parse(before)
    on_sender = CpuTimes.parse(after, SENDER_CPU) - CpuTimes.parse(before, SENDER_CPU)
    out, _ = watcher.communicate(timeout=660)
    received, window, by_end = out.split()
    return sent_s, int(received), float(window), int(by_end), machine, on_sender


def kernel_nat(lab: Any) -> None:
    for dev, address in KERNEL_ADDRESSES.items():
        run("ip", "-n", NAT, "addr", "add", address, "dev", dev)
    run(*in_namespace(NAT, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1"))
    # srv's MAC known, as swpath's static neighbours are: no burst waits on ARP
    run(
        "ip",
        "-n",
        NAT,
        "neigh",
        "replace",
        "198.51.100.10",
        "lladdr",
        "02:00:00:00:03:10",
        "dev",
        "out0",
    )


def load_iptables(workdir: Path, rules: list[str]) -> float:
    lines = ["*nat", ":POSTROUTING ACCEPT [0:0]"]
    lines += [f"-A POSTROUTING -s {p} -o out0 -j SNAT --to-source {POOL}" for p in rules]
    lines += ["COMMIT", ""]
    path = workdir / "rules.iptables"
    path.write_text("\n".join(lines))
    start = time.monotonic()
    with path.open() as f:
        subprocess.run(in_namespace(NAT, "iptables-restore"), stdin=f, check=True, timeout=1800)
    return time.monotonic() - start


def load_nftables(workdir: Path, rules: list[str]) -> float:
    elements = ",\n".join(f"{p} : {POOL}" for p in rules)
    text = f"""
table ip quicknat_bench {{
    map snat_to {{
        type ipv4_addr : interval ipv4_addr
        flags interval
        elements = {{ {elements} }}
    }}
    chain postrouting {{
        type nat hook postrouting priority srcnat; policy accept;
        oifname "out0" snat ip to ip saddr map @snat_to
    }}
}}
"""
    path = workdir / "rules.nft"
    path.write_text(text)
    start = time.monotonic()
    run(*in_namespace(NAT, "nft", "-f", str(path)))
    return time.monotonic() - start


def swpath_commands(workdir: Path, rules: list[str]) -> Path:
    base = subprocess.run(
        [str(QUICKNAT), "swpath-commands", str(ROOT / "topo" / "lab.toml")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # the same rules in QNS: the lab's own SNAT rule (10.0.0.0/23) is the match
    extra = [
        f"rule add id {1000 + i} type snat prefix {p} protocol any pool public"
        for i, p in enumerate(rules[:-1])
    ]
    path = workdir / "nat.cmds"
    path.write_text(base + "\n".join(extra) + "\n")
    return path


def measure(nat: str, size: int, flows: int, workdir: Path) -> dict[str, Any]:
    rules = [*prefixes(size - 1), "10.0.0.0/23"]
    work = workdir / f"{nat}-{size}"
    work.mkdir()
    load_s = 0.0
    if nat == "swpath":
        with running_lab(work, commands=swpath_commands(work, rules)) as lab:
            sent_s, received, window, by_end, machine, on_sender = send(lab, flows)
            stats = json.loads(lab.quicknat("stats", "--json"))["counters"]
    else:
        with running_lab(work, nat=False) as lab:
            kernel_nat(lab)
            loader = load_iptables if nat == "iptables" else load_nftables
            load_s = loader(work, rules)
            sent_s, received, window, by_end, machine, on_sender = send(lab, flows)
            stats = {}
    return {
        "nat": nat,
        "rules": size,
        "flows_sent": flows,
        "send_s": round(sent_s, 3),
        "received": received,
        "receive_window_s": round(window, 3),
        # stray frames (an ARP) can add one or two: no more than were sent
        "new_flows_per_s": round(min(by_end, flows) / max(window, sent_s / flows)),
        "rule_load_s": round(load_s, 2),
        # CPU per new flow while the sender sent, over the whole machine, and
        # without the sender's own user and system time on its CPU: what stays
        # is the NAT (the kernel's runs in the softirq there, swpath on the
        # other CPU, polling) and srv's side of the path. /proc/stat counts in
        # 10 ms ticks: over a send of 0.07 to 0.25 s, read it to 5 to 15 %.
        "cpu_us_per_flow_all": round(machine.busy / received * 1e6, 2) if received else None,
        "cpu_us_per_flow_nat": round((machine.busy - on_sender.task) / received * 1e6, 2)
        if received
        else None,
        **(
            {"swpath_drops": {k: v for k, v in stats.items() if k.startswith("drop") and v}}
            if stats
            else {}
        ),
    }


def generator_ceiling(workdir: Path, flows: int) -> float:
    """Frames per second the sender itself reaches (nothing forwards them)."""
    with running_lab(workdir / "ceiling", nat=False) as lab:
        args = [str(flows), NAT_IN_MAC, "02:00:00:00:01:10", H1_DEV]
        sender = ("taskset", "-c", str(SENDER_CPU), "python3", "-c", SENDER, *args)
        seconds = float(lab.run("h1", *sender, timeout=300).split("\n", 1)[0])
    return flows / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--flows", type=int, default=50_000)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    args = parser.parse_args()
    raise_on_signals()  # SIGTERM too: the labs' finally clean-ups run
    needs = [t for t in ("nft", "iptables-restore") if shutil.which(t) is None]
    if os.geteuid() != 0 or needs:
        print(f"rules-vs-flows: skipped: needs root{', ' + ', '.join(needs) if needs else ''}")
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="quicknat-rules-vs-flows-"))
    sizes = [int(s) for s in args.sizes.split(",")]
    ceiling = generator_ceiling(workdir, args.flows)
    print(f"generator: {ceiling:,.0f} frames/s")
    results = []
    for size in sizes:
        for nat in ("iptables", "nftables", "swpath"):
            # iptables walks every rule per new flow: fewer flows where it
            # crawls, so that a point takes seconds, not an hour
            flows = args.flows if nat != "iptables" else max(2000, args.flows * 1000 // size)
            r = measure(nat, size, min(flows, args.flows), workdir)
            results.append(r)
            print(json.dumps(r))
    print_table(results, ceiling)
    out = {
        "command": "make bench-peers (bench/rules_vs_flows.py)",
        "machine": {"cpus": os.cpu_count()},
        "generator_frames_per_s": round(ceiling),
        "flows": args.flows,
        "runs": results,
    }
    path = ROOT / "bench" / "results" / "rules_vs_flows.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    plot(results, path.with_suffix(".png"))
    print(f"wrote {path.relative_to(ROOT)} and {path.with_suffix('.png').relative_to(ROOT)}")
    return 0


def print_table(results: list[dict[str, Any]], ceiling: float) -> None:
    nats = ("iptables", "nftables", "swpath")
    sizes = sorted({r["rules"] for r in results})
    for field, title in (
        ("new_flows_per_s", f"new flows/s (generator alone: {ceiling:,.0f} frames/s)"),
        ("cpu_us_per_flow_nat", "CPU us per new flow, without the generator's own"),
        ("cpu_us_per_flow_all", "CPU us per new flow, whole machine"),
    ):
        print(f"\n{title}")
        print(f"{'rules':>8}" + "".join(f"{nat:>12}" for nat in nats))
        for size in sizes:
            row = {r["nat"]: r[field] for r in results if r["rules"] == size}
            print(f"{size:>8,}" + "".join(f"{row.get(n, 0):>12,}" for n in nats))


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for nat, style in (("iptables", "s--"), ("nftables", "^--"), ("swpath", "o-")):
        points = sorted((r["rules"], r["new_flows_per_s"]) for r in results if r["nat"] == nat)
        ax.plot([p[0] for p in points], [p[1] for p in points], style, label=nat)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("NAT rules (the matching one last)")
    ax.set_ylabel("new flows per second")
    ax.set_title("New flows against rules, one topology, one generator")
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    raise SystemExit(main())
