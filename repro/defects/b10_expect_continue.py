"""B10's measure (DESIGN section 3).

The defect: `ReadRequestContent` reads the body without answering `Expect:
100-continue`. Its measure (its verdict, its figures), found by name through
the registry, repro/defects/__init__.py: MEASURES, its columns. What every
measure shares (servers, rows, verdicts, the probe) is repro/harness/kit.py.
"""
from __future__ import annotations

import shutil
import socket
import statistics
import subprocess
from pathlib import Path

import httpwire  # noqa: E402
from kit import _start_first, HORSE, Row, SLOW, Verdict  # noqa: E402


# B10: Expect: 100-continue is never answered (TFPHTTPConnection.
# ReadRequestContent).  A raw client sends the head of a POST with
# "Expect: 100-continue" and holds the body back, as a client that asks
# does, waiting up to B10_WAIT_S for an interim answer (a bound on the
# wait, ended by the answer); then sends the body and reads the final
# response.  Beside it a real client in the same run: curl POSTs
# B10_CURL_BYTES, above the 1 MiB from which curl asks for 100-continue by
# itself, with its own Expect and with it suppressed (-H 'Expect:'), its
# verbose lines counted ("Done waiting for 100-continue" is curl saying it
# stalled) and its medians compared.  The verdict is the counts; the ratio
# is a figure: alone on a quiet machine it is ~100 on stock and ~1 fixed,
# but under a full matrix's load (or Wine) the POST without Expect itself
# took 0.14-2.4 s, and a ratio bound would judge the load, not the server.
# Thread mode, keep-alive (--horse), as Horse runs it, so that every row,
# Horse's included, is asked the same; fphttpserver's defaults where a tree
# has no KeepConnections yet (the bisect's oldest).
B10_BODY = 1000
B10_WAIT_S = 2.0
B10_CURL_BYTES = 2 * 1024 * 1024
B10_CURL_RUNS = 3


def b10_raw(address: str, port: int, version: str = "1.1") -> dict:
    """The withheld-body exchange: interim responses before the body was
    sent, interim responses after it, the final status, its echo."""
    body = b"e" * B10_BODY
    head = (f"POST /echo HTTP/{version}\r\nHost: kit\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n").encode()
    with socket.create_connection((address, port), timeout=10) as s:
        s.sendall(head)
        early = httpwire.read_responses(s, 1, B10_WAIT_S * SLOW)
        before = httpwire.parse_responses(early)
        s.sendall(body)
        rest = httpwire.read_final(s, 10.0 * SLOW)
    after = httpwire.parse_responses(early + rest)[len(before):]
    final = [r for r in after if not httpwire.is_interim(r)]
    return {"interim_before_body": sum(map(httpwire.is_interim, before)),
            "final_before_body": sum(not httpwire.is_interim(r) for r in before),
            "interim_after_body": sum(map(httpwire.is_interim, after)),
            "final_status": final[0]["status"] if final else None,
            "echoed": bool(final) and final[0]["body"] == body}


def b10_curl(address: str, port: int, body: Path, expect: bool) -> dict:
    """One curl POST of the file: its time, its status, and its own verbose
    lines on the 100 (sent the Expect, got a 100, gave up waiting)."""
    argv = ["curl", "-sS", "-v", "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
            "--data-binary", f"@{body}", "-H", "Content-Type: application/octet-stream",
            f"http://{address}:{port}/echo"]
    if not expect:
        argv[1:1] = ["-H", "Expect:"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60 * SLOW)
    code, _, secs = r.stdout.strip().partition(" ")
    err = r.stderr.splitlines()
    return {"code": code, "s": float(secs or "nan"),
            "asked": sum(1 for ln in err if ln.lower().startswith("> expect: 100-continue")),
            "got_100": sum(1 for ln in err if ln.startswith("< HTTP/1.1 100")),
            "gave_up": sum(1 for ln in err if "Done waiting for 100-continue" in ln)}


