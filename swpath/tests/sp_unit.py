#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""quicknat-swpath as its systemd unit runs it (swpath/systemd/), on sp_live's
set-up (two veth pairs, af_packet):

- a second swpath on a live control socket refuses to start and says why;
  the first keeps answering on it;
- a stale socket file (its process gone) is taken over;
- the unit's ExecStartPre, ExecStart and ExecReload lines, with the unit's
  paths moved into a temporary directory, run under its capability bounding
  set and no_new_privs, every system call, socket family and mapping inside
  what the unit allows (controller/tests/unit_sandbox.py: PID 1 here is not
  systemd, so this is as close to the unit as a test gets); the reload
  applies the edited configuration through `quicknat reload`
  (runtime_commands) and SIGHUP reopens the event log.

Run as root: sp_unit.py --app PATH/quicknat-swpath. Ends with
"N passed, M failed" (skipped without root, veth support or the tools).
"""

from __future__ import annotations

import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from live_frame import Tally, live_main, parse_args, run_each
from quicknat.controller.status import line_command, query
from sp_live import IN, MAC_GW, MAC_IN, MAC_OUT, OUT, ROOT, Nat, eq, make_links, remove_links

sys.path.insert(0, str(ROOT / "controller" / "tests"))
from unit_sandbox import Unit, missing_tool, stop

QUICKNAT = ROOT / ".venv" / "bin" / "quicknat"
CMDS = (
    f"interface in0 zone inside port 0 address 10.0.0.1/24 mac {MAC_IN}\n"
    f"interface out0 zone outside port 1 address 198.51.100.1/24 mac {MAC_OUT}\n"
    "pool public ports 1024-65535 addresses 203.0.113.0/29\n"
    "rule add id 1 type snat prefix 10.0.0.0/24 protocol any pool public\n"
)
HOST_MAC = "02:00:00:00:10:09"
HOST_NEIGHBOR = f"""
[[neighbor]]
address = "10.0.0.9"
mac = "{HOST_MAC}"
interface = "in0"
"""
NEW_GW_MAC = "02:00:00:00:00:fd"
OTHER_RULE = """
[[rule]]
id = 60
type = "snat"
prefix = "10.0.1.0/24"
pool = "public"
"""

ROUTE = """
[[route]]
prefix = "192.0.2.0/24"
via = "198.51.100.254"
interface = "out0"
"""

DNAT_RULE = """
[[rule]]
id = 50
type = "dnat"
prefix = "203.0.113.50"
port = 80
protocol = "tcp"
to = "10.0.0.10"
to_port = 8080
"""


def lab_toml(events: Path) -> str:
    """sp_live's NAT as the one configuration file the unit reads."""
    return f"""
[[interface]]
name = "in0"
zone = "inside"
port = 0
address = "10.0.0.1/24"
mac = "{MAC_IN}"

[[interface]]
name = "out0"
zone = "outside"
port = 1
address = "198.51.100.1/24"
mac = "{MAC_OUT}"

[[route]]
prefix = "0.0.0.0/0"
via = "198.51.100.254"
interface = "out0"

[[neighbor]]
address = "198.51.100.254"
mac = "{MAC_GW}"
interface = "out0"

[[pool]]
name = "public"
addresses = ["203.0.113.0/29"]

[[rule]]
id = 1
type = "snat"
prefix = "10.0.0.0/24"
pool = "public"

[logging]
events = "file"
file = "{events}"
"""


def case_live_socket_refused(app: str, tmp: Path) -> None:
    first = Nat(app, tmp, CMDS)
    try:
        argv = first.argv_beside("second")
        second = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert second.returncode != 0, second.stderr
        want = f"control socket {first.sock} is in use (another quicknat-swpath?)"
        assert want in second.stderr, second.stderr
        eq(first.proc.poll(), None, "the first one still runs")
        eq(first.stats()["sessions"], 0, "the first one still answers")
    finally:
        first.stop()
        shutil.rmtree(f"/var/run/dpdk/{first.prefix}-second", ignore_errors=True)


def case_stale_socket_taken_over(app: str, tmp: Path) -> None:
    stale = tmp / "swpath.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(stale))  # the file of a process that is gone
    nat = Nat(app, tmp, CMDS)  # waits until the socket answers
    try:
        eq(nat.stats()["sessions"], 0)
    finally:
        nat.stop()


def case_file_that_is_no_socket_kept(app: str, tmp: Path) -> None:
    """Not ours to remove: a typo in --control must not delete a file."""
    path = tmp / "swpath.sock"
    path.write_text("precious")
    try:
        Nat(app, tmp, CMDS)
    except RuntimeError as exc:
        assert f"control socket {path} exists and is not a socket" in str(exc), exc
    else:
        raise AssertionError("started on a path that is no socket")
    eq(path.read_text(), "precious", "the file")


