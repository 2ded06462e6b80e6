"""A unit's daemon run inside as much of its sandbox as can be had without
systemd as PID 1 (here PID 1 is not systemd, so `systemd-run --property=...`
cannot start it): the capability bounding set and no_new_privs through
setpriv(1), and what it does checked by strace(1) against the directives that
would otherwise kill or refuse it: SystemCallFilter= (a call outside the list
fails with EPERM), RestrictAddressFamilies= (socket() fails) and
MemoryDenyWriteExecute= (a writable and executable mapping fails).

Used by test_unit_sandbox.py (the controller and the exporter) and by
swpath/tests/sp_restart.py (quicknat-swpath on af_packet, under the lab lock).
What it cannot show: ProtectSystem=, PrivateTmp=, the device ACL and the other
namespaces, which need systemd to set them up.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("setpriv", "strace", "systemd-analyze", "capsh")


def missing_tool() -> str | None:
    """The first tool this needs that is not installed, or None."""
    return next((t for t in TOOLS if shutil.which(t) is None), None)


class Unit:
    """A unit template as `make install` writes it for instance `name`, with
    its paths moved: `paths` maps a prefix of the unit (e.g. "/run/quicknat/")
    to where the test has it."""

    def __init__(self, template: Path, name: str, paths: dict[str, str]) -> None:
        text = template.read_text().replace("%i", name)
        for old, new in paths.items():
            text = text.replace(old, new)
        self.text = text

    def values(self, key: str) -> list[str]:
        return [
            line.split("=", 1)[1] for line in self.text.splitlines() if line.startswith(f"{key}=")
        ]

    def command(self, key: str, env: dict[str, str]) -> list[str]:
        """The first `key` line (ExecStart, ExecReload) as argv, `$VAR`s from env."""
        words = []
        for word in self.values(key)[0].split():
            if word.startswith("$"):
                words += env.get(word[1:], "").split()
            else:
                words.append(word)
        return words

    def capabilities(self) -> list[str]:
        (line,) = self.values("CapabilityBoundingSet")
        return [cap.lower().removeprefix("cap_") for cap in line.split()]

    def wrap(self, argv: list[str], trace: Path) -> list[str]:
        """argv under the unit's bounding set and no_new_privs, traced."""
        bounding = ",".join(["-all", *(f"+{cap}" for cap in self.capabilities())])
        return [
            "setpriv",
            "--no-new-privs",
            f"--bounding-set={bounding}",
            "strace",
            "-f",
            "-qq",
            "-o",
            str(trace),
            "--",
            *argv,
        ]

    def start(self, argv: list[str], trace: Path) -> subprocess.Popen[str]:
        """argv started as wrap() runs it, its output kept for stop(). A
        sanitizer build (make -C swpath/src SANITIZE=1 test) runs without
        LeakSanitizer here: it stops the world by ptrace, which strace holds
        (the other suites check for leaks)."""
        asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0"]))
        return subprocess.Popen(
            self.wrap(argv, trace),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ASAN_OPTIONS": asan},
        )

    def allowed_syscalls(self) -> tuple[set[str], set[str]]:
        """SystemCallFilter=: (allowed, denied); @default is always allowed."""
        allowed, denied = expand("@default"), set()
        for line in self.values("SystemCallFilter"):
            names = line.removeprefix("~").split()
            target = denied if line.startswith("~") else allowed
            for name in names:
                target |= expand(name) if name.startswith("@") else {name}
        return allowed - denied, denied

    def problems(self, trace: Path) -> list[str]:
        """What the sandbox would have refused, from the strace output."""
        allowed, _ = self.allowed_syscalls()
        (families,) = self.values("RestrictAddressFamilies")
        text = trace.read_text()
        calls = set(re.findall(r"^\d+ +(?:<\.\.\. )?(\w+)\(", text, re.M))
        found = [f"system call {c} outside SystemCallFilter" for c in sorted(calls - allowed)]
        used = set(re.findall(r"\bsocket\((AF_\w+)", text))
        found += [
            f"socket({f}) outside RestrictAddressFamilies" for f in used - set(families.split())
        ]
        if self.values("MemoryDenyWriteExecute") == ["yes"]:
            wx = re.findall(r"(?:mmap|mprotect)\(.*PROT_WRITE\|PROT_EXEC.*", text)
            found += [f"writable and executable memory: {line[:100]}" for line in wx]
        return found


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> tuple[str, str]:
    """Signals the daemon that `proc` (setpriv, exec'd into strace) traces,
    as systemd signals the main process; its output once strace is done."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
    os.kill(int(children[0]), sig)
    return proc.communicate(timeout=30)


@functools.cache
def expand(group: str) -> set[str]:
    """A system call group as systemd 252 defines it, nested groups included."""
    out = subprocess.run(
        ["systemd-analyze", "syscall-filter", group],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    names: set[str] = set()
    for line in out.splitlines()[1:]:
        word = line.strip()
        if not word or word.startswith("#"):
            continue
        names |= expand(word) if word.startswith("@") else {word}
    return names
