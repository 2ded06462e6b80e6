"""IN-IP-9 on the P4 path: the controller's fragment handling (punts.py,
nat/fragments.py) drops and counts (`fragment.overlap`) every fragment attack
of harness/fragment_attacks.py, the ones swpath drops (test_sp_frag.c,
sp_e2e_fragments.py) and PTF sends through BMv2, in both directions: only the
valid first fragment of a datagram leaves, translated with the ports the NAT
checked."""

from __future__ import annotations

import asyncio

from harness.fragment_attacks import Attack, attacks
from quicknat.p4.constants import PuntReason
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet
from stub_controller import Run

HOST, REMOTE, EXTERNAL = "10.0.0.10", "198.51.100.9", "203.0.113.1"
INSIDE_PORT, OUTSIDE_PORT = 1, 2
# one port in the pool (snat_pool_one_port): each protocol's session gets it
EXTERNAL_PORT = 2000


def inside(l4: Packet, other: Packet) -> tuple[Ether, IP, Packet, Packet]:
    return Ether(), IP(src=HOST, dst=REMOTE), l4, other


def outside(l4: Packet, other: Packet) -> tuple[Ether, IP, Packet, Packet]:
    return Ether(), IP(src=REMOTE, dst=EXTERNAL), l4, other


FLOWS = {
    # proto: (the session's first packet, the attacks from inside, from outside)
    "udp": (
        UDP(sport=5000, dport=53),
        inside(UDP(sport=5000, dport=53), UDP(sport=5001, dport=53)),
        outside(UDP(sport=53, dport=EXTERNAL_PORT), UDP(sport=53, dport=EXTERNAL_PORT + 1)),
    ),
    "tcp": (
        TCP(sport=5000, dport=443, flags="S"),
        inside(TCP(sport=5000, dport=443, flags="A"), TCP(sport=5001, dport=443, flags="S")),
        outside(
            TCP(sport=443, dport=EXTERNAL_PORT, flags="A"),
            TCP(sport=443, dport=EXTERNAL_PORT + 1, flags="S"),
        ),
    ),
    "icmp": (
        ICMP(type=8, id=5000),
        inside(ICMP(type=8, id=5000), ICMP(type=8, id=5001)),
        outside(ICMP(type=0, id=EXTERNAL_PORT), ICMP(type=0, id=EXTERNAL_PORT + 1)),
    ),
}


def ports(pkt: Packet) -> tuple[int, int]:
    l4 = pkt[IP].payload
    return (l4.id, l4.id) if ICMP in pkt else (l4.sport, l4.dport)


async def check(run: Run, attack: Attack, port: int) -> None:
    """The attack's frames punted from `port`: only its `forwarded` frames
    leave (packet-out), translated with the session's endpoints; the rest
    are counted fragment.overlap."""
    sent = len(run.switch.injected)
    before = run.counters().get("fragment.overlap", 0)
    for f in attack.frames:
        run.packet_in(PuntReason.FRAGMENT, f, port)
    await run.settle()
    out = [Ether(f) for f in run.switch.injected[sent:]]
    assert len(out) == len(attack.forwarded), attack.name
    for got, i in zip(out, attack.forwarded, strict=True):
        want = Ether(attack.frames[i])
        assert (got[IP].id, got[IP].frag) == (want[IP].id, want[IP].frag), attack.name
        if port == INSIDE_PORT:
            assert (got[IP].src, ports(got)[0]) == (EXTERNAL, EXTERNAL_PORT), attack.name
        else:  # the session's inside endpoint, not the smuggled one
            assert (got[IP].dst, ports(got)[1]) == (HOST, 5000), attack.name
        # the data after any header, as sent
        assert bytes(got[IP].payload)[20:] == bytes(want[IP].payload)[20:], attack.name
    counted = run.counters().get("fragment.overlap", 0) - before
    assert counted == attack.dropped, attack.name


def test_every_attack_is_dropped_and_counted_in_both_directions() -> None:
    async def scenario() -> None:
        run = Run()
        await run.first_flow()  # the UDP session
        for first in (FLOWS["tcp"][0], FLOWS["icmp"][0]):
            run.packet_in(PuntReason.NEW_FLOW, bytes(Ether() / IP(src=HOST, dst=REMOTE) / first))
        await run.settle()
        assert len(list(run.controller.mode.nat.sessions())) == 3
        ident, total, forwarded = 0x6C00, 0, 0
        for _, from_in, from_out in FLOWS.values():
            for (ether, ip, l4, other), port in ((from_in, INSIDE_PORT), (from_out, OUTSIDE_PORT)):
                for attack in attacks(ether, ip, l4, other, ident):
                    await check(run, attack, port)
                    total += attack.dropped
                    forwarded += len(attack.forwarded)
                ident += 16
        assert total > 40
        assert run.counters()["fragment.overlap"] == total
        # their valid first fragments only left; none is held
        assert run.counters()["fragment.translated"] == forwarded
        assert run.controller.mode.punts.fragments.held == 0
        await run.close()

    asyncio.run(scenario())
