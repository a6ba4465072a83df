"""procstat.py - what /proc says about a server's threads while it works.

A Sampler polls /proc/PID/status and /proc/PID/task/* in a background
thread: the thread count (max per phase), and, when asked, a wait-channel
census (what each task is blocked in) and the context switches of every task
over the phase.  Stdlib only.

The census reads /proc/PID/task/TID/wchan, as the Horse PR #553 evidence did;
a kernel that reports 0 there for a sleeping task falls back to the first
frame of /proc/PID/task/TID/stack (root), then to the syscall number in
/proc/PID/task/TID/syscall.  Which source answered is recorded.
"""
from __future__ import annotations

import os
import threading

# Wait channel -> category.  First match wins; a running task is "running".
CATEGORIES = (
    ("futex", ("futex",)),
    ("epoll_wait", ("ep_poll", "epoll")),
    ("select/poll", ("select", "do_sys_poll", "poll_schedule")),
    ("sleep", ("nanosleep",)),
    ("accept", ("accept",)),
    ("socket-read", ("sk_wait_data", "wait_woken", "tcp_recvmsg")),
)
# x86-64 syscall numbers for the last fallback.
SYSCALLS = {202: "futex", 232: "epoll_wait", 281: "epoll_pwait", 23: "select",
            270: "pselect6", 7: "poll", 271: "ppoll", 35: "nanosleep",
            230: "clock_nanosleep", 43: "accept", 288: "accept4", 0: "read",
            45: "recvfrom"}
CENSUS_KEYS = [c for c, _ in CATEGORIES] + ["running", "other"]


def _read(path: str) -> str | None:
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def status_fields(path: str) -> dict[str, str]:
    text = _read(path) or ""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def thread_count(pid: int) -> int | None:
    v = status_fields(f"/proc/{pid}/status").get("Threads")
    return int(v) if v and v.isdigit() else None


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of the whole process (every thread, live or gone)."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_channel(pid: int, tid: str) -> tuple[str, str]:
    """(name, source) of what the task waits in."""
    base = f"/proc/{pid}/task/{tid}"
    w = (_read(base + "/wchan") or "").strip()
    if w and w != "0":
        return w, "wchan"
    first = ((_read(base + "/stack") or "").splitlines() or [""])[0]
    if "]" in first:
        name = first.split("]", 1)[1].strip().split("+", 1)[0]
        if name:
            return name, "stack"
    sc = (_read(base + "/syscall") or "").split()
    if sc and sc[0].isdigit():
        return SYSCALLS.get(int(sc[0]), "syscall " + sc[0]), "syscall"
    return "?", "none"


def classify(state: str, channel: str) -> str:
    if state.startswith("R"):
        return "running"
    for cat, needles in CATEGORIES:
        if any(n in channel for n in needles):
            return cat
    return "other"


class Sampler:
    """Background /proc sampling of one process, one phase at a time."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = thread_count(pid) or 0
        self._thr: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def start(self, interval_s: float, census: bool = False) -> None:
        self._stop.clear()
        self.phase_max = thread_count(self.pid) or 0
        self.census = {k: 0 for k in CENSUS_KEYS}
        self.channels: dict[str, int] = {}
        self.sources: dict[str, int] = {}
        self.rounds = 0
        self.ctx_first: dict[str, tuple[int, int]] = {}
        self.ctx_last: dict[str, tuple[int, int]] = {}
        self._census = census
        if census:
            self._round(baseline=True)   # switch counts of the tasks there now
        self._thr = threading.Thread(target=self._run, args=(interval_s,),
                                     daemon=True)
        self._thr.start()

    def stop(self) -> dict:
        """Ends the phase (one last round first) and returns its figures."""
        self._stop.set()
        if self._thr:
            self._thr.join()
        self._round(counted=False)   # last switch counts, not a census sample
        vol = nonvol = 0
        for tid, (v1, n1) in self.ctx_last.items():
            v0, n0 = self.ctx_first.get(tid, (0, 0))
            vol += v1 - v0
            nonvol += n1 - n0
        out = {"threads_max": self.phase_max, "rounds": self.rounds}
        if self._census:
            out.update(census=self.census, channels=self.channels,
                       census_source=self.sources,
                       ctx_voluntary=vol, ctx_nonvoluntary=nonvol)
        return out

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            self._round()

    def _round(self, baseline: bool = False, counted: bool = True) -> None:
        n = thread_count(self.pid)
        if n is None:
            return
        with self._lock:
            self.phase_max = max(self.phase_max, n)
            self.peak = max(self.peak, n)
            if not self._census:
                return
            counted = counted and not baseline
            if counted:
                self.rounds += 1
            try:
                tids = os.listdir(f"/proc/{self.pid}/task")
            except OSError:
                return
            for tid in tids:
                self._task(tid, baseline, counted)

    def _task(self, tid: str, baseline: bool, counted: bool) -> None:
        st = status_fields(f"/proc/{self.pid}/task/{tid}/status")
        if not st:
            return   # exited between listdir and open
        try:
            ctx = (int(st["voluntary_ctxt_switches"]),
                   int(st["nonvoluntary_ctxt_switches"]))
        except (KeyError, ValueError):
            return
        # A task first seen after the baseline was created during the phase:
        # its counts started at 0.
        if tid not in self.ctx_first:
            self.ctx_first[tid] = ctx if baseline else (0, 0)
        self.ctx_last[tid] = ctx
        if not counted:
            return
        state = st.get("State", "?")
        chan, src = ("", "state") if state.startswith("R") else \
            wait_channel(self.pid, tid)
        cat = classify(state, chan)
        self.census[cat] += 1
        key = chan or "running"
        self.channels[key] = self.channels.get(key, 0) + 1
        self.sources[src] = self.sources.get(src, 0) + 1

    def sample_now(self) -> None:
        self._round(counted=False)
