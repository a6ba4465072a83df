"""rows.py - the rows of `make repro` that run Horse's own code.

Horse (HashLoad/horse) built from source by repro/horse/build.sh: the kit's
Horse application (repro/horse/kithorse.lpr, Horse's public API only) with
the FPC provider, against the trunk snapshot stock and with the Pascal sets
whose defect can reach a Horse application, Debian's FPC 3.2.2 and win64
under Wine; the Horse-side patches (patches/horse/); and Horse's own
samples/lazarus/console, unchanged (repro/horse/sample-server.sh).

Every expected verdict is derived, never written per row:
- the fphttpserver part from the row the kit already has for the same
  compiler and Pascal set (the clone's expectation for a trunk set, the
  real 3.2.2 row's, the win64 rows' rule);
- the columns a Horse application cannot reach (PROVIDER_NA below: the
  program refuses the kit's flag with exit 2, so the run itself says n/a);
- the Horse patches' fields: `Mitigates: Bn` with `Platforms: unix` or
  `all`, in patches/horse/fields (the patches' messages are Horse's own
  form, with no field lines); the simulations' in their own headers (read
  with patchset.read_headers, like every other patch fact).
"""
from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "harness"))
import kit  # noqa: E402
import patchset  # noqa: E402
from kit import Row  # noqa: E402

F, NA = "fixed", "n/a"
HORSE = kit.BUILD / "horse"
HERE = Path(__file__).resolve().parent
SERIES = kit.TOP / "patches" / "horse" / "series"
# The kit's simulations of fixes Horse has merged (PR #563, PR #566), for
# rows only: Horse's code in the state those fixes left it.
SIM_SERIES = HERE / "sim" / "series"
WINE = kit.TOP / "repro" / "fpc" / "wine-server.sh"

# What a Horse application cannot ask fphttpserver for.  The program refuses
# the kit's flag (exit 2) and the kit records n/a with the program's reason;
# this table says why that is expected.  "keepalive": only where the FPC
# provider turns keep-alive on (FPC >= 3.3.1, EnableServerKeepAlive).
PROVIDER_NA = {
    "B1": (None, "Horse assigns no OnAllowConnect and its API offers none"),
    "B4": ("keepalive", "Horse's FPC provider turns KeepConnections on (15 s) on FPC >= 3.3.1: "
                        "it never runs with fphttpserver's defaults, the trigger of this measure"),
    "B6": (None, "Horse runs fphttpserver in thread mode (Threaded := True); no pool mode"),
    "B7": (None, "Horse runs fphttpserver in thread mode (Threaded := True); no pool mode"),
    "B8": (None, "the trigger needs MaxLiveConnectionCount 0 and a 2,048 listen queue; Horse "
                 "sets neither (on trunk it keeps fphttpserver's cap of 128 connections)"),
    "B9": (None, "Horse runs fphttpserver in thread mode (Threaded := True), where no idle "
                 "tick checks connections, and assigns no OnAcceptIdle"),
    "B21": (None, "Horse runs fphttpserver in thread mode (Threaded := True): no tmPolled, whose "
                  "connections are read on the accept-idle tick"),
    "B15": (None, "Horse runs fphttpserver in thread mode (Threaded := True): its Free waits "
                  "only for each connection thread's own wait (KeepConnectionIdleTimeout, 50 ms "
                  "as Horse leaves it), and the measure's pool and polled modes are out of its "
                  "reach"),
    "B17": (None, "the measure needs a short RequestReadTimeout (400 ms), and Horse's API has no "
                  "such setting: a Horse application runs with fphttpserver's 30 s default, where a "
                  "dripped head is held all the same (each gap below 30 s), only over a longer run "
                  "than a matrix row may take"),
    "B19": (None, "the measure needs MaxLiveConnectionCount 1, and Horse's API has no such "
                  "setting: a Horse application on trunk keeps fphttpserver's cap of 128 and "
                  "sends the same 503 once 128 connections are open"),
}
# B20 (an absolute-form target) is not here: a Horse application reaches it.
# Horse routes by the PathInfo fphttpserver's ParseStartLine derives
# (THorse.Get('/ping') in the kit's program and in Horse's sample): stock gives
# `GET http://h:p/ping` the PathInfo `/http://h:p/ping` and Horse answers 404,
# and with accept-absolute-form the route's own 200; its rows take the fcl-web
# set's verdict.


