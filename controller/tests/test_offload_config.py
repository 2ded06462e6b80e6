"""[[slow_path]] (offload mode): what the parser accepts and refuses, and the
swpath commands of an instance (quicknat swpath-commands --slow-path)."""

from __future__ import annotations

import pytest
from quicknat.config import ConfigError, parse_config
from quicknat.config.commands import slow_path_commands
from test_offload_manager import OFFLOAD_CONFIG


def slow_path(name: str, port: int, ports: str) -> str:
    return (
        f'[[slow_path]]\nname = "{name}"\nport = {port}\n'
        f'control = "/run/{name}.sock"\nports = "{ports}"\n'
    )


def test_instances_are_parsed() -> None:
    config = parse_config(OFFLOAD_CONFIG + slow_path("sp1", 10, "32768-65535"))
    assert [(s.name, s.port, s.control, s.port_min, s.port_max) for s in config.slow_paths] == [
        ("sp0", 9, "/run/sp0.sock", 1024, 32767),
        ("sp1", 10, "/run/sp1.sock", 32768, 65535),
    ]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (slow_path("sp1", 10, "30000-40000"), "overlap slow_path sp0's 1024-32767"),
        (slow_path("sp1", 1, "40000-50000"), "port 1: already used by in0"),
        (slow_path("sp1", 9, "40000-50000"), "port 9: already used by slow_path sp0"),
        (slow_path("sp0", 10, "40000-50000"), "name sp0: already used by another slow_path"),
        ('[[slow_path]]\nname = "sp1"\nport = 10\n', "missing field 'control'"),
    ],
)
def test_bad_instances_are_refused(extra: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(OFFLOAD_CONFIG + extra)
    assert any(message in m for m in info.value.messages), info.value.messages


def test_an_instance_s_commands() -> None:
    config = parse_config(OFFLOAD_CONFIG + slow_path("sp1", 10, "32768-65535"))
    lines = slow_path_commands(config, "sp1")
    assert lines[1:3] == [
        "interface inside zone inside port 0 address 169.254.0.1/30 mac 02:00:00:00:fe:01 "
        "vlan 1 slow_path true",
        "interface outside zone outside port 0 address 169.254.0.5/30 mac 02:00:00:00:fe:02 "
        "vlan 2 slow_path true",
    ]
    # through the switch; its errors come from the switch's address facing the host
    assert "route 10.0.0.0/24 dev inside via 169.254.0.2 source 10.0.0.1" in lines
    assert "route 0.0.0.0/0 dev outside via 169.254.0.6 source 198.51.100.1" in lines
    # the pool cut to its block; rules as the switch's
    (pool,) = [line for line in lines if line.startswith("pool ")]
    assert pool.startswith("pool public ports 32768-65535 ")
    assert sum(line.startswith("rule add") for line in lines) == 2
    with pytest.raises(ValueError, match="no \\[\\[slow_path\\]\\] named 'sp9'"):
        slow_path_commands(config, "sp9")


def test_after_packets_reaches_the_instance() -> None:
    text = OFFLOAD_CONFIG + "\n[offload]\nafter_packets = 2\n"
    config = parse_config(text)
    assert config.offload.after_packets == 2
    assert slow_path_commands(config, "sp0")[-1] == "offload after_packets 2"
    assert slow_path_commands(parse_config(OFFLOAD_CONFIG), "sp0")[-1] == (
        "offload after_packets 1"
    )
    with pytest.raises(ConfigError, match="after_packets"):
        parse_config(OFFLOAD_CONFIG + "\n[offload]\nafter_packets = 0\n")


def test_an_instance_checks_the_switch_s_smallest_mtu_and_routed_networks() -> None:
    """The switch drops what is over its egress port's MTU without an error,
    so the instance checks it (and sends fragmentation needed); an inside
    network behind a router takes its errors from that interface's address."""
    extra = (
        '[[interface]]\nname = "in1"\nzone = "inside"\nport = 3\n'
        'address = "10.1.0.1/24"\nmtu = 1400\n\n'
        '[[route]]\nprefix = "172.16.0.0/16"\ninterface = "in1"\nvia = "10.1.0.254"\n'
    )
    lines = slow_path_commands(parse_config(OFFLOAD_CONFIG + extra), "sp0")
    assert " mtu 1400 vlan 1 " in lines[1]  # the smaller of in0 (1500) and in1
    assert " mtu " not in lines[2]  # out0: the default
    assert "route 172.16.0.0/16 dev inside via 169.254.0.2 source 10.1.0.1" in lines
    assert "route 10.1.0.0/24 dev inside via 169.254.0.2 source 10.1.0.1" in lines


def test_batch_window_defaults_to_10_ms_and_may_be_0() -> None:
    assert parse_config(OFFLOAD_CONFIG).offload.batch_window_ms == 25
    config = parse_config(OFFLOAD_CONFIG + "\n[offload]\nbatch_window_ms = 0\n")
    assert config.offload.batch_window_ms == 0
    with pytest.raises(ConfigError, match="batch_window_ms"):
        parse_config(OFFLOAD_CONFIG + "\n[offload]\nbatch_window_ms = 1001\n")
