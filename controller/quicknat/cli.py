"""quicknat: check a NAT configuration, look up its rules, run the P4Runtime
controller, and read the sessions and counters of a running controller or
quicknat-swpath.

Subcommands that need no data path (``check``, ``lookup``, ``swpath-commands``)
work anywhere; ``controller`` runs the P4 path's control plane; ``sessions``,
``stats`` and ``routes`` ask a running controller or swpath over its control
socket, ``neighbors`` swpath.
Every error is one line on stderr, exit status 2 for what was given, 1 for
what failed while running (cli_args.py).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias

from quicknat import __version__, log_format, socket_paths
from quicknat.addr import parse_ipv4
from quicknat.cli_args import (
    EXIT_RUNTIME,
    EXIT_USAGE,
    ArgumentParser,
    fail,
    pem_file,
    readable_file,
    rule_words_problem,
    socket_path,
)
from quicknat.config import Config, ConfigError, load_config
from quicknat.config.commands import config_commands, slow_path_commands
from quicknat.config.dump import config_to_data
from quicknat.metrics import split_address
from quicknat.nat.qns import Qns
from quicknat.rules import Protocol, RuleKind
from quicknat.stats_view import stats_lines, table_lines

EXIT_CONFIG = EXIT_USAGE


def _check(config: Config, args: argparse.Namespace) -> int:
    if args.json:
        json.dump(config_to_data(config), sys.stdout, indent=2)
        print()
        return 0
    snat = sum(rule.kind is RuleKind.SNAT for rule in config.rules)
    print(
        f"{config.source}: ok: {_count(len(config.rules), 'rule')} ({snat} snat, "
        f"{len(config.rules) - snat} dnat), {_count(len(config.pools), 'pool')}, "
        f"{_count(len(config.interfaces), 'interface')}"
    )
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _lookup(config: Config, args: argparse.Namespace) -> int:
    qns = Qns()
    for rule in config.rules:
        qns.add(rule)
    try:
        src, dst = parse_ipv4(args.src), parse_ipv4(args.dst)
    except ValueError as exc:
        print(f"quicknat lookup: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    found = qns.lookup(args.protocol, src, args.sport, dst, args.dport)
    if found is None:
        print("no rule matches")
        return 1
    print(f"rule {found.id}: {found.describe_match()}")
    return 0


def _swpath_commands(config: Config, args: argparse.Namespace) -> int:
    if args.slow_path is None:
        print("\n".join(config_commands(config)))
        return 0
    try:
        print("\n".join(slow_path_commands(config, args.slow_path)))
    except ValueError as exc:
        print(f"quicknat swpath-commands: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return 0


DEFAULT_SOCKET = str(socket_paths.socket_path("controller"))


def _protocol(text: str) -> int:
    """tcp, udp, icmp, or an IP protocol number."""
    if text.isdigit() and int(text) <= 255:
        return int(text)
    if text.lower() in ("tcp", "udp", "icmp"):
        return int(Protocol.parse(text))
    raise argparse.ArgumentTypeError(f"{text!r}: must be tcp, udp, icmp or a number 0-255")


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a port number 0-65535")
    return int(text)


def _protocol_name(number: object) -> str:
    try:
        return str(Protocol(int(str(number))))
    except ValueError:
        return str(number)


def _address(text: str) -> str:
    try:
        split_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def _exporter(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from quicknat.controller.status import query
    from quicknat.metrics import registry, serve_metrics

    def read() -> dict[str, Any]:
        try:
            answer = query(Path(args.socket), "stats", timeout=2.0)
        except (OSError, ValueError):  # not there, or not a data path's socket
            return {"up": False}
        if not isinstance(answer, dict):
            return {"up": False}
        return {"up": True, **answer}

    def read_switch() -> tuple[dict[str, Any], dict[str, Any]]:
        from quicknat.dpdk_telemetry import query as ask

        ports = ask(args.swx, "/quicknat_swx/ports", timeout=2.0)
        tables = ask(args.swx, "/quicknat_swx/tables", timeout=2.0)
        if not isinstance(ports, dict) or not isinstance(tables, dict):
            raise ValueError(f"--swx {args.swx}: not quicknat-swx's telemetry")
        return ports, tables

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        host, port = split_address(args.listen)
        scraped = registry(
            read, args.path, data_path_process=True, switch=read_switch if args.swx else None
        )
        server = await serve_metrics(host, port, scraped)
        await stop.wait()
        server.close()
        await server.wait_closed()

    try:
        asyncio.run(main())
    except OSError as exc:  # the address cannot be bound
        return fail("exporter", f"--listen {args.listen}: {exc.strerror or exc}", EXIT_RUNTIME)
    return 0


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def _controller(config: Config, args: argparse.Namespace) -> int:
    import asyncio
    import signal

    from quicknat.controller.program import PROGRAMS, ConfigMismatch, Pipeline, PipelineMismatch
    from quicknat.controller.service import Controller, ControllerOptions, ResetRefused
    from quicknat.controller.status import SocketInUse

    log_format.configure(
        args.log_format, "quicknat-controller", logging.DEBUG if args.verbose else logging.INFO
    )
    logging.getLogger("grpc").setLevel(logging.WARNING)  # its DEBUG is noise for users
    try:
        tls = _tls(args)
    except _Usage as exc:
        return fail("controller", str(exc), EXIT_USAGE)
    options = ControllerOptions(
        grpc_addr=args.grpc_addr,
        device_id=args.device_id,
        election_id=args.election_id,
        socket=Path(args.socket),
        punt_rate_pps=args.punt_rate,
        writes_in_flight=args.writes_in_flight,
        reset=args.reset,
        force=args.force,
        metrics=split_address(args.metrics_addr) if args.metrics_addr else None,
        config_path=Path(args.config).resolve(),
        tls=tls,
        standby=args.standby,
    )
    try:
        p4info, device_config = PROGRAMS[args.target]
        pipeline = Pipeline.load(
            Path(args.p4info or p4info), Path(args.device_config or device_config)
        )
        controller = Controller(config, options, pipeline)
    except (OSError, KeyError, ConfigMismatch, PipelineMismatch) as exc:
        print(f"quicknat controller: {exc}", file=sys.stderr)
        return EXIT_CONFIG

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # SIGHUP (systemctl reload): the configuration file again, at run time
        loop.add_signal_handler(
            signal.SIGHUP, lambda: asyncio.ensure_future(controller.reload_from_file())
        )
        await controller.run(stop)

    try:
        asyncio.run(main())
    except ResetRefused as exc:
        print(f"quicknat controller: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except SocketInUse as exc:  # a live socket, or a file that is no socket
        return fail("controller", str(exc), EXIT_RUNTIME)
    except OSError as exc:  # --metrics-addr or --socket cannot be bound
        return fail("controller", _os_error(exc), EXIT_RUNTIME)
    return 0


def _os_error(exc: OSError) -> str:
    """An OSError as one line: what it was about, and why."""
    what = exc.filename if exc.filename else None
    why = exc.strerror or str(exc)
    return f"{what}: {why}" if what else why


def _tls(args: argparse.Namespace) -> Any:
    from quicknat.p4rt.client import Tls

    if args.tls_ca is None:
        if args.tls_cert or args.tls_key:
            raise _Usage("--tls-cert and --tls-key need --tls-ca")
        return None
    if bool(args.tls_cert) != bool(args.tls_key):
        raise _Usage("--tls-cert and --tls-key go together")
    return Tls(
        Path(args.tls_ca),
        Path(args.tls_cert) if args.tls_cert else None,
        Path(args.tls_key) if args.tls_key else None,
        args.tls_server_name,
    )


class _Usage(ValueError):
    """Options that do not go together (exit 2)."""


def _session_query(args: argparse.Namespace) -> str:
    """The `sessions` line for the socket, from the CLI's filters."""
    from quicknat.controller.status import SessionQuery

    query = SessionQuery(
        args.action,
        args.limit,
        args.proto,
        parse_ipv4(args.src) if args.src else None,
        parse_ipv4(args.dst) if args.dst else None,
        args.port,
        args.rule,
    )
    if query.proto not in (0, 1, 6, 17):
        raise ValueError("--proto: sessions are tcp, udp or icmp")
    if query.action == "delete" and not query.filtered():
        raise ValueError(
            "delete needs a filter (--proto, --src, --dst, --port, --rule); flush deletes all"
        )
    return query.command()