@dataclass
class HorseRow(Row):
    """A Row whose server is Horse code.  nodelay_extra: setsockopt
    (TCP_NODELAY) per connection that Horse itself makes (its patches),
    added by the matrix to what the fcl-web set makes."""
    nodelay_extra: int = 0
    horse_set: str = "stock"


@dataclass(frozen=True)
class HorsePatch:
    name: str
    mitigates: str | None
    platforms: tuple[str, ...]
    needs: str | None
    defect: str | None
    sim: bool = False              # a kit simulation of a merged Horse fix
    provider: str | None = None    # Provider: header; None = the FPC provider


def horse_fields(path: Path = SERIES.parent / "fields") -> dict[str, dict[str, str]]:
    """patches/horse/fields: a stanza of 'Field: value' lines per Horse
    patch, opened by 'Patch: <name>'; '#' lines are comments."""
    out: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        field, _, value = line.partition(": ")
        if field == "Patch":
            cur = out.setdefault(value.strip(), {})
        elif cur is not None:
            cur[field] = value.strip()
    return out


def horse_patches() -> list[HorsePatch]:
    """The kit's simulations (repro/horse/sim/series), then the Horse
    patches (patches/horse/series)."""
    out = []
    fields = horse_fields() if SERIES.exists() else {}
    for series, sim in ((SIM_SERIES, True), (SERIES, False)):
        if not series.exists():
            continue
        for line in series.read_text().splitlines():
            name = line.split("#", 1)[0].strip().removesuffix(".patch")
            if not name:
                continue
            h = patchset.read_headers(series.parent / f"{name}.patch") if sim else fields.get(name, {})
            out.append(HorsePatch(name, (h.get("Mitigates") or "").strip() or None,
                                  tuple((h.get("Platforms") or "all").split()),
                                  (h.get("Needs") or "").strip() or None,
                                  (h.get("Defect") or "").strip() or None, sim,
                                  (h.get("Provider") or "").strip() or None))
    return out


def horse_set_patches(hset: str) -> list[HorsePatch]:
    names = set(hset.split("+"))
    return [p for p in horse_patches() if hset == "all" or p.name in names]


def horse_mitigated(hset: str, platform: str) -> dict[str, bool]:
    """Defects the Horse set mitigates on a platform ('linux' counts as unix),
    by its patches' Mitigates/Platforms headers."""
    plat = {"linux": "unix", "win64": "windows"}[platform]
    out: dict[str, bool] = {}
    for p in horse_set_patches(hset):
        if p.mitigates:
            out[p.mitigates] = out.get(p.mitigates, False) or bool(
                {"all", plat} & set(p.platforms))
    return out


def horse_expect(base: dict[str, str], hset: str, platform: str, keepalive: bool) -> dict[str, str]:
    exp = dict(base)
    for d, (when, _) in PROVIDER_NA.items():
        if when is None or (when == "keepalive" and keepalive):
            exp[d] = NA
    for d, on in horse_mitigated(hset, platform).items():
        if on and exp.get(d) != NA:
            exp[d] = F
    return exp


def exe(tc: str, fset: str, hset: str, prog: str = "kithorse") -> Path:
    name = "Console" if prog == "console" else "kithorse"
    return HORSE / tc / fset / hset / prog / (name + (".exe" if tc == "win64" else ""))


