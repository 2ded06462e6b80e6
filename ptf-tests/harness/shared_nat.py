"""One NAT for the scenarios of a PTF run, started again only where it must
be (issue #33: a start is a controller and a pipeline push, in offload mode
a swpath instance's EAL too, 0.4 to 1.1 s a scenario).

A scenario gets the NAT the scenario before it ran on when their NATs are
the same one (Target.share_key: target, configuration, table size) and that
one is fit to share: cleared (Target.clear: the real `sessions flush`, until
the data path and the switch hold none) and its counters read from here on
as deltas (Target.start_counting). It is not fit, and the scenario's own
starts afresh, when the scenario says it needs a fresh one (FRESH_NAT in
base.py: it restarts processes, or asserts what a fresh allocator gives), or
the one before failed, changed the NAT beyond a flush (Target.leftover: a
process stopped, rules changed, fragments held, the ICMP errors' bucket drawn
on).

PTF runs every scenario in one process: this module's NAT is that
process's, stopped when it exits. Each decision is a line of the run's
NAT_LOG ("test<TAB>shared" or "test<TAB>fresh: why"), which run.py sums up.
"""

from __future__ import annotations

import atexit
from pathlib import Path

from harness.targets import Target

NAT_LOG = "nat-starts.tsv"


class SharedNat:
    """The running NAT of a PTF process, and whether it may serve the next
    scenario."""

    def __init__(self) -> None:
        self.running: Target | None = None
        # why the running NAT cannot serve another scenario (None: it can)
        self.unfit: str | None = "none started yet"
        atexit.register(self.stop)

    def acquire(self, test_id: str, wanted: Target, fresh: str | None) -> Target:
        """The scenario's NAT: the running one, cleared, if it is `wanted`'s
        and fit to share and the scenario does not need a `fresh` one (why,
        or None); else `wanted`, started afresh."""
        why = fresh or self._why_not_shared(wanted)
        if why is None:
            running = self.running
            assert running is not None
            try:
                running.clear()
                running.start_counting()
            except Exception as exc:  # a NAT that will not clear: a fresh one
                why = f"clear failed: {exc}"
            else:
                self._log(wanted.workdir, test_id, "shared")
                return running
        self.stop()
        self._log(wanted.workdir, test_id, f"fresh: {why}")
        try:
            wanted.start_nat(reset=True)
        except BaseException:
            wanted.stop_nat()  # what did start
            raise
        self.running, self.unfit = wanted, None
        return wanted

    def release(self, failed: bool) -> None:
        """The scenario on the running NAT is over (failed: its result says
        so); whether the next may share the NAT is decided now, while its
        counters are the scenario's."""
        if self.running is None or self.unfit is not None:
            return
        if failed:
            self.unfit = "the scenario before failed"
            return
        try:
            self.unfit = self.running.leftover()
        except Exception as exc:  # a NAT that does not answer: the next starts its own
            self.unfit = f"unreadable after the scenario: {exc}"

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop_nat()
        self.running, self.unfit = None, "stopped"

    def _why_not_shared(self, wanted: Target) -> str | None:
        running = self.running
        if running is None or self.unfit is not None:
            return self.unfit
        if running.share_key() != wanted.share_key():
            return "another configuration"
        return None

    @staticmethod
    def _log(workdir: Path, test_id: str, decision: str) -> None:
        with (workdir / NAT_LOG).open("a") as log:
            log.write(f"{test_id}\t{decision}\n")


# The one NAT of this PTF process.
NAT = SharedNat()
