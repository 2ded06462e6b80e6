"""The systemd units (controller/systemd/, swpath/systemd/) as systemd reads
them: `systemd-analyze verify`, with the commands pointed at this tree's
programs (the units name /usr/local/bin, where `make install` puts them)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKNAT = ROOT / ".venv" / "bin" / "quicknat"
SWPATH = ROOT / "swpath" / "build" / "app" / "quicknat-swpath"
UNITS = [
    ROOT / "controller" / "systemd" / "quicknat-controller@.service",
    ROOT / "swpath" / "systemd" / "quicknat-swpath@.service",
]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_unit_verifies(unit: Path, tmp_path: Path) -> None:
    if "swpath" in unit.name and not SWPATH.exists():
        pytest.skip("quicknat-swpath is not built (make build)")
    text = unit.read_text()
    assert "Type=notify" in text and "%i.toml" in text
    text = text.replace("/usr/local/bin/quicknat-swpath", str(SWPATH))
    text = text.replace("/usr/local/bin/quicknat ", f"{QUICKNAT} ")
    instance = tmp_path / unit.name.replace("@", "@lab")
    instance.write_text(text)
    out = subprocess.run(
        ["systemd-analyze", "verify", str(instance)], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout + out.stderr == "", out.stdout + out.stderr
