#!/bin/sh
# tests/fault/no-listening-line.sh - a server that starts and never says
# where it listens, as repro/fpc/wine-server.sh did once when Wine did not
# come up (issue 20: "no 'listening ADDR:PORT' line (got '')").  Run as a
# matrix row (repro/harness/matrix.py --fault-row, tests/run.sh step fault): every
# measure must fail twice, and the row and the run with it.
# Arguments (--port 0 ...) are ignored.
echo "starting, but never listening"
# Stay up until the kit stops it by its PID (it waits for a line that
# never comes, then sends SIGTERM): a hung server, not a crashed one.
exec sleep 3600
