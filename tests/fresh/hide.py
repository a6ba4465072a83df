#!/usr/bin/env python3
"""hide.py - run a command as if some Debian packages were not installed.

    tests/fresh/hide.py --hide ROLE|PACKAGE[,...] [--dry-run] -- COMMAND...

ROLE is one of the roles scripts/require-packages.sh --list gives (main,
optional, test); a PACKAGE must be one it lists (one not installed under
its name stands for the owners of its probe file; a listed package that
needs a hidden one is hidden too).  What is hidden is the
named packages and every installed package only they need: the closure of
their Depends/Pre-Depends over the installed packages, minus the closure of
everything kept (the packages the list does not hide, and the base system:
Essential, Priority required or important).  Alternatives and virtual
packages count every installed provider, so a package something kept might
use is never hidden.

In a private mount namespace (re-executed under `unshare -m` when not
already in one; root only) each hidden package's files vanish: a folder
that holds nothing a kept package owns gets an empty tmpfs over it; a file
in a shared folder is whited out by an overlay of that folder (upper layer
on tmpfs) -- absent, not empty, so a compiler, a linker or `command -v`
sees exactly what a machine without the package has.  dpkg's and apt's
state is read-only in there: installing into mounts that vanish with the
namespace would leave dpkg's records on the real disk without the files
(it happened once: an old require-packages.sh installed what was hidden).
Before COMMAND runs, every hidden listed package's probe file (from the
list) must be gone.  The namespace, and every mount in it, ends with
COMMAND; the work folder (under $TMPDIR) is removed.
Exit: COMMAND's status; 1 if the hiding could not be set up.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent.parent
DPKG = Path("/var/lib/dpkg")
# Read-only inside the namespace (an `apt-get install` there fails at once).
PACKAGE_STATE = ("/var/lib/dpkg", "/var/lib/apt", "/var/cache/apt")


def die(msg: str) -> None:
    print(f"hide: {msg}", file=sys.stderr)
    sys.exit(1)


def listed() -> list[tuple[str, str, str]]:
    """(role, package, probe file) from scripts/require-packages.sh --list."""
    out = subprocess.run([str(TOP / "scripts" / "require-packages.sh"), "--list"],
                         capture_output=True, text=True, check=True).stdout
    return [tuple(line.split(" ", 2)) for line in out.splitlines() if line.strip()]


def installed() -> dict[str, dict[str, str]]:
    """Installed packages from dpkg's status file, by name (arch dropped)."""
    pkgs: dict[str, dict[str, str]] = {}
    for stanza in (DPKG / "status").read_text(errors="replace").split("\n\n"):
        f = dict(re.findall(r"^([A-Za-z-]+): ?(.*(?:\n .*)*)", stanza, re.M))
        if f.get("Status", "").endswith(" installed") and "Package" in f:
            d = pkgs.setdefault(f["Package"], {})
            for k in ("Depends", "Pre-Depends", "Provides", "Essential", "Priority"):
                if f.get(k):
                    d[k] = (d.get(k, "") + ", " + f[k]).strip(", ")
    return pkgs


def names(field: str) -> list[list[str]]:
    """'a (>= 1) | b:any, c' -> [['a', 'b'], ['c']]"""
    return [[re.split(r"[\s:(\[]", alt.strip(), maxsplit=1)[0] for alt in group.split("|")]
            for group in field.split(",") if group.strip()]


def closure(start: set[str], pkgs: dict) -> set[str]:
    providers: dict[str, set[str]] = {}
    for p, f in pkgs.items():
        for (v, *_) in names(f.get("Provides", "")):
            providers.setdefault(v, set()).add(p)
    seen, todo = set(), list(start)
    while todo:
        p = todo.pop()
        if p in seen or p not in pkgs:
            continue
        seen.add(p)
        for group in names(pkgs[p].get("Pre-Depends", "") + ", " + pkgs[p].get("Depends", "")):
            for alt in group:   # every installed alternative: kept wide, hidden narrow
                todo += [alt] if alt in pkgs else sorted(providers.get(alt, ()))
    return seen