def _row(name: str, fset: str, base: dict[str, str], hset: str, platform: str, path: Path,
         note: str, keepalive: bool = True, fcl_target: list[str] = (), **kw) -> HorseRow:
    """fcl_target: what the Pascal set fixes; the row's targets are those
    and the Horse set's mitigations, where the row expects them fixed."""
    exp = horse_expect(base, hset, platform, keepalive)
    mitig = horse_mitigated(hset, platform)
    target = sorted({*fcl_target, *(d for d, on in mitig.items() if on)} & {
        d for d in exp if exp[d] == F}, key=lambda d: int(d[1:]))
    return HorseRow(name, fset, expect=exp, target=target, path=path, platform=platform,
                    note=note, nodelay_extra=1 if mitig.get("B3") else 0, horse_set=hset, **kw)


def fcl_sets(clones: list[Row]) -> list[Row]:
    """The clone rows (no flags) whose fix reaches a Horse application:
    a set whose every target is a column Horse cannot reach gets no row
    (its build is made all the same), and a fix that needs another is
    shown by its pair."""
    out = []
    for c in clones:
        if c.flags or c.variant == "stock" or c.needs:
            continue
        if c.target and all(d in PROVIDER_NA for d in c.target):
            continue
        out.append(c)
    return out


def rows(clones: list[Row], fpc322: list[Row], win64_env: dict) -> list[Row]:
    """Like the real-trunk rows, they appear once the trunk toolchain is
    there, built or not (a failed build is a failing row); the win64 ones
    once its cross compiler and Wine are."""
    if not (kit.BUILD / "fpc-trunk" / "bin" / "fpc").exists():
        return []
    by = {c.name: c for c in clones}
    stock = by["stock"].expect
    out = [_row("horse trunk", "stock", stock, "stock", "linux", exe("trunk", "stock", "stock"),
                "Horse's FPC provider (Horse ff41415), trunk fcl-web stock")]
    for c in fcl_sets(clones):
        out.append(_row(f"horse trunk + {c.variant}", c.variant, c.expect, "stock", "linux",
                        exe("trunk", c.variant, "stock"),
                        f"Horse's FPC provider, trunk fcl-web with Pascal set '{c.variant}'",
                        fcl_target=c.target))
    for hset, pname, what, p in horse_variants():
        if reaches(p, True):
            out.append(_row(f"horse trunk + horse:{pname}", "stock", stock, hset, "linux",
                            exe("trunk", "stock", hset), f"Horse patched: {what}"))
    out.append(_row("horse sample console", "stock", stock, "stock", "linux",
                    exe("trunk", "stock", "stock", "console"),
                    "Horse's own sample, unchanged (port 9000: a network namespace per run, "
                    "captures one at a time)",
                    wrap=[str(HERE / "sample-server.sh")],
                    # its stop: the sample and tcpdump (stop_pid: 5 s each,
                    # then KILL) and the namespace, forked and polled under
                    # strace on a loaded machine (f1: more than 3 s)
                    cleanup_s=30.0))
    for r in fpc322:
        v = r.variant[len("fpc-"):]
        for hset, pname, what, p in [("stock", "", "", None)] + horse_variants():
            if p and not reaches(p, False):
                continue
            out.append(_row(f"horse FPC {v}" + (f" + horse:{pname}" if pname else ""), r.variant,
                            r.expect, hset, "linux", exe("322", "stock", hset),
                            "Horse's FPC provider on the released compiler (no keep-alive there)"
                            + (f"; Horse patched: {what}" if p else ""), keepalive=False))
    if not ((kit.BUILD / "fpc-trunk" / "bin" / "fpc-win64").exists() and shutil.which("wine")):
        return out
    wbase = dict(stock, B8=NA)
    for hset, pname, what, p in [("stock", "", "Horse ff41415", None)] + horse_variants():
        if p and not reaches(p, True):
            continue
        out.append(_row("horse trunk (win64)" + (f" + horse:{pname}" if pname else ""),
                        "stock", wbase, hset, "win64", exe("win64", "stock", hset),
                        f"{what}, win64 under Wine", wrap=[str(WINE)], env=dict(win64_env)))
    return out


