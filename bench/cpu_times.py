"""CPU time for the benchmarks: the machine's, one CPU's, one process's."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass
class CpuTimes:
    """/proc/stat's times of all CPUs or of one (`cpu`). The kernel sorts each
    tick by what the CPU was doing, so a softirq that runs at the end of a
    process's system call counts as softirq, not as that process's system time
    (its /proc/PID/stat times count both)."""

    busy: float  # seconds, not idle or iowait
    softirq: float
    task: float = 0.0  # user, nice and system: processes' own time

    @classmethod
    def now(cls, cpu: int | None = None) -> CpuTimes:
        return cls.parse(Path("/proc/stat").read_text(), cpu)

    @classmethod
    def parse(cls, stat: str, cpu: int | None = None) -> CpuTimes:
        """From a copy of /proc/stat (one taken by a process elsewhere)."""
        name = "cpu" if cpu is None else f"cpu{cpu}"
        line = next(x for x in stat.splitlines() if x.split()[0] == name)
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, line.split()[1:9])
        tick = os.sysconf("SC_CLK_TCK")
        busy = user + nice + system + irq + softirq + steal
        return cls(busy / tick, softirq / tick, (user + nice + system) / tick)

    def __sub__(self, other: CpuTimes) -> CpuTimes:
        return CpuTimes(
            self.busy - other.busy, self.softirq - other.softirq, self.task - other.task
        )


def cpu_seconds(stat: Path) -> float:
    """User + system CPU time so far of a process or thread (fields 14, 15 of
    its /proc stat file; a process's count its threads)."""
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system seconds of a process and its threads."""
    return cpu_seconds(Path(f"/proc/{pid}/stat"))


def thread_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU time so far of each thread of a process, by thread id."""
    times = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            times[int(task.name)] = cpu_seconds(task / "stat")
    return times
