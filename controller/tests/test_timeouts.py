"""The one idle timeout rule (quicknat/nat/timeouts.py): by protocol and TCP
phase, for the core's tracked states and for the phase words of swpath's
session stream alike. The shared vectors (tests/vectors/nat/, timeout_*) hold
the Python and C cores to the same values end to end."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from quicknat.config.model import Timeouts
from quicknat.nat import tcp_state
from quicknat.nat.tcp_state import PHASES, TcpPhase
from quicknat.nat.timeouts import idle_timeout

ROOT = Path(__file__).resolve().parents[2]
TCP, UDP, ICMP, GRE = 6, 17, 1, 47
T = Timeouts(udp=301, tcp_established=7441, tcp_transitory=241, icmp=61)


@pytest.mark.parametrize(
    ("protocol", "phase", "seconds"),
    [
        (UDP, None, T.udp),
        (ICMP, None, T.icmp),
        (TCP, TcpPhase.OPENING, T.tcp_transitory),
        (TCP, TcpPhase.ESTABLISHED, T.tcp_established),
        (TCP, TcpPhase.CLOSING, T.tcp_transitory),
        (TCP, TcpPhase.RESET, T.tcp_transitory),
        (GRE, None, T.tcp_transitory),  # as swpath's sp_nat_timeout_ms
    ],
)
def test_the_rule_by_protocol_and_phase(
    protocol: int, phase: TcpPhase | None, seconds: int
) -> None:
    assert idle_timeout(T, protocol, phase) == seconds


@pytest.mark.parametrize(
    ("flags", "phase"),
    [
        ([(True, "S")], TcpPhase.OPENING),
        ([(True, "S"), (False, "SA")], TcpPhase.ESTABLISHED),
        ([(True, "A"), (False, "A")], TcpPhase.ESTABLISHED),  # picked up mid-way
        ([(True, "S"), (False, "SA"), (True, "FA")], TcpPhase.CLOSING),
        ([(True, "S"), (False, "SA"), (True, "RA")], TcpPhase.RESET),
    ],
)
def test_the_core_s_tracked_state_has_the_phase(
    flags: list[tuple[bool, str]], phase: TcpPhase
) -> None:
    bits = {"F": tcp_state.FLAG_FIN, "S": tcp_state.FLAG_SYN, "R": tcp_state.FLAG_RST}
    state = 0
    for outbound, letters in flags:
        state = tcp_state.track(state, outbound, sum(bits.get(c, 0) for c in letters))
    assert tcp_state.phase(state) is phase


def test_the_phase_words_are_swpath_s() -> None:
    """offload mode reads an instance's phase by these words."""
    text = (ROOT / "swpath" / "src" / "core" / "session.h").read_text()
    names = re.search(r"sp_tcp_phase_names\[\] = \{(.*?)\};", text, re.S)
    assert names is not None
    assert set(re.findall(r'"(\w+)"', names[1])) == set(PHASES)
