"""Configuration behaviour beyond the golden files: files on disk, the CLI, the
README's example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from quicknat.cli import main
from quicknat.config import ConfigError, load_config, parse_config
from quicknat.config.model import Filtering, Zone
from quicknat.rules import DnatTo, SnatToPool

GOLDEN = Path(__file__).parent / "golden"


def readme_example(root: Path) -> str:
    text = (root / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    assert blocks, "README.md has no ```toml example"
    return str(blocks[0])


def test_readme_example_config_is_valid(repo_root: Path) -> None:
    config = parse_config(readme_example(repo_root), "README.md")
    assert config.rules and config.pools
    assert {i.zone for i in config.interfaces} == {Zone.INSIDE, Zone.OUTSIDE}


def test_defaults_follow_nat_behavior_doc() -> None:
    config = load_config(GOLDEN / "good" / "minimal.toml")
    assert (config.timeouts.udp, config.timeouts.tcp_established) == (300, 7440)
    assert (config.timeouts.tcp_transitory, config.timeouts.icmp) == (240, 60)
    assert config.filtering.udp is Filtering.ADDRESS_DEPENDENT
    # one host holds at most 1/16 of a 65,536-session table (RFC 6888 REQ-4/5)
    assert (config.limits.ports_per_host, config.limits.sessions_per_host) == (4096, 4096)
    assert config.pools[0].port_min == 1024 and config.pools[0].address_count == 8
    assert config.rules[0].target == SnatToPool("public")


def test_full_config_targets() -> None:
    config = load_config(GOLDEN / "good" / "full.toml")
    forward = next(r for r in config.rules if r.port == 443)
    assert isinstance(forward.target, DnatTo) and forward.target.port == 8443
    assert [r.id for r in config.rules] == [1, 2, 100, 4, 5, 6]
    assert len(config.warnings) == 2


def test_pool_policy_defaults_and_a_well_known_only_range_warns() -> None:
    text = (GOLDEN / "good" / "minimal.toml").read_text()
    config = parse_config(text)
    assert (config.pools[0].preserve_parity, config.pools[0].preserve_port) == (True, False)
    config = parse_config(text.replace('ports = "1024-65535"', 'ports = "1-1023"'), "low.toml")
    assert config.pools[0].port_max == 1023
    assert config.warnings == (
        "low.toml:21: pool 1: ports 1-1023: all below 1024, so only internal ports below 1024 "
        "can be translated with this pool (RFC 4787 REQ-3)",
    )


def test_missing_file_is_one_clear_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "nope.toml")
    assert info.value.messages == [
        f"{tmp_path / 'nope.toml'}: cannot read: No such file or directory"
    ]


def test_cli_check_reports_errors_without_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text((GOLDEN / "bad" / "rule_prefix_length.toml").read_text())
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err == f"{bad}:55: rule 7: prefix 10.0.0.0/33: prefix length must be 0..32\n"


def test_cli_check_and_lookup(capsys: pytest.CaptureFixture[str]) -> None:
    good = str(GOLDEN / "good" / "full.toml")
    assert main(["check", good]) == 0
    assert "ok: 6 rules (3 snat, 3 dnat)" in capsys.readouterr().out
    args = ["lookup", good, "--protocol", "udp", "--src", "10.0.0.7", "--sport", "3074"]
    assert main([*args, "--dst", "192.0.2.1", "--dport", "3074"]) == 0
    assert capsys.readouterr().out == "rule 2: snat 10.0.0.0/24 port 3074 protocol udp\n"
    assert main([*args, "--dst", "192.0.2.1", "--dport", "53"]) == 0
    assert capsys.readouterr().out.startswith("rule 6: dnat 0.0.0.0/0 port 53")
    assert main(["lookup", good, "--src", "192.0.2.9", "--dst", "192.0.2.1"]) == 1


def test_a_pool_too_small_for_its_rules_is_a_warning() -> None:
    """A one-address pool of one port with parity kept, for a /23: accepted
    (it is legal), but said (MAP-1: one port per internal endpoint; MAP-5)."""
    text = (GOLDEN / "good" / "minimal.toml").read_text()
    config = parse_config(text, "minimal.toml")
    assert not [w for w in config.warnings if "pool" in w]
    small = text.replace(
        '["203.0.113.0/29"]\nports = "1024-65535"', '["203.0.113.9"]\nports = "5000-5000"'
    )
    small = small.replace('prefix = "10.0.0.0/24"', 'prefix = "10.0.0.0/23"')
    assert small != text
    warnings = parse_config(small, "small.toml").warnings
    assert any("one port (5000) with preserve_parity: flows from odd" in w for w in warnings)
    assert any("1 external port for the 512 internal addresses" in w for w in warnings)


def test_cli_check_prints_warnings_beside_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = GOLDEN / "bad" / "every_section.toml"
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 14
    assert err[-1] == f"warning: {bad}:39: timeouts: udp 10: below the RFC minimum of 120 s"
