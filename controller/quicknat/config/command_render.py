"""Lines of the swpath command language (docs/swpath-commands.md), written
by its vocabulary (command_table.py, generated from swpath/spec/commands.toml,
as swpath's parser table is): a verb, its arguments, then its keywords in the
table's order, each value checked against what swpath's parser takes and
written as swpath writes it back. So the controller cannot write a verb, a
keyword or a value the parser lacks: that is a ValueError here, not a line
swpath refuses."""

from __future__ import annotations

import re
from typing import Any

from quicknat.addr import Prefix, format_ipv4
from quicknat.config.command_table import COMMANDS, Field

_IPV4 = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}"
_PATTERNS = {
    "ipv4": re.compile(_IPV4),
    "prefix": re.compile(_IPV4 + r"/(?:3[0-2]|[12]?\d)"),
    "cidr": re.compile(_IPV4 + r"/(?:3[0-2]|[12]?\d)"),
    "endpoint": re.compile(_IPV4 + r":\d{1,5}"),
    "collector": re.compile(_IPV4 + r":\d{1,5}"),
    "mac": re.compile(r"[0-9a-f]{2}(?::[0-9a-f]{2}){5}"),
    "unicast_mac": re.compile(r"[0-9a-f][02468ace](?::[0-9a-f]{2}){5}"),
}


def _checked(f: Field, text: str) -> str:
    pattern = _PATTERNS.get(f.type)
    if pattern is not None and not pattern.fullmatch(text):
        raise ValueError(f"{f.name} {text!r}: not a {f.type}")
    if f.type in ("endpoint", "collector") and int(text.rpartition(":")[2]) > 65535:
        raise ValueError(f"{f.name} {text!r}: the port is over 65535")
    if f.type == "prefix":
        Prefix.parse(text)  # no host bits: the parser refuses them
    return text


def _uint(f: Field, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{f.name} {value!r}: not a number")
    if not f.min <= value <= f.max:
        raise ValueError(f"{f.name} {value}: must be {f.min}..{f.max}")
    return value


def _text(f: Field, value: Any) -> str:
    text = str(value)
    if not text or re.search(r"[\s#]", text) or len(text.encode()) > f.max_bytes:
        raise ValueError(f"{f.name} {text!r}: must be one word of at most {f.max_bytes} bytes")
    return text


def _address(f: Field, value: Any) -> str:
    """ipv4 (an int or its text), prefix, cidr, mac, endpoint or collector
    (a.b.c.d:port, or (address, port))."""
    if f.type == "ipv4" and isinstance(value, int):
        return format_ipv4(value)
    if f.type in ("endpoint", "collector") and isinstance(value, tuple):
        address, port = value
        text = f"{format_ipv4(address) if isinstance(address, int) else address}:{port}"
    else:
        text = str(value)
    return _checked(f, text)


def _value(f: Field, value: Any) -> str:
    """The value as swpath's parser reads it (cmd_parse.c) and writes it
    back (cmd_format.c)."""
    if f.type == "uint":
        return str(_uint(f, value))
    if f.type in ("bool", "switch"):
        if not isinstance(value, bool):
            raise ValueError(f"{f.name} {value!r}: not true or false")
        yes, no = ("true", "false") if f.type == "bool" else ("on", "off")
        return yes if value else no
    if f.type == "enum":
        if str(value) not in f.words:
            raise ValueError(f"{f.name} {value}: must be one of {', '.join(f.words)}")
        return str(value)
    if f.type in ("name", "path"):
        return _text(f, value)
    if f.type == "port_range":
        low, high = value
        if not 1 <= low <= high <= 65535:
            raise ValueError(f"{f.name} {low}-{high}: must be LOW-HIGH within 1-65535")
        return f"{low}-{high}"
    if f.type == "prefixes":
        items = [_checked(Field(f.key, f.name, "prefix"), str(p)) for p in value]
        if not items:
            raise ValueError(f"{f.name}: none")
        return " ".join(items)
    text = _address(f, value)
    if f.type == "collector":
        _text(f, text)
    return text


def _given(f: Field, value: Any) -> bool:
    """Whether a value is written: not None, and for a value whose absence
    the parser knows by a value (mtu 0, no file), not that one."""
    if value is None or (f.type == "flag" and value is False):
        return False
    return not (f.presence == "unless" and value == f.default)


def _render_args(verb: str, specs: tuple[Field, ...], args: tuple[Any, ...]) -> list[str]:
    if len(args) > len(specs):
        raise ValueError(f"{verb}: {len(args)} arguments, it takes {len(specs)}")
    words = []
    for i, f in enumerate(specs):
        value = args[i] if i < len(args) else None
        if f.required and value is None:
            raise ValueError(f"{verb}: missing {f.name}")
        if _given(f, value):
            words.append(_value(f, value))
    return words


def _render_fields(verb: str, specs: tuple[Field, ...], fields: dict[str, Any]) -> list[str]:
    known = {f.key for f in specs}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise ValueError(f"{verb}: no keyword {unknown[0]!r} (it has {', '.join(map(str, known))})")
    words = []
    for f in specs:
        value = fields.get(f.key or "")
        if value is None and f.presence == "always" and f.default is not None:
            value = f.default  # what the parser takes when it is not given
        if f.required and value is None:
            raise ValueError(f"{verb}: missing {f.key}")
        if not _given(f, value):
            continue
        words.append(f.key or "")
        if f.type != "flag":
            words.append(_value(f, value))
    return words


def render(verb: str, *args: Any, **fields: Any) -> str:
    """`render("interface", "in0", zone=Zone.INSIDE, port=1)` ->
    "interface in0 zone inside port 1". A keyword given None is left out;
    one the parser defaults (a pool's ports) is written all the same, as
    swpath writes it back; a flag is written when True."""
    command = COMMANDS.get(verb)
    if command is None:
        raise ValueError(f"swpath has no command {verb!r}")
    leaders = [group[0] for group in command.one_of]
    if leaders and sum(fields.get(k) is not None for k in leaders) != 1:
        raise ValueError(f"{verb}: needs exactly one of {' or '.join(leaders)}")
    words = list(command.words)
    words += _render_args(verb, command.args, args)
    words += _render_fields(verb, command.fields, fields)
    return " ".join(words)