def measure_b10(row: Row, outdir: Path) -> Verdict:
    """Is Expect: 100-continue answered before the body is read?  Counts
    decide: the raw client's interim answers before the body (0 on stock,
    1 with the fix) and after it (never), and curl's own, which must agree
    (got the 100 on every run, or gave up waiting on every run); the
    with/without ratio of curl's medians is a figure.  Without curl (a
    machine that lacks the optional package) the raw client decides alone,
    and the figure says so."""
    have_curl = shutil.which("curl") is not None
    data_file = outdir / "b10-body.bin"
    if have_curl:
        data_file.write_bytes(b"c" * B10_CURL_BYTES)
    try:
        # fphttpserver's defaults on a tree without KeepConnections: the
        # body is read the same way.
        srv, flags = _start_first(row, outdir, "b10", (HORSE + row.flags, row.flags))
        try:
            raw = b10_raw(srv.address, srv.port)
            runs = {"expect": [], "no_expect": []}
            for _ in range(B10_CURL_RUNS if have_curl else 0):   # alternated, so load falls on both alike
                runs["expect"].append(b10_curl(srv.address, srv.port, data_file, True))
                runs["no_expect"].append(b10_curl(srv.address, srv.port, data_file, False))
        finally:
            srv.stop()
    finally:
        data_file.unlink(missing_ok=True)
    med = {k: statistics.median(r["s"] for r in v) if v else float("nan") for k, v in runs.items()}
    ratio = med["expect"] / med["no_expect"] if med["no_expect"] > 0 else float("inf")
    cnt = {k: sum(r[k] for r in runs["expect"]) for k in ("asked", "got_100", "gave_up")}
    codes = sorted({r["code"] for v in runs.values() for r in v})
    data = {"flags": flags, "raw": raw, "curl": runs, "curl_median_s": med, "ratio": round(ratio, 2),
            "curl_expect_counts": cnt, "curl_codes": codes}
    fig = (f"raw client: {raw['interim_before_body']} interim 100 before the body was sent "
           f"(waited up to {B10_WAIT_S * SLOW:g} s), {raw['interim_after_body']} after it, final "
           f"{raw['final_status'] or 'none'}{', body echoed' if raw['echoed'] else ''}; "
           + (f"curl POST of {B10_CURL_BYTES >> 20} MiB x{B10_CURL_RUNS}: asked {cnt['asked']}, "
              f"got 100 {cnt['got_100']}, gave up waiting {cnt['gave_up']}; median "
              f"{med['expect'] * 1000:.1f} ms with Expect, {med['no_expect'] * 1000:.1f} ms without "
              f"(ratio {ratio:.1f})" if have_curl else
              "curl not installed: the raw client decides alone"))
    n = B10_CURL_RUNS if have_curl else 0
    if "000" in codes:
        # A curl run that got no response at all (the server stopped
        # answering: seen once under Wine on a loaded machine) measured
        # nothing: the measure is made again on a fresh server (retried).
        raise RuntimeError("a curl POST got no response (curl code 000): " + fig)
    # Any final status will do (Horse's own sample has no /echo: 404), the
    # same for both clients: the body is read before the request is
    # dispatched, whatever its route.  Where /echo answers, it must echo
    # the body whole.
    code = (raw["final_status"] or "").split(" ")[0]
    if (not code or raw["final_before_body"] or (have_curl and codes != [code]) or cnt["asked"] != n
            or (code == "200" and not raw["echoed"])):
        return Verdict("inconclusive", fig, data)
    if (raw["interim_before_body"] == 0 and raw["interim_after_body"] == 0
            and cnt["got_100"] == 0 and cnt["gave_up"] == n):
        return Verdict("reproduced", fig, data)
    if (raw["interim_before_body"] == 1 and raw["interim_after_body"] == 0
            and cnt["got_100"] == n and cnt["gave_up"] == 0):
        return Verdict("fixed", fig, data)
    return Verdict("inconclusive", fig, data)


MEASURES = {"B10": lambda r, o, st: measure_b10(r, o)}
