"""httpwire.py - the kit's one raw-socket HTTP response reader in Python.

For scripts that talk to a server over a plain socket (repro/fpc/rawhttp.py,
the integration tests); the C tools use common/httpresp.h.  A deadline here
only bounds how long we wait for more bytes.
"""
from __future__ import annotations

import select
import socket
import time


def _read(sock: socket.socket, limit_s: float, enough) -> tuple[bytes, str, float | None]:
    """Bytes until enough(buf), EOF, RST or limit_s overall.  Returns (bytes,
    end, ms): end is 'enough', 'EOF', 'ECONNRESET' or 'timeout'; ms is when
    the end came, from the call (None on timeout)."""
    buf = b""
    t0 = time.monotonic()
    deadline = t0 + limit_s
    while not enough(buf):
        left = deadline - time.monotonic()
        if left <= 0:
            return buf, "timeout", None
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            continue
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            return buf, "ECONNRESET", round((time.monotonic() - t0) * 1000, 3)
        if not chunk:
            return buf, "EOF", round((time.monotonic() - t0) * 1000, 3)
        buf += chunk
    return buf, "enough", round((time.monotonic() - t0) * 1000, 3)


def read_until_close(sock: socket.socket, limit_s: float = 5.0) -> tuple[bytes, str, float | None]:
    """Everything the server sends until EOF, RST or limit_s of silence
    overall.  Returns (bytes, end, ms): end is 'EOF', 'ECONNRESET' or
    'timeout'; ms is when EOF/RST came, from the call (None on timeout)."""
    return _read(sock, limit_s, lambda buf: False)


def parse_responses(buf: bytes) -> list[dict]:
    """The complete responses in buf, in order: status line text, the
    Connection header (None when absent), every header line as a (name,
    value) pair in order, and the body (by Content-Length);
    a response whose body has not all arrived is not counted."""
    out, rest = [], buf
    while rest.startswith(b"HTTP/1."):
        head, sep, body = rest.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.decode("latin-1").split("\r\n")
        fields, headers = {}, []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
            headers.append((name.strip(), value.strip()))
        try:
            length = int(fields.get("content-length", "0"))
        except ValueError:
            break
        if len(body) < length:
            break
        out.append({"status": lines[0][len("HTTP/1.x "):].strip(),
                    "connection": fields.get("connection"), "body": body[:length],
                    "headers": headers})
        rest = body[length:]
    return out


def read_responses_end(sock: socket.socket, count: int, limit_s: float = 5.0) -> tuple[bytes, str]:
    """What the server sends until `count` complete responses are in, EOF,
    RST, or limit_s overall (a bound on the wait, never a verdict), and
    which came: 'enough', 'EOF', 'ECONNRESET' or 'timeout'."""
    buf, end, _ = _read(sock, limit_s, lambda b: len(parse_responses(b)) >= count)
    return buf, end


def read_head_end(sock: socket.socket, limit_s: float = 5.0) -> tuple[bytes, str]:
    """What the server sends until a response's head (status line and
    fields, to the empty line) is in, EOF, RST, or limit_s overall: for a
    response whose end is its head (a response to HEAD), which
    read_responses would wait on for its Content-Length.  Returns (bytes,
    end): end is 'enough', 'EOF', 'ECONNRESET' or 'timeout'."""
    buf, end, _ = _read(sock, limit_s, lambda b: b"\r\n\r\n" in b)
    return buf, end


def parse_head(buf: bytes) -> dict | None:
    """The response head at the start of buf, read as a response to HEAD
    (RFC 9110 9.3.2: it ends at its empty line, whatever its Content-Length
    says): status line text, Content-Length (None when absent or not a
    number), every header line as a (name, value) pair, and head_len, the
    bytes it takes; None when buf does not start with a complete head."""
    if not buf.startswith(b"HTTP/1."):
        return None
    head, sep, _ = buf.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = [(n.strip(), v.strip()) for n, _, v in (line.partition(":") for line in lines[1:])]
    cl = next((v for n, v in headers if n.lower() == "content-length"), None)
    return {"status": lines[0][len("HTTP/1.x "):].strip(),
            "content_length": int(cl) if cl is not None and cl.isdigit() else None,
            "headers": headers, "head_len": len(head) + len(sep)}


def read_responses(sock: socket.socket, count: int, limit_s: float = 5.0) -> bytes:
    """read_responses_end's bytes only."""
    return read_responses_end(sock, count, limit_s)[0]


def get(path: str) -> bytes:
    """The kit's GET request for path: HTTP/1.1, Host only."""
    return f"GET {path} HTTP/1.1\r\nHost: kit\r\n\r\n".encode()


def exchange(sock: socket.socket, path: str, limit_s: float = 5.0) -> list[dict]:
    """One GET path on sock, and the complete responses read until the
    first (more where they came in the same bytes: an answer twice shows);
    none on EOF, RST or limit_s (a bound on the wait)."""
    sock.sendall(get(path))
    return parse_responses(read_responses(sock, 1, limit_s))


def is_interim(resp: dict) -> bool:
    """A 1xx response (100 Continue): not the request's answer."""
    return resp["status"][:1] == "1"


def read_final(sock: socket.socket, limit_s: float = 5.0) -> bytes:
    """What the server sends until a complete final (non-1xx) response is
    in, EOF, RST, or limit_s overall (interim 1xx responses before it are
    kept in the bytes)."""
    return _read(sock, limit_s,
                 lambda buf: any(not is_interim(r) for r in parse_responses(buf)))[0]
