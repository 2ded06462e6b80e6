"""Offload mode (docs/offload.md): the P4 switch caches the sessions that
slow-path instances (swpath) open. ``stream`` reads an instance's session
events; offload mode (controller/modes/offload_mode.py) acts on them."""