def _status(args: argparse.Namespace) -> int:
    from quicknat.controller.status import query

    line = args.command
    if args.command == "sessions":
        try:
            line = _session_query(args)
        except ValueError as exc:
            print(f"quicknat sessions: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        answer = query(Path(args.socket), line)
    except OSError as exc:
        return _unreachable(args.command, args.socket, exc)
    except ValueError:  # not JSON: some other program's socket
        return fail(args.command, f"{args.socket}: not a quicknat control socket", EXIT_RUNTIME)
    if isinstance(answer, dict) and "error" in answer:
        print(f"quicknat {args.command}: {answer['error']}", file=sys.stderr)
        return EXIT_RUNTIME
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    if args.command == "stats" and isinstance(answer, dict):
        print("\n".join(stats_lines(answer)))
        return 0
    if args.command in ("neighbors", "routes") and isinstance(answer, list):
        print("\n".join(table_lines(f"{len(answer)} {args.command}", answer)))
        return 0
    if isinstance(answer, dict):  # delete, flush
        print(f"{answer['deleted']} sessions deleted")
        return 0
    assert isinstance(answer, list)
    print(
        f"{'id':>6} {'proto':>5} {'origin':<8} {'internal':<22} {'external':<22} "
        f"{'remote':<22} {'age':>7}  where"
    )
    for row in answer:
        print(
            f"{row['id']:>6} {_protocol_name(row['protocol']):>5} {row['origin']:<8} "
            f"{row['internal']:<22} "
            f"{row['external']:<22} {row['remote']:<22} {row['age_s']:>6}s  {_where(row)}"
        )
    print(f"{len(answer)} sessions")
    return 0


def _unreachable(command: str, socket: str, exc: OSError) -> int:
    print(
        f"quicknat {command}: cannot reach {socket}: {exc.strerror or exc}\n"
        "  is the controller or quicknat-swpath running? --name NAME picks the "
        "instance of a unit, --swpath asks swpath, --socket names any socket",
        file=sys.stderr,
    )
    return EXIT_RUNTIME


def _where(row: dict[str, object]) -> str:
    """Where a session's packets are translated: the controller's rows in
    offload mode name the instance and whether the switch holds it
    ("sp0/switch"), swpath's own say whether the switch holds it too
    ("both", the instance keeping its state), controller mode's whether its
    entries are in the switch yet."""
    if "instance" in row:
        return f"{row['instance']}/{row['where']}"
    if "offloaded" in row:
        return "both" if row["offloaded"] else "software"
    if "installed" in row:
        return "switch" if row["installed"] else str(row.get("install", "pending"))
    return "-"


def _parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(
        prog="quicknat",
        description=__doc__.split("\n\n", 1)[0].replace("\n", " "),
        formatter_class=DEFAULTS,
    )
    parser.add_argument("--version", action="version", version=f"quicknat {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    _configuration_commands(sub)
    _controller_command(sub)
    _exporter_command(sub)
    _status_commands(sub)
    _runtime_commands(sub)
    return parser


DEFAULTS = argparse.ArgumentDefaultsHelpFormatter
# (argparse names no public type for it)
Subparsers: TypeAlias = "argparse._SubParsersAction[ArgumentParser]"


def _configuration_commands(sub: Subparsers) -> None:
    """check, lookup, swpath-commands: a configuration file, no process."""
    check = sub.add_parser("check", help="validate a rules configuration", formatter_class=DEFAULTS)
    check.add_argument("config", help="the TOML configuration file")
    check.add_argument("--json", action="store_true", help="print the parsed configuration")
    check.set_defaults(run=_check)
    lookup = sub.add_parser(
        "lookup", help="which rule a new flow would match (QNS)", formatter_class=DEFAULTS
    )
    lookup.add_argument("config", help="the TOML configuration file")
    lookup.add_argument(
        "--protocol", type=_protocol, default="tcp", help="tcp, udp, icmp or a number 0-255"
    )
    lookup.add_argument("--src", required=True, help="the flow's source address")
    lookup.add_argument("--sport", type=_port, default=0, help="its source port")
    lookup.add_argument("--dst", required=True, help="its destination address")
    lookup.add_argument("--dport", type=_port, default=0, help="its destination port")
    lookup.set_defaults(run=_lookup)
    commands = sub.add_parser(
        "swpath-commands",
        help="the configuration as swpath commands (docs/swpath-commands.md)",
        formatter_class=DEFAULTS,
    )
    commands.add_argument("config", help="the TOML configuration file")
    commands.add_argument(
        "--slow-path",
        metavar="NAME",
        help="the commands of this [[slow_path]] instance of the switch's configuration "
        "(offload mode, docs/offload.md) instead of a stand-alone swpath's",
    )
    commands.set_defaults(run=_swpath_commands)


def _controller_command(sub: Subparsers) -> None:
    """controller: its switch and program here, how it runs (_controller_options)."""
    from quicknat.controller.program import PROGRAMS

    controller = sub.add_parser(
        "controller", help="run the P4Runtime controller service", formatter_class=DEFAULTS
    )
    controller.add_argument("--config", required=True, help="the TOML configuration file")
    controller.add_argument(
        "--grpc-addr", default="127.0.0.1:9559", help="the switch's P4Runtime server"
    )
    controller.add_argument("--device-id", type=int, default=1, help="P4Runtime device id")
    controller.add_argument(
        "--election-id", type=int, default=1, help="P4Runtime election id (highest is primary)"
    )
    controller.add_argument(
        "--target",
        choices=sorted(PROGRAMS),
        default="bmv2",
        help="the switch: BMv2 (simple_switch_grpc) or quicknat-swx (DPDK SWX); "
        "picks the program's committed build (docs/p4-targets.md)",
    )
    controller.add_argument(
        "--p4info", type=readable_file, help="the program's P4Info (default: the target's)"
    )
    controller.add_argument(
        "--device-config",
        "--bmv2-json",
        dest="device_config",
        type=readable_file,
        help="the program's device config: BMv2 JSON or SWX spec (default: the target's)",
    )
    controller.add_argument(
        "--tls-ca",
        type=pem_file,
        help="TLS to the switch: the CA that signed its certificate (PEM)",
    )
    controller.add_argument(
        "--tls-cert", type=pem_file, help="mutual TLS: the controller's certificate (PEM)"
    )
    controller.add_argument(
        "--tls-key", type=pem_file, help="mutual TLS: the controller's private key (PEM)"
    )
    controller.add_argument(
        "--tls-server-name", help="the name in the switch's certificate, if not its address"
    )
    controller.add_argument(
        "--reset",
        action="store_true",
        help="push the pipeline even if installed (clears the switch's tables); "
        "refused while the switch holds sessions, unless --force",
    )
    controller.add_argument(
        "--force",
        action="store_true",
        help="with --reset: clear the tables even if they hold sessions (their flows break)",
    )
    controller.add_argument(
        "--standby",
        action="store_true",
        help="when a controller with a higher --election-id is primary, wait connected as its "
        "backup and take over (sessions and all) when it goes",
    )
    _controller_options(controller)
    controller.set_defaults(run=_controller)


def _controller_options(controller: argparse.ArgumentParser) -> None:
    """How the controller runs: its rates, sockets and logs."""
    controller.add_argument(
        "--socket",
        type=socket_path,
        default=DEFAULT_SOCKET,
        help="status socket for quicknat sessions/stats (its directory must exist)",
    )
    controller.add_argument(
        "--punt-rate",
        type=int,
        default=5000,
        help="new-flow packet-ins per second the switch lets through",
    )
    controller.add_argument(
        "--writes-in-flight",
        type=_positive,
        default=4,
        help="most install WriteRequests outstanding at once (beyond one: full batches only)",
    )
    controller.add_argument(
        "--metrics-addr",
        type=_address,
        help="serve Prometheus metrics at http://HOST:PORT/metrics (off unless given)",
    )
    controller.add_argument("-v", "--verbose", action="store_true", help="log at debug level")
    controller.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one object per line (time, level, process, message, logger), "
        "the keys quicknat-swpath --log-format json writes too",
    )


def _exporter_command(sub: Subparsers) -> None:
    exporter = sub.add_parser(
        "exporter",
        help="Prometheus metrics of a running quicknat-swpath, read from its control socket",
        description="Serves http://LISTEN/metrics; each scrape asks the data path's control "
        "socket for its counters, so the data path does no work for it.",
        formatter_class=DEFAULTS,
    )
    _socket_options(exporter, swpath_only=True)
    exporter.add_argument(
        "--listen", type=_address, default="127.0.0.1:9101", help="HOST:PORT to serve on"
    )
    exporter.add_argument("--path", default="swpath", help="the `path` label of its metrics")
    exporter.add_argument(
        "--swx",
        metavar="PREFIX",
        help="also quicknat-swx's ports, tables and drops (quicknat_switch_*), from the DPDK "
        "telemetry of the switch of EAL --file-prefix PREFIX "
        "(quicknat-swx@NAME: quicknat-swx-NAME)",
    )
    exporter.set_defaults(status="exporter")


def _status_commands(sub: Subparsers) -> None:
    """sessions, stats, routes: asked of either data path over its control
    socket; neighbors, of swpath's (the P4 path has none but the
    configuration's)."""
    for name, what in (("sessions", "list the sessions"), ("stats", "show the counters")):
        status = sub.add_parser(
            name,
            help=f"{what} of a running controller or quicknat-swpath",
            description=f"{what.capitalize()} of a running controller or quicknat-swpath, "
            "asked over its control socket.",
            formatter_class=DEFAULTS,
        )
        _socket_options(status)
        status.add_argument("--json", action="store_true", help="print the answer as JSON")
        status.set_defaults(status=name)
        if name == "sessions":
            _session_filters(status)
    for name, help_, description in (
        (
            "neighbors",
            "show the neighbour (ARP) table of a running quicknat-swpath",
            "The neighbour table of a running quicknat-swpath, as ip-neighbour(8) shows "
            "Linux's: each next hop's MAC and state (configured, reachable, stale, probe, "
            "incomplete), asked over its control socket.",
        ),
        (
            "routes",
            "show the route table of a running controller's switch or quicknat-swpath",
            "The route table, as ip-route(8) shows Linux's: each prefix, the interface and "
            "next hop it leaves by, the source of the NAT's ICMP errors towards it, and "
            "whether it is an interface's connected network; asked over the control socket. "
            "The controller answers with the switch's routing_v4 entries, read over "
            "P4Runtime, and the next hop's MAC each writes.",
        ),
    ):
        table = sub.add_parser(name, help=help_, description=description, formatter_class=DEFAULTS)
        _socket_options(table, swpath_only=name == "neighbors")
        table.add_argument("--json", action="store_true", help="print the answer as JSON")
        table.set_defaults(status=name)


def _runtime_commands(sub: Subparsers) -> None:
    rule = sub.add_parser(
        "rule",
        help="add or delete a rule of a running controller or quicknat-swpath",
        description="rule add id N type snat|dnat prefix P [port N] protocol tcp|udp|icmp|any "
        "(pool NAME | to A [to_port N]), or rule del N [flush]: the run-time command language "
        "(docs/swpath-commands.md). New flows get the change; established sessions keep theirs "
        "(with flush, those of a deleted rule are deleted).",
    )
    # "*", not REMAINDER: an option after the words (--socket, --name) stays an option
    rule.add_argument("words", nargs="*", help="add ... | del N [flush]")
    _socket_options(rule)
    rule.set_defaults(runtime="rule")
    rules = sub.add_parser("rules", help="the rules a running controller or swpath has")
    _socket_options(rules)
    rules.set_defaults(runtime="rules")
    reload = sub.add_parser(
        "reload",
        help="apply a configuration file's rules and settings at run time",
        description="The difference between the running configuration and the file: rules, "
        "timeouts, filtering, limits, icmp, neighbors and routes; a file that changes "
        "interfaces, pools or logging is refused: they need a "
        "restart. The controller reads its own file unless --config names "
        "another (also on SIGHUP); quicknat-swpath needs --config.",
    )
    reload.add_argument(
        "--config", type=readable_file, help="the file (default: the controller's own)"
    )
    reload.add_argument(
        "--flush", action="store_true", help="delete the sessions of removed rules now"
    )
    _socket_options(reload)
    reload.set_defaults(runtime="reload")


def _socket_options(parser: argparse.ArgumentParser, swpath_only: bool = False) -> None:
    """Which running daemon a command asks (quicknat.socket_paths)."""
    parser.add_argument(
        "--socket",
        help="the daemon's control socket (swpath's: its --control path); default "
        "/run/quicknat/controller-NAME.sock (swpath-NAME.sock with --swpath) for --name, "
        "else controller.sock (swpath.sock) if it exists, else the only instance running",
    )
    parser.add_argument(
        "--name",
        help="the instance NAME of quicknat-controller@NAME or quicknat-swpath@NAME "
        "(None: the daemon started by hand, or the only instance running)",
    )
    if swpath_only:
        parser.set_defaults(swpath=True)
    else:
        parser.add_argument(
            "--swpath", action="store_true", help="ask quicknat-swpath, not the controller"
        )


def _session_filters(parser: argparse.ArgumentParser) -> None:
    """conntrack-like: list, delete or flush the sessions the filters select."""
    parser.add_argument(
        "action",
        nargs="?",
        choices=("list", "delete", "flush"),
        default="list",
        help="delete needs a filter; flush deletes every session (that the filters select); "
        "a deleted session's port rests 120 s before reuse, as after an expiry",
    )
    parser.add_argument("--src", type=_ipv4, help="the inside host's address")
    parser.add_argument("--dst", type=_ipv4, help="the remote peer's address")
    parser.add_argument("--port", type=_port, help="any of the inside, external or remote port")
    parser.add_argument(
        "--proto", type=_protocol, default=0, help="tcp, udp, icmp or a number (0: any)"
    )
    parser.add_argument("--rule", type=_positive, help="the rule that opened the session")
    parser.add_argument("--limit", type=int, default=0, help="list at most this many (0: all)")


def _ipv4(text: str) -> str:
    parse_ipv4(text)  # ValueError: argparse names the option
    return text


def _version() -> str:
    return __version__  # the one version string (quicknat/__init__.py)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # `quicknat check --json | head`: the reader is gone; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, as a shell reports it
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT: Ctrl-C on a command waiting for its socket


def _runtime(args: argparse.Namespace) -> int:
    """`rule add|del`, `rules`, `reload`: the run-time command language, to
    either path's socket (swpath reloads by the difference, computed here)."""
    from quicknat.cli_reload import reload_swpath
    from quicknat.controller.status import line_command, query

    if args.runtime == "rule":
        problem = rule_words_problem(args.words)
        if problem is not None:  # said before connecting: no daemon needed to find it
            for line in problem.splitlines():
                print(f"quicknat {line}", file=sys.stderr)
            return EXIT_USAGE
    if args.runtime == "reload" and args.config:
        try:  # the file's problems, before either path is asked
            load_config(args.config)
        except ConfigError as exc:
            return fail("reload", "\n".join(exc.messages), EXIT_USAGE)
    socket_path = Path(args.socket)
    try:
        if args.runtime == "reload":
            stats = query(socket_path, "stats")
            if isinstance(stats, dict) and "connected" in stats:  # the controller
                line = "reload" + (" flush" if args.flush else "")
                if args.config:
                    line += f" config {Path(args.config).resolve()}"
                lines = line_command(socket_path, line)
            else:
                if not args.config:
                    raise _Usage("quicknat-swpath has no configuration file: give --config FILE")
                lines = reload_swpath(socket_path, args.config, args.flush)
        elif args.runtime == "rule":
            lines = line_command(socket_path, " ".join(["rule", *args.words]))
        else:
            lines = line_command(socket_path, "rules")
    except OSError as exc:
        return _unreachable(args.runtime, args.socket, exc)
    except _Usage as exc:
        return fail(args.runtime, str(exc), EXIT_USAGE)
    except ConfigError as exc:  # reload's file, changed since it was checked above
        return fail(args.runtime, "\n".join(exc.messages), EXIT_USAGE)
    except ValueError as exc:  # the running NAT refused the change
        return fail(args.runtime, str(exc), EXIT_RUNTIME)
    for line in lines:
        print(line)
    return 0


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if hasattr(args, "swpath") and args.socket is None:  # which daemon a command asks
        try:
            daemon = "swpath" if args.swpath else "controller"
            args.socket = str(socket_paths.find_socket(daemon, args.name))
        except ValueError as exc:
            return fail(args.command, str(exc), EXIT_USAGE)
    if getattr(args, "runtime", None):
        return _runtime(args)
    if getattr(args, "status", None) == "exporter":
        return _exporter(args)
    if getattr(args, "status", None):
        args.command = args.status
        return _status(args)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for message in exc.messages:
            print(message, file=sys.stderr)
        for warning in exc.warnings:
            print(f"warning: {warning}", file=sys.stderr)
        return EXIT_CONFIG
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return int(args.run(config, args))


if __name__ == "__main__":
    sys.exit(main())
