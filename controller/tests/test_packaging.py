"""A plain (not editable) install carries the P4 program: the wheel holds
p4src/build/'s artifacts as package data and the controller loads them from
there, with no source tree around."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_carries_the_p4_program_and_loads_it(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path),
            "./controller",
        ],
        cwd=ROOT,
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("quicknat-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in ("quicknat.json", "quicknat.p4info.txtpb"):
            assert z.read(f"quicknat/p4/{name}") == (ROOT / "p4src" / "build" / name).read_bytes()
        assert any(n.endswith("licenses/LICENSE") for n in z.namelist())
        z.extractall(tmp_path / "site")
    probe = (
        "import quicknat; from quicknat.controller.program import Pipeline, P4INFO; "
        "Pipeline.load(); print(quicknat.__file__); print(P4INFO)"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    module, p4info = out.stdout.split()
    assert module.startswith(str(tmp_path / "site")) and p4info.startswith(str(tmp_path / "site"))
