#!/usr/bin/env python3
"""UDP hole punching through a NAT: a rendezvous server and its clients (stdlib).

    holepunch.py server --bind ADDR [--port 3478] [--timeout S]
    holepunch.py client --server ADDR:PORT --name NAME [--port 40000] [--timeout S]

Each client registers with the server from its fixed local port. The server
answers every registration, once a second client has registered, with the
other client's endpoint as the server saw it: its public (external) endpoint
when the client is behind a NAT. Each client then sends to the other's public
endpoint every PUNCH_INTERVAL_S until it has the peer's message and the peer
says it has ours, and keeps answering for LINGER_S so that the peer's last
question gets its answer. Between two clients behind one NAT those packets
hairpin (RFC 4787 REQ-9): each must arrive from the sender's public endpoint.

A client prints one JSON line: its name, its public endpoint, the peer's, where
the peer's message came from and what it said; it exits 0 if it got the message
and 1 otherwise. Every wait is bounded by --timeout.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

PUNCH_INTERVAL_S = 0.2
REGISTER_INTERVAL_S = 0.5
LINGER_S = 1.0

Endpoint = tuple[str, int]


def endpoint_text(endpoint: Endpoint) -> str:
    return f"{endpoint[0]}:{endpoint[1]}"


def parse_endpoint(text: str) -> Endpoint:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"not an ADDRESS:PORT: {text!r}")
    return host, int(port)


def serve(bind: str, port: int, timeout: float) -> int:
    """Remember each client's name -> endpoint as seen; answer every
    registration, once there are two clients, with the other one's."""
    clients: dict[str, Endpoint] = {}
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((bind, port))
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                data, source = sock.recvfrom(2048)
            except TimeoutError:
                break
            words = data.decode(errors="replace").split()
            if len(words) != 2 or words[0] != "REGISTER":
                continue
            clients[words[1]] = source
            print(f"{words[1]} registered from {endpoint_text(source)}", flush=True)
            if len(clients) < 2:
                continue
            for name, endpoint in clients.items():
                peer = next(e for n, e in clients.items() if n != name)
                reply = f"PEER {endpoint_text(peer)} YOU {endpoint_text(endpoint)}"
                sock.sendto(reply.encode(), endpoint)
    return 0


def register(sock: socket.socket, server: Endpoint, name: str, deadline: float) -> list[str]:
    """REGISTER until the server names the peer: [peer endpoint, our endpoint]."""
    while time.monotonic() < deadline:
        sock.sendto(f"REGISTER {name}".encode(), server)
        sock.settimeout(min(REGISTER_INTERVAL_S, max(deadline - time.monotonic(), 0.01)))
        try:
            data, source = sock.recvfrom(2048)
        except TimeoutError:
            continue
        words = data.decode(errors="replace").split()
        if source == server and len(words) == 4 and words[0] == "PEER" and words[2] == "YOU":
            return [words[1], words[3]]
    raise TimeoutError(f"no answer from the server {endpoint_text(server)}")


def punch(sock: socket.socket, peer: Endpoint, name: str, deadline: float) -> dict[str, str]:
    """Send to the peer until we have its message and it has ours; what we got."""
    got: dict[str, str] = {}
    peer_has_ours = False
    done_at = None
    while time.monotonic() < deadline and (done_at is None or time.monotonic() < done_at):
        if done_at is None:
            sock.sendto(f"PUNCH {name} {int(bool(got))}".encode(), peer)
        sock.settimeout(PUNCH_INTERVAL_S)
        try:
            data, source = sock.recvfrom(2048)
        except TimeoutError:
            continue
        words = data.decode(errors="replace").split()
        if len(words) != 3 or words[0] != "PUNCH":
            continue  # a repeated PEER from the server
        if not got:
            got = {"received_from": endpoint_text(source), "received": " ".join(words[:2])}
        peer_has_ours = peer_has_ours or words[2] == "1"
        if done_at is not None or peer_has_ours:
            # Answer the peer's questions a while, then stop.
            sock.sendto(f"PUNCH {name} 1".encode(), source)
            done_at = done_at or time.monotonic() + LINGER_S
    return got


def client(server: Endpoint, name: str, port: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    result: dict[str, object] = {"name": name}
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("0.0.0.0", port))
        try:
            peer, public = register(sock, server, name, deadline)
        except TimeoutError as exc:
            result["error"] = str(exc)
        else:
            result.update(public=public, peer_public=peer)
            result.update(punch(sock, parse_endpoint(peer), name, deadline))
    print(json.dumps(result), flush=True)
    return 0 if "received" in result else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="role", required=True)
    srv = sub.add_parser("server", help="the rendezvous server")
    srv.add_argument("--bind", required=True)
    srv.add_argument("--port", type=int, default=3478)
    srv.add_argument("--timeout", type=float, default=60.0, help="exit after this many seconds")
    cli = sub.add_parser("client", help="register, then punch towards the peer")
    cli.add_argument("--server", required=True, help="the server's ADDRESS:PORT")
    cli.add_argument("--name", required=True)
    cli.add_argument("--port", type=int, default=40000, help="the fixed local port")
    cli.add_argument("--timeout", type=float, default=15.0)
    args = parser.parse_args()
    if args.role == "server":
        return serve(args.bind, args.port, args.timeout)
    return client(parse_endpoint(args.server), args.name, args.port, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
