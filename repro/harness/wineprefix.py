"""wineprefix.py - the Wine prefixes the kit runs Windows servers in.

`wineboot -i` takes 5-20 s, so it runs once per machine and Wine version,
into a template under build/ (`make wine-prefix`, or the first run that
needs it).  Every run then works in a copy of the template, made in well
under a second: the ~630 MB of DLLs in system32 are hard links (Wine maps
them read-only and rewrites them only when its version changes, and a new
version names a new template), everything else (the registry, the
markers, dosdevices' links) is a real copy.  The template itself never
runs a program.

Traced Windows runs need a Wine server of their own, started under the
trace (the accept() happens in it): `Pool` hands out private copies, one
run at a time each, so several traced runs go side by side.

    python3 repro/harness/wineprefix.py --template   make the template, print its path
"""
from __future__ import annotations

import atexit
import fcntl
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from typing import Callable
from pathlib import Path

TOP = Path(__file__).resolve().parents[2]
WINE_SERVER = TOP / "repro" / "fpc" / "wine-server.sh"
SHARED_ONLY = ("system32",)   # folders under drive_c/windows that are hard-linked
_template_lock = threading.Lock()
_stops: dict[str, Callable[[], None]] = {}   # prefix -> stop() of its shared_server


class WineError(Exception):
    pass