def owned_paths() -> dict[str, set[str]]:
    """Every installed package's paths, parent folder resolved (/lib ->
    /usr/lib), by package name."""
    out: dict[str, set[str]] = {}
    parents: dict[str, str] = {}
    for lst in DPKG.glob("info/*.list"):
        mine = out.setdefault(lst.stem.split(":")[0], set())
        for line in lst.read_text(errors="replace").splitlines():
            if line.startswith("/") and line != "/.":
                d, n = os.path.split(line)
                if d not in parents:
                    parents[d] = os.path.realpath(d)
                mine.add(os.path.join(parents[d], n))
    return out


def plan(hidden: set[str], owned: dict[str, set[str]]) -> tuple[list[str], dict[str, list[str]]]:
    """(folders to cover with an empty tmpfs, {shared folder: names to white out})."""
    # Whatever no hidden package owns stays (kept, base, or other packages).
    keep_paths = set().union(*(f for p, f in owned.items() if p not in hidden))
    keep_dirs = set(keep_paths)   # and every folder above a kept path
    for p in keep_paths:
        d = os.path.dirname(p)
        while d != "/" and d not in keep_dirs:
            keep_dirs.add(d)
            d = os.path.dirname(d)
    mine = set().union(*(owned.get(p, set()) for p in hidden)) - keep_paths
    mine = {p for p in mine if os.path.lexists(p)}
    dirs = {p for p in mine if os.path.isdir(p) and not os.path.islink(p) and p not in keep_dirs}
    tops = sorted(d for d in dirs if os.path.dirname(d) not in dirs)
    under = lambda p: any(p.startswith(t + "/") or p == t for t in tops)  # noqa: E731
    outs: dict[str, list[str]] = {}
    for p in sorted(mine - dirs):
        # A link in / itself (/lib32 -> usr/lib32) stays: an overlay over /
        # would cover every mount, and what it points to is hidden anyway.
        if not (os.path.isdir(p) and not os.path.islink(p)) and not under(p) \
                and os.path.dirname(p) != "/":
            outs.setdefault(os.path.dirname(p), []).append(os.path.basename(p))
    return tops, outs


def mount(*args: str) -> None:
    r = subprocess.run(["mount", *args], capture_output=True, text=True)
    if r.returncode != 0:
        die(f"mount {' '.join(args)}: {r.stderr.strip()}")


def hide(tops: list[str], outs: dict[str, list[str]]) -> str:
    """Shallow folders first, so deeper mounts sit on top; every overlay's
    lower layer is the untouched folder seen through a bind of / made
    before any of them (no overlay stacks on another)."""
    on_root = {d for d in outs if os.stat(d).st_dev == os.stat("/").st_dev}   # before any mount
    work = tempfile.mkdtemp(prefix="kit-hide.")
    mount("-t", "tmpfs", "-o", "mode=700", "kit-hide", work)
    root = os.path.join(work, "root")
    os.mkdir(root)
    mount("--bind", "/", root)
    jobs = [(d, None) for d in tops] + [(d, n) for d, n in outs.items()]
    for i, (d, whiteouts) in enumerate(sorted(jobs, key=lambda j: j[0].count("/"))):
        if whiteouts is None:
            mount("-t", "tmpfs", "-o", "mode=755,size=1m", "kit-hide", d)
            continue
        up, wk = os.path.join(work, f"up{i}"), os.path.join(work, f"wk{i}")
        os.mkdir(up)
        os.mkdir(wk)
        for n in whiteouts:
            os.mknod(os.path.join(up, n), 0o600 | 0o020000, os.makedev(0, 0))
        lower = root + d if d in on_root else d
        mount("-t", "overlay", "-o", f"lowerdir={lower},upperdir={up},workdir={wk}", "kit-hide", d)
    # Nothing may be installed in here: dpkg would record on the real disk
    # what it unpacked into a mount that ends with us.
    for d in PACKAGE_STATE:
        if os.path.isdir(d):
            mount("--bind", d, d)
            mount("-o", "remount,bind,ro", d)
    return work


def run(command: list[str], work: str) -> int:
    """COMMAND as our child (signals passed on), then unhide."""
    child = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    rc = child.wait()
    unhide(work)
    return rc


