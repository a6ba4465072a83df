#!/usr/bin/env node
// undici-pipeline.js HOST PORT [ROUNDS] [TIMEOUT_MS] [SLOW_MS]
// undici's Client with pipelining 3 (the npm package, installed by
// undici-install.sh into build/npm): ROUNDS (default 2) rounds, each a
// GET /slow?ms=SLOW_MS (default 50: a handler that takes a while, as a
// database call does) with two GET /ping pipelined behind it, all three
// issued at once on one connection.  The two pings reach the server while
// its handler runs, so one read takes both into the server's buffer: the
// case TFPHTTPConnection.RequestPending misses (B2).  No retry of our own;
// headersTimeout and bodyTimeout (TIMEOUT_MS, default 2000, far below the
// server's 15 s keep-alive time-out) bound every request.
// JSON: requests, completed, timed_out (UND_ERR_HEADERS_TIMEOUT /
// UND_ERR_BODY_TIMEOUT), errors by code, connections (undici's
// 'undici:client:connected' channel) and max_in_flight (request headers
// written to the socket and not yet answered: >= 2 proves pipelining).
// Exit: 0 scenario ran, 1 could not run, 4 undici not installed.
'use strict';
const path = require('path');
const dc = require('diagnostics_channel');

const [host, portArg, roundsArg, timeoutArg, slowArg] = process.argv.slice(2);
if (!host || !portArg) {
  console.error('usage: undici-pipeline.js HOST PORT [ROUNDS] [TIMEOUT_MS] [SLOW_MS]');
  process.exit(1);
}
const PIPELINING = 3;
const rounds = Number(roundsArg || 2);
const timeout = Number(timeoutArg || 2000);
const slow = Number(slowArg || 50);
const prefix = process.env.KIT_NPM_PREFIX || path.join(__dirname, '..', '..', 'build', 'npm');
let undici, version;
try {
  const dir = path.join(prefix, 'node_modules', 'undici');
  undici = require(dir);
  version = require(path.join(dir, 'package.json')).version;
} catch (e) {
  console.error(`undici-pipeline: undici is not installed in ${prefix} ` +
    '(repro/clients/undici-install.sh installs it from npm)');
  process.exit(4);
}

const TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const out = { client: 'undici', undici: version, node: process.version, pipelining: PIPELINING,
  rounds, timeout_ms: timeout, slow_ms: slow, requests: 0, completed: 0, timed_out: 0,
  errors: {}, connections: 0, max_in_flight: 0 };
// Requests written and not yet answered: a request undici sends again on
// a new connection (the rest of a pipeline whose head failed) is the same
// object, counted once.
const inFlight = new Set();
dc.channel('undici:client:connected').subscribe(() => { out.connections++; });
dc.channel('undici:client:sendHeaders').subscribe(({ request }) => {
  inFlight.add(request);
  out.max_in_flight = Math.max(out.max_in_flight, inFlight.size);
});
const answered = ({ request }) => { inFlight.delete(request); };
dc.channel('undici:request:headers').subscribe(answered);
dc.channel('undici:request:error').subscribe(answered);

const client = new undici.Client(`http://${host}:${portArg}`,
  { pipelining: PIPELINING, headersTimeout: timeout, bodyTimeout: timeout });

async function one(p) {
  out.requests++;
  try {
    const r = await client.request({ path: p, method: 'GET' });
    await r.body.text();
    if (r.statusCode === 200) out.completed++;
    else out.errors[`HTTP ${r.statusCode}`] = (out.errors[`HTTP ${r.statusCode}`] || 0) + 1;
  } catch (e) {
    const code = e.code || e.name;
    out.errors[code] = (out.errors[code] || 0) + 1;
    if (TIMEOUTS.has(code)) out.timed_out++;
  }
}

function finish(rc) {
  console.log(JSON.stringify(out));
  console.error(`undici-pipeline: ${out.completed}/${out.requests} completed, ${out.timed_out} timed out ` +
    `(${timeout} ms), ${out.connections} connection(s), max ${out.max_in_flight} in flight, ` +
    `errors ${JSON.stringify(out.errors)}`);
  process.exit(rc);
}

(async () => {
  // A guard over the whole run: every request has its own time-outs, this
  // only stops a client that hangs in spite of them.
  const guard = setTimeout(() => { out.aborted = 'run time limit'; finish(1); },
    rounds * (PIPELINING * timeout + slow) + 10000);
  for (let i = 0; i < rounds; i++) {
    await Promise.all([one(`/slow?ms=${slow}`), ...Array.from({ length: PIPELINING - 1 }, () => one('/ping'))]);
  }
  clearTimeout(guard);
  await client.destroy();
  finish(out.requests > 0 && !(out.completed === 0 && out.errors.ECONNREFUSED) ? 0 : 1);
})();
