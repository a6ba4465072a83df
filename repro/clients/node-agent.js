#!/usr/bin/env node
// node-agent.js HOST PORT [ROUNDS] [MAX_GAP_MS]
// Node's http.Agent({keepAlive: true, maxSockets: 1}): ROUNDS (default 30)
// sequential GET /ping with a random idle gap (seeded PRNG, 0..MAX_GAP_MS ms,
// default 300; 0 = back to back) before
// each one. No retry: a request that fails on a reused socket with
// ECONNRESET / EPIPE / "socket hang up" (ECONNRESET) / ECONNABORTED is a
// stale-socket failure, the kind a server causes by closing a connection
// without announcing "Connection: close". Prints one JSON object on stdout.
// Exit: 0 scenario ran, 1 could not run.
'use strict';
const http = require('http');

const [host, portArg, roundsArg] = process.argv.slice(2);
if (!host || !portArg) {
  console.error('usage: node-agent.js HOST PORT [ROUNDS]');
  process.exit(1);
}
const port = Number(portArg);
const rounds = Number(roundsArg || 30);
const maxGap = Number(process.argv[5] === undefined ? 300 : process.argv[5]);
const STALE = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED']);

// mulberry32, fixed seed: the same gaps on every run
let seed = 0x5eed1234;
function rand() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

function once() {
  return new Promise((resolve) => {
    const req = http.request({ host, port, path: '/ping', agent, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ ok: res.statusCode === 200, status: res.statusCode,
        reused: req.reusedSocket, conn: res.headers.connection || null }));
      res.on('error', (err) => resolve({ ok: false, err, reused: req.reusedSocket }));
    });
    req.on('timeout', () => req.destroy(Object.assign(new Error('timeout'), { code: 'ETIMEDOUT' })));
    req.on('error', (err) => resolve({ ok: false, err, reused: req.reusedSocket }));
    req.end();
  });
}

(async () => {
  const out = { client: 'node-http-agent', node: process.version, requests: 0, ok: 0,
    stale_failures: 0, errors: {}, reused: 0, connection_headers: {}, gaps_ms: [] };
  const guard = setTimeout(() => { out.aborted = 'run time limit'; finish(); }, (rounds * 0.3 + 30) * 1000);
  function finish() {
    clearTimeout(guard);
    agent.destroy();
    console.log(JSON.stringify(out));
    console.error(`node-agent: ${out.ok}/${out.requests} ok, ${out.stale_failures} stale-socket failures, ` +
      `${out.reused} on reused sockets, errors ${JSON.stringify(out.errors)}`);
    process.exit(out.requests > 0 && !(out.ok === 0 && out.errors.ECONNREFUSED) ? 0 : 1);
  }
  for (let i = 0; i < rounds; i++) {
    const gap = Math.floor(rand() * (maxGap + 1));
    out.gaps_ms.push(gap);
    await sleep(gap);  // the idle gap is the scenario, not synchronisation
    const r = await once();
    out.requests++;
    if (r.reused) out.reused++;
    if (r.ok) {
      out.ok++;
      const k = r.conn === null ? '(none)' : r.conn;
      out.connection_headers[k] = (out.connection_headers[k] || 0) + 1;
    } else {
      const code = r.err ? (r.err.code || r.err.message) : `HTTP ${r.status}`;
      out.errors[code] = (out.errors[code] || 0) + 1;
      if (r.reused && r.err && STALE.has(r.err.code)) out.stale_failures++;
    }
  }
  finish();
})();