def unhide(work: str) -> None:
    """The work folder's mount point is the one thing outside the
    namespace: detach it and remove the folder (the rest ends with us)."""
    subprocess.run(["umount", "-l", work], check=False)
    os.rmdir(work)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--hide", required=True, help="roles and/or packages, comma-separated")
    ap.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    ap.add_argument("command", nargs="*")
    args = ap.parse_args()
    rows = listed()
    want = set(args.hide.split(","))
    unknown = want - {r for r, _, _ in rows} - {p for _, p, _ in rows}
    if unknown:
        die(f"not a role or a listed package: {', '.join(sorted(unknown))}")
    named = {p for r, p, _ in rows if r in want or p in want}
    # Into a mount namespace of our own first (marked, so that the second
    # run knows it is the one inside; the mark is gone before COMMAND).
    if not args.dry_run and os.environ.pop("KIT_HIDE_INSIDE", None) != str(os.getpid()):
        os.environ["KIT_HIDE_INSIDE"] = str(os.getpid())
        os.execvp("unshare", ["unshare", "-m", "--propagation", "private",
                              sys.executable, *sys.argv])
    pkgs = installed()
    base = {p for p, f in pkgs.items()
            if f.get("Essential") == "yes" or f.get("Priority") in ("required", "important")}
    owned = owned_paths()

    def installed_as(name: str, probe: str) -> set[str]:
        """A listed package, or where it is not installed (its files came
        with other packages: /usr/bin/fpc is an alternative of
        fp-compiler-3.2.2's), the owners of what its probe file resolves to."""
        if name in pkgs:
            return {name}
        real = os.path.realpath(probe)
        return {p for p, paths in owned.items() if real in paths}

    hide_roots = set().union(*(installed_as(p, f) for _, p, f in rows if p in named))
    # A listed package that needs a hidden one goes too (no machine has npm
    # without nodejs).
    for _, p, f in rows:
        if p not in named and closure(installed_as(p, f), pkgs) & hide_roots:
            print(f"hide: {p} too (it needs what is hidden)", flush=True)
            named.add(p)
            hide_roots |= installed_as(p, f)
    # A base package named (iproute2 is Priority important) is hidden all
    # the same: a minimal image lacks it.  Unless the base system itself
    # needs it (debootstrap's Debian 12 has ifupdown and isc-dhcp-client,
    # both important, both depending on iproute2): no machine with that
    # base lacks it, so it stays, and is not looked for below.  One a
    # listed kept package needs stays too, and the check below says so.
    base_needs = closure(base - hide_roots, pkgs)
    for _, p, f in rows:
        roots = installed_as(p, f)
        if p in named and roots and roots <= base_needs:
            users = sorted(b for b in base - hide_roots if closure({b}, pkgs) & roots and b not in roots)
            print(f"hide: {p} stays (the base system needs it: {', '.join(users[:4])})", flush=True)
            named.discard(p)
            hide_roots -= roots
            base_needs = closure(base - hide_roots, pkgs)
    kept = closure(set().union(*(installed_as(p, f) for _, p, f in rows if p not in named))
                   | (base - hide_roots), pkgs)
    hidden = closure(hide_roots, pkgs) - kept
    tops, outs = plan(hidden, owned)
    print(f"hide: {len(hidden)} packages hidden ({', '.join(sorted(hidden))}): "
          f"{len(tops)} folders under tmpfs, {sum(map(len, outs.values()))} files whited "
          f"out in {len(outs)} folders", flush=True)
    if args.dry_run:
        for t in tops:
            print(f"tmpfs {t}")
        for d, n in sorted(outs.items()):
            print(f"whiteout {d}: {' '.join(n)}")
        return 0
    work = hide(tops, outs)
    still = [f"{p} ({f})" for _, p, f in rows if p in named and os.path.exists(f)]
    if still:   # needed by something kept, or not a package's file
        unhide(work)
        die("still visible after hiding: " + ", ".join(still))
    return run(args.command, work)


if __name__ == "__main__":
    sys.exit(main())
