"""Offload mode (docs/offload.md): the P4 switch caches the sessions that
slow-path instances (swpath) open. ``stream`` reads an instance's session
events; the controller's offload manager (controller/offload.py) acts on them."""
