"""The rules configuration: one TOML format for the P4 and the DPDK data paths."""

from quicknat.config.model import Config
from quicknat.config.parse import ConfigError, load_config, parse_config

__all__ = ["Config", "ConfigError", "load_config", "parse_config"]
