"""The idle timeout rule: how long a session may stay idle, by its protocol
and, for TCP, by its phase (docs/nat-behavior.md TIME-1, TIME-3, TCP-1,
TCP-2). One rule for the Python core's sessions (core.py, from the TCP flags
it tracks) and for offload mode's (the phase a slow-path instance announces);
swpath's sp_nat_timeout_ms is the same rule in C, and the shared vectors
(tests/vectors/nat/, a timeout per protocol and phase) hold both to it.
"""

from __future__ import annotations

from quicknat.config.model import Timeouts
from quicknat.nat.tcp_state import TcpPhase
from quicknat.rules import Protocol

# plain ints: the rule is asked per installed session
_UDP, _ICMP = int(Protocol.UDP), int(Protocol.ICMP)


def idle_timeout(timeouts: Timeouts, protocol: int, phase: TcpPhase | None) -> int:
    """Seconds a session may stay idle: UDP's (RFC 4787 REQ-5), ICMP query's
    (RFC 5508 REQ-1), an established TCP session's (RFC 5382 REQ-5), and the
    transitory one for every other TCP phase: opening, closing or reset (RFC
    5382 REQ-5, RFC 7857 sec. 2.2). Any other protocol has TCP's transitory
    time, as in swpath (the core translates none: Refusal.UNSUPPORTED)."""
    if protocol == _UDP:
        return timeouts.udp
    if protocol == _ICMP:
        return timeouts.icmp
    if phase is TcpPhase.ESTABLISHED:
        return timeouts.tcp_established
    return timeouts.tcp_transitory
