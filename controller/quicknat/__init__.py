"""QuickNAT: a NAT for programmable networks (P4 offload, P4Runtime controller, DPDK path)."""

# The one version string: the package's (pyproject.toml reads it), the CLI's
# and quicknat-swpath's (swpath/src/Makefile reads it) are this one.
__version__ = "0.1.0"
