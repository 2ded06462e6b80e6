"""QuickNAT: a NAT for programmable networks (P4 offload, P4Runtime controller, DPDK path)."""

__version__ = "0.1.0"
