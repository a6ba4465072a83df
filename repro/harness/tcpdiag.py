"""tcpdiag.py - how many bytes the kernel holds unread on a TCP connection,
asked by netlink (NETLINK_SOCK_DIAG, inet_diag: what `ss` reads), one
connection at a time.

The same figure as rx_queue in /proc/net/tcp, without that table: it
lists every socket of the namespace as text (thousands while the matrix's
B8 measures hold 1,100 connections each, and their TIME_WAITs), and
reading it every 50 ms was half of the matrix harness's own CPU.  A
lookup here is one request for one 4-tuple (inet_diag_find_one_icsk in
the kernel), in the network namespace of this process.
"""
from __future__ import annotations

import errno
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
TCP_LISTEN = 10
_HDR = struct.Struct("=IHHII")          # struct nlmsghdr
_REQ = struct.Struct("=BBBBI")          # struct inet_diag_req_v2, up to its id
_MSG_RQUEUE = _HDR.size + 4 + 48 + 4    # inet_diag_msg: after the id, expires


class Unavailable(OSError):
    """The kernel answers no inet_diag request (no tcp_diag)."""


def _addr16(family: int, addr: str) -> bytes:
    return socket.inet_pton(family, addr).ljust(16, b"\0")


def _request(seq: int, family: int, local: tuple[str, int], remote: tuple[str, int]) -> bytes:
    sockid = (struct.pack("!HH", local[1], remote[1]) + _addr16(family, local[0])
              + _addr16(family, remote[0]) + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    body = _REQ.pack(family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    return _HDR.pack(_HDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, seq, 0) + body


def _mapped(addr: str) -> str:
    return "::ffff:" + addr


def unread(server: tuple[str, int], clients: list[tuple[str, int]]) -> dict[int, int]:
    """Bytes unread on the server's end of each connection from clients
    (IPv4 'address, port' pairs), by client port; a connection the kernel
    does not know (gone, or not yet accepted) is left out.  A lookup that
    misses falls back to the listener in the kernel: only an answer for
    the client's own port counts.  A server on a dual-stack socket holds
    the connection as IPv6 with mapped addresses: asked second."""
    found: dict[int, int] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        for family, conv in ((socket.AF_INET, str), (socket.AF_INET6, _mapped)):
            ask = [c for c in clients if c[1] not in found]
            for seq, c in enumerate(ask, 1):
                nl.send(_request(seq, family, (conv(server[0]), server[1]), (conv(c[0]), c[1])))
            for _ in ask:
                msg = nl.recv(65536)
                length, kind, _flags, seq, _pid = _HDR.unpack_from(msg)
                if kind == NLMSG_ERROR:
                    err = -struct.unpack_from("=i", msg, _HDR.size)[0]
                    if err in (errno.ENOENT, errno.ESTALE):
                        continue
                    raise Unavailable(err, f"inet_diag: {errno.errorcode.get(err, err)}")
                state = msg[_HDR.size + 1]
                dport = struct.unpack_from("!H", msg, _HDR.size + 6)[0]
                if kind == SOCK_DIAG_BY_FAMILY and state != TCP_LISTEN and dport == ask[seq - 1][1]:
                    found[dport] = struct.unpack_from("=I", msg, _MSG_RQUEUE)[0]
            if len(found) == len(clients):
                break
    return found
