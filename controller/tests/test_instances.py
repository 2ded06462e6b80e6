"""Several slow-path instances behind one switch (config/instances.py): who
owns an outside packet, which inside hosts are pinned, each instance's
`peer` lines; the switch's entries follow the same functions
(test_offload_manager.py)."""

from __future__ import annotations

import configs
import pytest
from quicknat.addr import Prefix, parse_ipv4
from quicknat.config import parse_config
from quicknat.config.commands import slow_path_commands
from quicknat.config.instances import ipfix_identity, owner, peer_commands, pins
from quicknat.config.parse import ConfigError

BASE = configs.text("switch", "snat_pool", "slow_path", "slow_path_second")

# a DNAT server on a pool port of sp1's block, one on a DNAT address of its
# own (the first instance's), and a host whose SNAT has one fixed address
RULES = """
[[rule]]
type = "dnat"
prefix = "203.0.113.1"
port = 40000
protocol = "tcp"
to = "10.0.0.5"

[[rule]]
type = "dnat"
prefix = "203.0.113.80"
port = 80
protocol = "tcp"
to = "10.0.0.6"

[[rule]]
type = "snat"
prefix = "10.0.0.7/32"
to = "203.0.113.7"
"""


def test_outside_packets_go_by_block_and_the_rest_to_the_first() -> None:
    config = parse_config(BASE)
    pool = parse_ipv4("203.0.113.2")
    assert owner(config, pool, 1024) == 0
    assert owner(config, pool, 32767) == 0
    assert owner(config, pool, 32768) == 1
    assert owner(config, pool, 65535) == 1
    assert owner(config, pool, 80) == 0  # a pool port in no block
    assert owner(config, pool, None) == 0  # an ICMP error
    assert owner(config, parse_ipv4("203.0.113.80"), 40000) == 0  # not a pool's


def test_rule_hosts_are_pinned_where_their_outside_packets_go() -> None:
    config = parse_config(BASE + RULES)
    assert pins(config) == [
        (Prefix.parse("10.0.0.5/32"), 1),
        (Prefix.parse("10.0.0.6/32"), 0),
        (Prefix.parse("10.0.0.7/32"), 0),
    ]
    # one instance: nothing to pin, no peers
    single = parse_config(configs.text("switch", "snat_pool", "slow_path") + RULES)
    assert pins(single) == [] and peer_commands(single, "sp0") == []


def test_overlapping_hosts_on_two_instances_are_refused() -> None:
    conflict = RULES + '\n[[rule]]\ntype = "snat"\nprefix = "10.0.0.0/29"\nto = "203.0.113.8"\n'
    with pytest.raises(ConfigError) as err:
        parse_config(BASE + conflict)
    assert "puts 10.0.0.0/29 on slow_path sp0 but rule" in str(err.value)
    assert "10.0.0.5/32 on slow_path sp1" in str(err.value)


def test_each_instance_is_told_every_peer_and_itself() -> None:
    config = parse_config(BASE + RULES)
    assert peer_commands(config, "sp1") == [
        "peer vid 16 ports 1024-32767 default",
        "peer vid 18 ports 32768-65535 self",
    ]
    lines = slow_path_commands(config, "sp0")
    assert lines[-2:] == [
        "peer vid 16 ports 1024-32767 self default",
        "peer vid 18 ports 32768-65535",
    ]
    assert "pool public ports 1024-32767 preserve_parity true preserve_port false" in " ".join(
        lines
    )


def test_the_default_instance_takes_what_no_block_names() -> None:
    marked = BASE.replace('ports = "32768-65535"\n', 'ports = "32768-65535"\ndefault = true\n')
    config = parse_config(marked + RULES)
    pool = parse_ipv4("203.0.113.2")
    assert (owner(config, pool, 1024), owner(config, pool, 80), owner(config, pool, None)) == (
        0,
        1,
        1,
    )
    assert pins(config) == [
        (Prefix.parse("10.0.0.5/32"), 1),
        (Prefix.parse("10.0.0.6/32"), 1),
        (Prefix.parse("10.0.0.7/32"), 1),
    ]
    assert peer_commands(config, "sp0")[1] == "peer vid 18 ports 32768-65535 default"
    twice = marked.replace('ports = "1024-32767"\n', 'ports = "1024-32767"\ndefault = true\n')
    with pytest.raises(ConfigError, match="another slow_path is the default already"):
        parse_config(twice)


def test_each_instance_exports_in_its_own_observation_domain() -> None:
    """ipfix_identity: [logging] ipfix_domain for the file's NAT
    (natInstanceID 0), the next ones for the instances in order unless they
    name their own; a domain two exporters share is an error."""
    config = parse_config(BASE + "[logging]\nipfix_domain = 10\n")
    assert [ipfix_identity(config, n) for n in (None, "sp0", "sp1")] == [
        (10, 0),
        (11, 1),
        (12, 2),
    ]
    assert slow_path_commands(config, "sp1")[-4].endswith("ipfix_domain 12 nat_instance 2")
    own = BASE.replace('name = "sp1"', 'name = "sp1"\nipfix_domain = 500')
    assert ipfix_identity(parse_config(own), "sp1") == (500, 2)
    clash = BASE.replace('name = "sp1"', 'name = "sp1"\nipfix_domain = 2')
    line = clash.splitlines().index("ipfix_domain = 2") + 1
    # reported with its line and beside the file's other errors (all at once)
    with pytest.raises(ConfigError) as caught:
        parse_config(clash + '[logging]\nevents = "loud"\n')
    assert f"<config>:{line}: slow_path 2: ipfix_domain 2 is slow_path sp0's already" in str(
        caught.value
    )
    assert len(caught.value.messages) == 2, caught.value.messages
    # the golden file bad/logging_ipfix_domains.toml has [logging]'s clash
    with pytest.raises(ConfigError, match=r"slow_path 2: ipfix_domain: .* is past 4294967295"):
        parse_config(
            BASE.replace('name = "sp0"', 'name = "sp0"\nipfix_domain = 7')
            + "[logging]\nipfix_domain = 4294967294\n"
        )
    with pytest.raises(ConfigError, match=r"logging: ipfix_domain 0: must be 1\.\.4294967295"):
        parse_config(BASE + "[logging]\nipfix_domain = 0\n")
