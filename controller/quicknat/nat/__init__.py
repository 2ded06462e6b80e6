"""NAT logic with no I/O: rule lookup (QNS), and later the allocator and sessions."""