def wine_version() -> str:
    try:
        r = subprocess.run(["wine", "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WineError(f"wine --version: {e}") from e
    return r.stdout.strip() or "unknown"


def wine_env(prefix: str | Path, **more: str) -> dict[str, str]:
    """The environment Wine runs in for prefix.  Its temp folder is the
    prefix itself: Debian's Wine makes its server's folder there (mkdtemp
    wine-XXXXXX, named in the prefix's `wineserver` file), which then goes
    with the prefix; in /tmp, every prefix the kit removed left one.  The
    same rule as repro/fpc/wine-server.sh's: a process with another TMPDIR
    would not find the prefix's Wine server."""
    return dict(os.environ, WINEPREFIX=str(prefix), TMPDIR=str(prefix), **more)


def template() -> Path:
    """The initialised prefix for this Wine version (made once, then kept)."""
    name = re.sub(r"[^A-Za-z0-9.+-]+", "_", wine_version())
    path = TOP / "build" / "wine-prefix" / name
    with _template_lock:
        if (path / ".kit-template").exists():
            return path
        path.mkdir(parents=True, exist_ok=True)
        env = wine_env(path)
        # wine-server.sh takes the prefix's init lock: two makers wait for
        # one wineboot.  Then wait until the Wine server has saved the
        # registry and gone, so that the copies see it whole.
        r = subprocess.run([str(WINE_SERVER), "--init"], env=env, capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            raise WineError(f"wineboot in {path} failed (exit {r.returncode}): "
                            f"{r.stderr.strip()[-300:]}")
        subprocess.run(["wineserver", "-w"], env=env, capture_output=True, timeout=60)
        (path / ".kit-template").write_text(wine_version() + "\n")
    return path


def _shared(rel: Path) -> bool:
    parts = rel.parts
    return len(parts) > 3 and parts[:2] == ("drive_c", "windows") and parts[2] in SHARED_ONLY


def copy(dest: Path) -> Path:
    """A prefix at dest (created, or an empty folder) made from the template:
    not the kit's marks, nor the template's Wine server folder and its name
    (wine_env), so that the copy's Wine server makes a folder of its own."""
    src = template()

    def one(s: str, d: str) -> None:
        if _shared(Path(s).relative_to(src)):
            os.link(s, d)
        else:
            shutil.copy2(s, d)

    def skip(folder: str, names: list[str]) -> set[str]:
        top = Path(folder) == src
        return {n for n in names if n in (".kit-template", ".kit-lock", ".kit-init-lock")
                or top and (n == "wineserver" or n.startswith("wine-"))}

    shutil.copytree(src, dest, symlinks=True, copy_function=one, dirs_exist_ok=True,
                    ignore=skip)
    return dest


def temp_copy(prefix: str = "kit-wine.") -> Path:
    """A copy in a temp folder, removed when this process exits."""
    d = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, d, True)
    return copy(d)


def shared_server(prefix: Path) -> Path:
    """Start the prefix's Wine server ourselves, at our own priority, and
    keep it for this process's lifetime.  Otherwise the first program to
    start it decides its nice value (a niced B7 server would leave every
    Windows program in the prefix waiting on a starved Wine server), and
    the last to leave stops it (repro/fpc/wine-server.sh): our shared
    hold on the prefix's lock means no run is ever the last."""
    env = wine_env(prefix, WINEDEBUG="-all")
    hold = open(prefix / ".kit-lock", "w")
    fcntl.flock(hold, fcntl.LOCK_SH)
    try:
        # -p: persistent (it outlives its clients); no pipes, so that a
        # server that stays in the foreground blocks nothing.
        server = subprocess.Popen(["wineserver", "-p"], env=env, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
    except OSError as e:
        hold.close()
        raise WineError(f"wineserver -p in {prefix}: {e}") from e

    done = threading.Lock()

    def stop() -> None:
        if not done.acquire(blocking=False):
            return
        subprocess.run(["wineserver", "-k"], env=env, capture_output=True, timeout=30)
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        stray(prefix, kill=True)
        hold.close()
    _stops[str(prefix)] = stop
    atexit.register(stop)   # runs before temp_copy's removal (atexit is LIFO)
    return prefix


def stray(prefix: str | Path, kill: bool = False) -> list[int]:
    """The processes still running in prefix (WINEPREFIX in their
    environment names it), SIGKILLed with kill.  After `wineserver -k` a
    Windows program is gone with its server, except when the server had
    stopped answering it: after the matrix of /work/ci79 (641d49c), whose
    Horse win64 row hung 90 s before its readiness line, the shared
    prefix's services.exe, explorer.exe, two winedevice.exe, plugplay.exe,
    svchost.exe and rpcss.exe outlived their Wine server, each waiting on
    its reply pipe for good.  The prefix is a temp folder of this process,
    so whatever runs in it is ours."""
    want = f"WINEPREFIX={prefix}".encode()
    def ours(d: str) -> bool:
        return int(d) != os.getpid() and want in Path(f"/proc/{d}/environ").read_bytes().split(b"\0")
    found = [int(d) for d in _pids(ours)]
    for pid in found if kill else []:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return found


def _pids(test: Callable[[str], bool]) -> list[str]:
    """The processes for which test(pid) holds; one that is gone, or not
    ours to read, is none of them."""
    out = []
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            if test(d):
                out.append(d)
        except OSError:
            continue
    return out


def stop_server(prefix: str | Path) -> None:
    """End shared_server's Wine server of prefix now, with every Windows
    program still in it (once; exit would).  The Wine server keeps some
    accepted sockets after their program has gone (Wine 8.0: ~1 per
    Windows row of the matrix, in CLOSE_WAIT), and polls each of them
    without end (recv MSG_PEEK returning 0, ~26,000 a second): a run ends
    its server as soon as its Windows programs are done."""
    stop = _stops.pop(str(prefix), None)
    if stop:
        stop()


def server_state(prefix: str | Path) -> list[str]:
    """What the prefix's Wine server was doing, a line per server process
    (the log of a Windows program that hung waiting on it: c72's waited
    on a reply pipe, anon_pipe_read, with its one thread).  A Wine server
    works in its folder, <tmp>/wine-XXXXXX/server-<dev>-<inode of the
    prefix> (Debian's Wine), and so is found by its cwd: its state and
    kernel wait channel, the CPU it used over half a second (busy or
    blocked), its descriptors and how many are sockets."""
    try:
        st = os.stat(prefix)
    except OSError as e:
        return [f"no prefix to look at: {e}"]
    folder = f"/server-{st.st_dev:x}-{st.st_ino:x}"
    pids = _pids(lambda d: Path(f"/proc/{d}/comm").read_text().startswith("wineserver")
                 and os.readlink(f"/proc/{d}/cwd").endswith(folder))
    if not pids:
        return [f"no Wine server runs for {prefix}"]

    def stat(pid: str) -> list[str]:   # the fields after the command name
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    lines = []
    for pid in pids:
        try:
            before = stat(pid)
            time.sleep(0.5)   # an interval to measure over, not a wait for anything
            after = stat(pid)
            ticks = sum(int(after[i]) - int(before[i]) for i in (11, 12))   # utime, stime
            busy = 100 * ticks / os.sysconf("SC_CLK_TCK") / 0.5
            wchan = Path(f"/proc/{pid}/wchan").read_text().strip() or "-"
            fds = [os.readlink(f"/proc/{pid}/fd/{f}") for f in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            lines.append(f"{pid} wineserver: gone while read")
            continue
        socks = sum(f.startswith("socket:") for f in fds)
        lines.append(f"{pid} wineserver: {after[0]}:{wchan}, {busy:.0f} % of a core over 0.5 s, "
                     f"{len(fds)} descriptors, {socks} of them sockets")
    return lines


class Pool:
    """Up to n private prefixes, each lent to one run at a time."""

    def __init__(self, n: int):
        self.n, self.made = n, 0
        self.free: queue.Queue[Path] = queue.Queue()
        self.lock = threading.Lock()

    def take(self) -> Path:
        with self.lock:
            grow = self.free.empty() and self.made < self.n
            if grow:
                self.made += 1
        if grow:
            return temp_copy("kit-wine-trace.")
        return self.free.get()

    def give(self, p: Path) -> None:
        self.free.put(p)

    @contextmanager
    def lease(self):
        p = self.take()
        try:
            yield p
        finally:
            self.give(p)


if __name__ == "__main__":
    if sys.argv[1:] != ["--template"]:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    try:
        print(template())
    except WineError as e:
        sys.exit(f"wineprefix: {e}")
