"""TCP session state for timeouts (RFC 5382 REQ-5, RFC 7857 sec. 2.2), as swpath
keeps it (swpath/src/nat.h, sp_nat_tcp_track / sp_nat_tcp_established).

The state is the set of flags seen per direction. A session is established when
both SYNs have been seen (in either order, so simultaneous open counts), or when
it was picked up without any SYN and has carried traffic both ways; a FIN or a
RST since makes it transitory again. Established sessions get the established
idle timeout (default 7,440 s), the others the transitory one (240 s), so a RST
leaves a session at most 4 minutes.
"""

from __future__ import annotations

import enum

SYN_I2O, SYN_O2I = 0x01, 0x02
FIN_I2O, FIN_O2I = 0x04, 0x08
RST = 0x10
SEEN_I2O, SEEN_O2I = 0x20, 0x40

FLAG_FIN, FLAG_SYN, FLAG_RST = 0x01, 0x02, 0x04  # in the TCP header

_SYN = SYN_I2O | SYN_O2I
_SEEN = SEEN_I2O | SEEN_O2I
_CLOSING = FIN_I2O | FIN_O2I | RST


def track(state: int, outbound: bool, tcp_flags: int) -> int:
    """The state after a segment with these header flags, inside to outside
    (outbound) or back."""
    state |= SEEN_I2O if outbound else SEEN_O2I
    if tcp_flags & FLAG_SYN:
        state |= SYN_I2O if outbound else SYN_O2I
    if tcp_flags & FLAG_FIN:
        state |= FIN_I2O if outbound else FIN_O2I
    if tcp_flags & FLAG_RST:
        state |= RST
    return state


def established(state: int) -> bool:
    if state & _CLOSING:
        return False
    return (state & _SYN) == _SYN or ((state & _SYN) == 0 and (state & _SEEN) == _SEEN)


class TcpPhase(enum.Enum):
    """A TCP session's phase, in the words swpath's session stream and
    `quicknat sessions` use (swpath/src/format.c, sp_tcp_phase_names); the
    timeout rule (timeouts.py) takes it."""

    OPENING = "opening"  # not established yet: a SYN without its answer, or one direction seen
    ESTABLISHED = "established"  # established(): both SYNs, or picked up with traffic both ways
    CLOSING = "closing"  # a FIN seen
    RESET = "reset"  # a RST seen

    # Identity's hash (members are singletons): Enum's own hashes the name,
    # and offload mode looks a phase up per session event.
    __hash__ = object.__hash__


#: A phase by its word, as a slow-path instance's session stream writes it.
PHASES = {p.value: p for p in TcpPhase}


def phase(state: int) -> TcpPhase:
    """The phase of a state (swpath: sp_nat_tcp_phase)."""
    if state & RST:
        return TcpPhase.RESET
    if state & (FIN_I2O | FIN_O2I):
        return TcpPhase.CLOSING
    return TcpPhase.ESTABLISHED if established(state) else TcpPhase.OPENING