def case_unit_sandboxed_and_reloaded(app: str, tmp: Path) -> None:
    if missing_tool():
        raise AssertionError(f"{missing_tool()} is not installed")
    (tmp / "etc").mkdir()
    config, events = tmp / "etc" / "lab.toml", tmp / "events.log"
    config.write_text(lab_toml(events) + HOST_NEIGHBOR)
    unit = Unit(
        ROOT / "swpath" / "systemd" / "quicknat-swpath@.service.in",
        "lab",
        {
            "@PREFIX@/bin/quicknat-swpath": app,
            "@PREFIX@/bin/quicknat": str(QUICKNAT),
            "/run/quicknat/": f"{tmp}/",
            "/etc/quicknat/": f"{tmp}/etc/",
        },
    )
    (pre,) = unit.values("ExecStartPre")
    subprocess.run(shlex.split(pre), check=True)  # the TOML compiled to swpath's commands
    eal = f"--vdev net_af_packet0,iface={IN} --vdev net_af_packet1,iface={OUT} "
    env = {"SWPATH_EAL": eal + "--no-shconf --no-huge -m 512 --no-pci", "SWPATH_ARGS": ""}
    proc = unit.start(unit.command("ExecStart", env), tmp / "swpath.trace")
    sock = tmp / "swpath-lab.sock"
    try:
        wait_answer(sock, proc)
        eq(len(line_command(sock, "rules")), 1, "rules at start")
        eq(configured(sock), {("198.51.100.254", MAC_GW), ("10.0.0.9", HOST_MAC)}, "at start")
        # a rule added, the gateway's MAC changed, the host's entry
        # removed, a route added
        config.write_text(lab_toml(events).replace(MAC_GW, NEW_GW_MAC) + DNAT_RULE + ROUTE)
        events.rename(tmp / "events.log.1")  # logrotate moved it
        reload_, hup = unit.values("ExecReload")
        done = subprocess.run(
            unit.wrap(reload_.split(), tmp / "reload.trace"), capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "2 neighbor commands, 1 route commands" in done.stdout, done.stdout
        eq(configured(sock), {("198.51.100.254", NEW_GW_MAC)}, "neighbours after the reload")
        routes = {(r["prefix"], r["via"]) for r in query(sock, "routes") if not r["connected"]}
        eq(routes, {("0.0.0.0/0", "198.51.100.254"), ("192.0.2.0/24", "198.51.100.254")})
        # a pool changed too: only a restart takes it, so nothing is applied
        edited = config.read_text()
        config.write_text(edited.replace("203.0.113.0/29", "203.0.113.8/29") + OTHER_RULE)
        refused = subprocess.run(reload_.split(), capture_output=True, text=True)
        eq(refused.returncode, 1, f"a reload that changes a pool: {refused.stdout}")
        assert "pools changed: that needs a restart" in refused.stderr, refused.stderr
        eq(len(line_command(sock, "rules")), 2, "rules after the refused reload")
        config.write_text(edited)
        daemon = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()[0]
        eq(bounding_set(daemon), set(unit.capabilities()), "capabilities it runs with")
        subprocess.run(hup.replace("$MAINPID", daemon).split(), check=True)
        rules = line_command(sock, "rules")
        assert any(line.startswith("rule add id 50 type dnat") for line in rules), rules
        deadline = time.monotonic() + 10
        while not events.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert events.exists(), "SIGHUP did not reopen the event log"
    finally:
        _, err = stop(proc)
        shutil.rmtree("/var/run/dpdk/quicknat-lab", ignore_errors=True)
    eq(proc.returncode, 0, f"exit status ({err[-500:]})")
    eq(unit.problems(tmp / "swpath.trace"), [], "the sandbox")
    assert "socket(AF_PACKET" in (tmp / "swpath.trace").read_text(), "the trace missed its ports"
    eq(unit.problems(tmp / "reload.trace"), [], "the reload's sandbox")


def configured(sock: Path) -> set[tuple[str, str]]:
    """The configured rows of swpath's `neighbors`: (address, MAC)."""
    rows = query(sock, "neighbors")
    assert isinstance(rows, list), rows
    return {(r["address"], r["mac"]) for r in rows if r["state"] == "configured"}


def bounding_set(pid: str) -> set[str]:
    """A process's capability bounding set, by name (capsh decodes the mask)."""
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("CapBnd:"))
    out = subprocess.run(
        ["capsh", f"--decode={mask}"], capture_output=True, text=True, check=True
    ).stdout
    return {cap.removeprefix("cap_") for cap in out.strip().split("=", 1)[1].split(",")}


def wait_answer(sock: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"quicknat-swpath exited: {proc.communicate()[1][-800:]}")
        try:
            query(sock, "stats", timeout=2)
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{sock} never answered")


CASES = [
    case_live_socket_refused,
    case_stale_socket_taken_over,
    case_file_that_is_no_socket_kept,
    case_unit_sandboxed_and_reloaded,
]


def main() -> int:
    args = parse_args(__doc__, cases=True)
    cases = [c for c in CASES if not args.cases or c.__name__ in args.cases]

    def body(tally: Tally) -> None:
        tally.add(run_each(cases, args.app, "sp-unit-"))

    return live_main("sp_unit", make_links, remove_links, body, n_cases=len(cases))


if __name__ == "__main__":
    sys.exit(main())