def horse_variants() -> list[tuple[str, str, str, HorsePatch]]:
    """The Horse sets that get rows: the set built (git am order), the
    patch's name (the row's), a note, and the patch.  A simulation sits on
    the simulations before it (Horse's history: #566 follows #563); a Horse
    patch applies alone on ff41415.  A patch for another provider than the
    FPC one (Provider: epoll) gets no row: the rows run the FPC provider."""
    out, chain = [], []
    for p in horse_patches():
        plat = ", ".join(p.platforms)
        if p.sim:
            chain.append(p.name)
            out.append(("+".join(chain), p.name, f"{p.name}: the kit's simulation of a merged "
                        f"Horse fix (Mitigates {p.mitigates}, platforms: {plat})", p))
        elif p.provider in (None, "fpc"):
            out.append((p.name, p.name, f"{p.name} (Mitigates {p.mitigates}, platforms: {plat})", p))
    return out


def reaches(p: HorsePatch, keepalive: bool) -> bool:
    """A Horse patch gets a row on a compiler where the defect it mitigates
    is a column the rows can see there."""
    when = PROVIDER_NA.get(p.mitigates or "", ("never", ""))[0]
    if p.mitigates == "B3":     # no reused connection without keep-alive
        return keepalive
    return when is not None and not (when == "keepalive" and keepalive)


def builds(test: bool = False) -> list[tuple[str, str, str, str]]:
    """(tc, fcl set, horse set, program) of every build the rows need, and
    with test those repro/horse/check.sh --kit needs too (Horse's sample on
    win64 and with each Horse set: `make test`'s alone, so not built by the
    first `make repro`), for mk/horse.mk (rows.py builds [--test])."""
    sys.path.insert(0, str(kit.TOP / "repro" / "harness"))
    import matrix  # noqa: E402  (late: matrix imports this module)
    clones = matrix.clone_rows()
    # (The epoll provider's builds are make bench's alone: make horse-epoll.)
    out = [("trunk", "stock", "stock", "kithorse"), ("trunk", "stock", "stock", "console"),
           ("322", "stock", "stock", "kithorse"), ("win64", "stock", "stock", "kithorse")]
    out += [("win64", "stock", "stock", "console")] if test else []
    out += [("trunk", c.variant, "stock", "kithorse") for c in fcl_sets(clones)]
    for hset, _, _, p in horse_variants():
        if reaches(p, True):
            out += [("trunk", "stock", hset, "kithorse"), ("win64", "stock", hset, "kithorse")]
            if test:   # Horse's sample with the patch, for repro/horse/check.sh --kit
                out += [("trunk", "stock", hset, "console"), ("win64", "stock", hset, "console")]
        if reaches(p, False):
            out.append(("322", "stock", hset, "kithorse"))
    # Only what a compiler here can build: no win64 cross compiler, or no
    # Debian fpc, and those rows fail (as the real-trunk ones do).
    have = {"trunk": (kit.BUILD / "fpc-trunk" / "bin" / "fpc").exists(),
            "win64": (kit.BUILD / "fpc-trunk" / "bin" / "fpc-win64").exists(),
            "322": shutil.which("fpc") is not None}
    return [b for b in out if have[b[0]]]


if __name__ == "__main__":
    if sys.argv[1:2] == ["builds"] and sys.argv[2:] in ([], ["--test"]):
        for b in builds(test=sys.argv[2:] == ["--test"]):
            print(" ".join(b))
    elif len(sys.argv) == 3 and sys.argv[1] == "fields":
        # A Horse patch's stanza of patches/horse/fields, as 'Field: value'
        # lines (scripts/check-horse-patches.sh checks them).
        for k, v in horse_fields().get(sys.argv[2], {}).items():
            print(f"{k}: {v}")
    else:
        print("usage: rows.py builds [--test] | rows.py fields PATCH", file=sys.stderr)
        sys.exit(2)
