"""The P4Runtime controller service: the NAT core driving the P4 data plane."""
