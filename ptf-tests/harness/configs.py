"""Configuration variants: configs/ptf.toml with a scenario's own settings on top.

Most scenarios run on the shared configuration. A few need a setting that
would change what the others see (a filtering mode, per-host limits, event
logging); they declare only those settings, and the harness writes the merged
file next to the run's logs. Tables merge key by key; an array of tables
(`[[pool]]`, `[[rule]]`, ...) in the overlay is appended to the base's.
The file is named by its content, so each variant is written (and, for
swpath, compiled) once per run.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import tomli_w


def merged(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(base)
    for key, value in overlay.items():
        old = result.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            result[key] = merged(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            result[key] = old + value
        else:
            result[key] = value
    return result


def variant(base: Path, overlay: Mapping[str, Any], workdir: Path) -> Path:
    """The configuration file for a scenario: `base` itself without overlay."""
    if not overlay:
        return base
    text = tomli_w.dumps(merged(tomllib.loads(base.read_text()), overlay))
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    path = workdir / f"{base.stem}-{digest}.toml"
    if not path.exists():
        path.write_text(f"# {base.name} with {dict(overlay)!r}\n{text}")
    return path
