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

import os
import subprocess

SPIN = ["sh", "-c", "while :; do :; done"]


def steal_ms() -> float:
    """CPU time the hypervisor took from this VM's CPUs since boot, in ms (/proc/stat's steal column,
    summed over the CPUs; 0 on bare metal)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


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
