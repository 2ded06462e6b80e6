"""PTF harness: the topology, the target processes, and the runner (run.py)."""
