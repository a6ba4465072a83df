#!/bin/bash
# rejected-request.sh HOST PORT
# B16 as curl meets it: two requests the server rejects while reading them,
# each on a connection of its own.  "GET /x" as curl's method (-X) makes the
# request line "GET /x /ping HTTP/1.1", whose third word is no HTTP version
# (ParseStartLine: 400); a header line one byte longer than the default
# MaxLineLength (8*ReadBufLen, 32,768: ReadString's 431; the line is the
# request's last, so the server has read all of it when it rejects it).
# Per request: the status curl got (null for none), curl's exit code and
# message: without the fix curl exits 52, "Empty reply from server".
# Prints one JSON object on stdout, a summary line on stderr.
# Exit: 0 scenario ran (misbehaviour is data), 1 could not run, 4 tool missing.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
require_client curl curl 2 "rejected-request.sh HOST PORT" "$@"
HOST=$1 PORT=$2
URL="http://$HOST:$PORT/ping"
W='%{http_code} %{errormsg}\n'

LINE=$(curl -s --max-time 10 -o /dev/null -w "$W" -X 'GET /x' "$URL" 2>&1)
LINE_RC=$?
# "X-Long: " and 32,761 bytes: a line of 32,769.
LONG=$(printf 'a%.0s' $(seq 32761))
HDR=$(curl -s --max-time 10 -o /dev/null -w "$W" -H "X-Long: $LONG" "$URL" 2>&1)
HDR_RC=$?
[ -n "$LINE$HDR" ] || { echo "rejected-request: curl printed nothing" >&2; exit 1; }

/usr/bin/python3 - "$LINE_RC" "$LINE" "$HDR_RC" "$HDR" <<'PY'
import json, sys
res = {"client": "rejected-request", "clients": {}}
for name, rc, out in (("invalid-request-line", sys.argv[1], sys.argv[2]),
                      ("header-too-long", sys.argv[3], sys.argv[4])):
    code, _, msg = out.strip().partition(" ")
    r = {"curl_exit": int(rc), "status": int(code) if code.isdigit() and int(code) else None}
    if int(rc):
        r["error"] = f"exit {rc}" + (f" ({msg.strip()})" if msg.strip() else "")
    res["clients"][name] = r
print(json.dumps(res))
print("rejected-request: curl " + "; ".join(
    f"{n} " + (str(r["status"]) if r["status"] else r.get("error", "no status"))
    for n, r in res["clients"].items()), file=sys.stderr)
PY
