"""The ``quicknat`` command.

Subcommands that need no data path (``check``, ``lookup``) work anywhere; the
controller and data-path subcommands are added by their issues.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from quicknat.addr import parse_ipv4
from quicknat.config import Config, ConfigError, load_config
from quicknat.config.commands import config_commands
from quicknat.config.dump import config_to_data
from quicknat.nat.qns import Qns
from quicknat.rules import Protocol, RuleKind

EXIT_CONFIG = 2


def _check(config: Config, args: argparse.Namespace) -> int:
    if args.json:
        json.dump(config_to_data(config), sys.stdout, indent=2)
        print()
        return 0
    snat = sum(rule.kind is RuleKind.SNAT for rule in config.rules)
    print(
        f"{config.source}: ok: {len(config.rules)} rules ({snat} snat, "
        f"{len(config.rules) - snat} dnat), {len(config.pools)} pools, "
        f"{len(config.interfaces)} interfaces"
    )
    return 0


def _lookup(config: Config, args: argparse.Namespace) -> int:
    qns = Qns()
    for rule in config.rules:
        qns.add(rule)
    try:
        protocol = int(args.protocol) if args.protocol.isdigit() else Protocol.parse(args.protocol)
        src, dst = parse_ipv4(args.src), parse_ipv4(args.dst)
    except ValueError as exc:
        print(f"quicknat lookup: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    found = qns.lookup(int(protocol), src, args.sport, dst, args.dport)
    if found is None:
        print("no rule matches")
        return 1
    print(f"rule {found.id}: {found.describe_match()}")
    return 0


def _swpath_commands(config: Config, args: argparse.Namespace) -> int:
    print("\n".join(config_commands(config)))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="quicknat", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a rules configuration")
    check.add_argument("config")
    check.add_argument("--json", action="store_true", help="print the parsed configuration")
    check.set_defaults(run=_check)
    lookup = sub.add_parser("lookup", help="which rule a new flow would match (QNS)")
    lookup.add_argument("config")
    lookup.add_argument("--protocol", default="tcp", help="tcp, udp, icmp or a number")
    lookup.add_argument("--src", required=True)
    lookup.add_argument("--sport", type=int, default=0)
    lookup.add_argument("--dst", required=True)
    lookup.add_argument("--dport", type=int, default=0)
    lookup.set_defaults(run=_lookup)
    commands = sub.add_parser(
        "swpath-commands", help="the configuration as swpath commands (docs/swpath-commands.md)"
    )
    commands.add_argument("config")
    commands.set_defaults(run=_swpath_commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for message in exc.messages:
            print(message, file=sys.stderr)
        return EXIT_CONFIG
    for warning in config.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return int(args.run(config, args))


if __name__ == "__main__":
    sys.exit(main())
