#!/bin/bash
# head-then-get.sh HOST PORT [PATH]
# B14 as real clients meet it: each client sends HEAD PATH (default
# /b14-no-route, a 404 on the kit's servers, GET or HEAD alike), then GET
# /ping, both on one kept connection when the server keeps it: curl (one
# command line, --next), Python's http.client (one HTTPConnection; the
# library urllib3 and requests build on) and Node's http.Agent({keepAlive:
# true, maxSockets: 1}).  Per client: the HEAD's status, the GET's status
# and body, whether the GET went on the HEAD's connection, and the client's
# error if one failed.  A client reads a response to HEAD up to its empty
# line: content after it is read as the start of the next response (curl
# and http.client: the GET fails; Node: the parser fails on whichever
# request owns the socket when the bytes come, or the socket is dropped and
# the GET goes on a new one).  "both_on_one" says the HEAD and the GET were
# each answered, the GET with 200 "pong", on one connection.
# Prints one JSON object on stdout, a summary line on stderr.
# Exit: 0 scenario ran (misbehaviour is data), 1 could not run, 4 tool missing.
set -u
kit_name=${0##*/} kit_name=${kit_name%.sh}
# shellcheck source=scripts/lib.sh
source "${0%/*}/../../scripts/lib.sh"
require_client curl curl 2 "head-then-get.sh HOST PORT [PATH]" "$@"
require_command node nodejs
HOST=$1 PORT=$2 TARGET=${3:-/b14-no-route}
BASE="http://$HOST:$PORT"

# curl: -I (HEAD) on the first URL, GET on the one after --next; curl
# reuses the connection when it may (num_connects 0).
CURL=$(curl -s --max-time 10 -I -o /dev/null -w '%{http_code} %{num_connects} %{local_port} %{errormsg}\n' \
    "$BASE$TARGET" --next -s --max-time 10 -o /dev/null \
    -w '%{http_code} %{num_connects} %{local_port} %{errormsg}\n' "$BASE/ping" 2>&1)
CURL_RC=$?

PY=$(/usr/bin/python3 - "$HOST" "$PORT" "$TARGET" <<'PY'
import http.client, json, sys
host, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}
c = http.client.HTTPConnection(host, port, timeout=5)
try:
    c.request("HEAD", target)
    r = c.getresponse()
    r.read()
    out["head_status"] = r.status
    first = c.sock.getsockname()[1] if c.sock else None
    c.request("GET", "/ping")
    r = c.getresponse()
    out["get_status"], out["get_body"] = r.status, r.read().decode("latin-1")
    out["reused"] = first is not None and c.sock is not None and c.sock.getsockname()[1] == first
except Exception as e:  # noqa: BLE001 - any failure is the client's outcome
    out["error"] = f"{type(e).__name__}: " + " ".join(str(e).split())
finally:
    c.close()
print(json.dumps(out))
PY
)

NODE=$(node - "$HOST" "$PORT" "$TARGET" <<'JS'
'use strict';
const http = require('http');
const [host, port, target] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const out = {};
function send(method, path) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host, port: Number(port), method, path, agent }, (res) => {
      let body = '';
      res.setEncoding('latin1');
      res.on('data', (d) => { body += d; });
      res.on('end', () => resolve({ status: res.statusCode, body, reused: req.reusedSocket }));
      res.on('error', reject);
    });
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}
(async () => {
  let at = 'HEAD';
  try {
    const h = await send('HEAD', target);
    out.head_status = h.status;
    at = 'GET';
    const g = await send('GET', '/ping');
    Object.assign(out, { get_status: g.status, get_body: g.body, reused: g.reused });
  } catch (e) {
    out.error = `${at}: ${e.code || e.message}`;
  }
  agent.destroy();
  console.log(JSON.stringify(out));
})();
JS
)

/usr/bin/python3 - "$CURL_RC" "$CURL" "$PY" "$NODE" <<'PY'
import json, sys
rc, curl_out, py, node = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
rows = [l.split(None, 3) for l in curl_out.splitlines() if len(l.split()) >= 3]
curl = {"curl_exit": rc}
if rows:
    curl["head_status"] = int(rows[0][0]) or None
if len(rows) > 1:
    curl["get_status"] = int(rows[1][0]) or None
    curl["reused"] = rows[1][1] == "0" and rows[1][2] == rows[0][2]
if rc:
    curl["error"] = f"exit {rc}" + "".join(f" ({r[3].strip()})" for r in rows[1:2] if len(r) > 3)
res = {"client": "head-then-get", "clients": {"curl": curl}}
for name, text in (("http.client", py), ("node", node)):
    try:
        res["clients"][name] = json.loads(text)
    except ValueError:
        res["clients"][name] = {"error": f"no result: {text.strip()[-200:]}"}
for name, c in res["clients"].items():
    c["both_on_one"] = bool(c.get("head_status") and c.get("get_status") == 200
                            and c.get("get_body", "pong") == "pong" and c.get("reused")
                            and "error" not in c)
print(json.dumps(res))
print("head-then-get: " + "; ".join(
    f"{n} " + ("HEAD and GET on one connection" if c["both_on_one"] else c.get("error", "GET on another connection"))
    for n, c in res["clients"].items()), file=sys.stderr)
PY
