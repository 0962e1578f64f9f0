"""Keep the CPUs out of idle while the lab measures.

On a virtual machine an idle vCPU halts and the host wakes it late: measured
here, the delay line was up to 4.6 ms late on an idle machine and under
0.1 ms with this on (and under 0.4 ms while a compiler kept the CPUs busy).
Like disabling deep C-states on a testbed, one spinner per CPU at
``SCHED_IDLE`` keeps each CPU running; ``SCHED_IDLE`` means any other task
preempts it at once, so it takes no CPU time from the experiment.

What no program in the VM can prevent is the host taking a CPU away (steal
time): ``steal_ms`` reads how much it took, so that a run can say so.
"""

from __future__ import annotations

import bisect
import os
import subprocess
import threading
import time

SPIN = ["sh", "-c", "while :; do :; done"]


def steal_ms() -> float:
    """CPU time the hypervisor took from this VM's CPUs since boot, in ms (/proc/stat's steal column,
    summed over the CPUs; 0 on bare metal)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


class StealLog:
    """Samples ``steal_ms`` every ``period_s`` in a thread, so a measurement can tell which of its stretches the
    host stalled: ``between(t0, t1)`` is the steal over [t0, t1] (wall-clock ns, as tcpdump stamps), counted
    from the last sample at or before t0 to the first at or after t1, so it never misses steal in the stretch.
    /proc/stat counts in clock ticks (10 ms), so a stretch with a few ms of steal may read 0."""

    def __init__(self, period_s: float = 0.02) -> None:
        self.period_s = period_s
        self.times: list[int] = []
        self.steal: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def record(self, t_ns: int, steal: float) -> None:
        self.times.append(t_ns)
        self.steal.append(steal)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.record(time.time_ns(), steal_ms())
            self._stop.wait(self.period_s)

    def between(self, t0_ns: int, t1_ns: int) -> float | None:
        """Steal in ms over [t0, t1]; None when the samples do not bracket it."""
        i = bisect.bisect_right(self.times, t0_ns) - 1
        j = bisect.bisect_left(self.times, t1_ns)
        if i < 0 or j >= len(self.times):
            return None
        return self.steal[j] - self.steal[i]

    def __enter__(self) -> "StealLog":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.record(time.time_ns(), steal_ms())


class KeepAwake:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def start(self, registry=None) -> "KeepAwake":
        for cpu in sorted(os.sched_getaffinity(0)):
            argv = ["chrt", "-i", "0", "taskset", "-c", str(cpu), *SPIN]
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.procs.append(p)
            if registry is not None:
                registry.process(p.pid, SPIN)
        return self

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs.clear()

    def __enter__(self) -> "KeepAwake":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
