"""The configurations the controller's tests (and bench-bmv2) run on, as
TOML pieces in this folder, one place for each: a test names the pieces it
needs, and `text` joins them (TOML's arrays of tables may come in any order).

- `switch`: the switch's two ports, in0 (port 1, inside) and out0 (port 2,
  outside), with the addresses, MACs, default route and neighbour the P4
  path needs; `zones`: the same two interfaces for the NAT core alone
- `snat_pool`: pool "public" 203.0.113.0/30 and SNAT rule 1 for 10.0.0.0/24;
  `snat_pool_ten_ports` (203.0.113.1:2000-2009) and `snat_pool_one_port`
  (203.0.113.1:2000) the same rule on a pool a test can exhaust;
  `snat_bench` 10.0.0.0/16 on a /24, for bench-bmv2's thousands of hosts
- `slow_path` (sp0: port 9, ports 1024-32767), `slow_path_second` (sp1:
  port 10, ports 32768-65535), `dnat_web` (203.0.113.9:80 to 10.0.0.5):
  offload mode's
"""

from __future__ import annotations

from pathlib import Path

from quicknat.config import parse_config
from quicknat.config.model import Config

HERE = Path(__file__).resolve().parent


def text(*pieces: str) -> str:
    """The pieces' TOML, joined in order."""
    return "\n".join((HERE / f"{piece}.toml").read_text() for piece in pieces)


def parsed(*pieces: str) -> Config:
    return parse_config(text(*pieces))
