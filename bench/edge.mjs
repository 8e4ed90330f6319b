// `npm run bench:edge`: what a hostile client costs the others (docs/security.md), on the
// services as real processes, with every rate limit off so that only the forwarding and the
// reads' bounds stand between the attack and everyone else.
// - Forwarding: another client's list and create, BENCH_EDGE_CALLS of each (default 40), timed
//   before, during and after an attack of 300 anonymous requests that promise a body on a
//   route that takes none and leave with their answer, plus 300 POST bodies trickled a byte
//   every 2 s by one client. Prints p50, p99 and the slowest of each phase (promise: within 5 s).
// - History: GET …/history?limit=1 of a right with 1 entry and of one with 1,000 entries (a
//   14 KiB payload in each), BENCH_EDGE_READS of each (default 200), alternated; prints the
//   ratio of their means (promise: within 2×).
import { connect } from 'node:net';
import { clearInterval, setInterval } from 'node:timers';
import { performance } from 'node:perf_hooks';
import { gatewayCaller, percentile, startBenchSystem, TestSystem } from './system.mjs';

const CALLS = Number(process.env.BENCH_EDGE_CALLS ?? 40);
const READS = Number(process.env.BENCH_EDGE_READS ?? 200);
const ENTRIES = 1_000;

const { system, stop } = await startBenchSystem({ name: 'bench_edge', backends: ['catalog', 'rights'] });

const VICTIM = TestSystem.clientAuthorization('victim');
const ATTACKER = TestSystem.clientAuthorization('attacker');
const gateway = new URL(system.gatewayUrl);
const iso = (offsetMs) => new Date(Date.now() + offsetMs).toISOString();

const asVictim = gatewayCaller(system.gatewayUrl);
const call = (method, route, body, authorization = VICTIM) => asVictim(method, route, authorization, body);

async function timed(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The victim's list and create, one after the other, CALLS of each. */
async function victimLatencies() {
  const list = [];
  const create = [];
  for (let i = 0; i < CALLS; i++) {
    list.push(await timed(() => call('GET', '/id/users/u/rights?grantorId=V&limit=10')));
    create.push(
      await timed(() =>
        call('POST', '/id/users/u/rights', { sku: 'news', grantorId: 'V', timeInterval: `${iso(0)}/P1D` }),
      ),
    );
  }
  return { list, create };
}

/** A request whose head promises `length` body bytes and sends `sent`; `trickle` more bytes every 2 s until it is answered. */
function hostile(head, length, sent, trickle) {
  const socket = connect({ host: gateway.hostname, port: Number(gateway.port) });
  socket.on('error', () => undefined);
  socket.write(`${head}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${sent}`);
  const beat = trickle ? setInterval(() => socket.write(' '), 2_000) : null;
  socket.on('data', () => socket.destroy()); // gone with its answer
  socket.on('close', () => beat && clearInterval(beat));
  return socket;
}

/** Keeps 300 of each attack under way until `stop`, replacing those answered. */
function attack() {
  let running = true;
  const sockets = new Set();
  const keep = (open) => {
    const socket = open();
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      if (running) keep(open);
    });
  };
  for (let i = 0; i < 300; i++) {
    keep(() => hostile('GET /.well-known/jwks.json HTTP/1.1', 100, 'x', false));
    keep(() => hostile(`POST /id/users/u/rights HTTP/1.1\r\nAuthorization: ${ATTACKER}`, 200, '{"sku":', true));
  }
  return () => {
    running = false;
    for (const socket of sockets) socket.destroy();
  };
}

async function historyReads() {
  const payload = { filler: 'x'.repeat(14 * 1024) };
  const right = async () =>
    (
      await call('POST', '/id/users/h/rights', {
        sku: 'news',
        grantorId: 'V',
        state: 'ACTIVE',
        timeInterval: `${iso(-60_000)}/P1D`,
        payload,
      })
    ).rightId;
  const fresh = await right();
  const long = await right();
  for (let i = 1; i < ENTRIES; i++) await call('POST', `/id/users/h/rights/${long}/${i % 2 ? 'suspend' : 'activate'}`);
  // Every change recorded (history follows the events) before any read is timed.
  for (;;) {
    const page = await call('GET', `/id/users/h/rights/${long}/history?limit=1&cursor=${ENTRIES - 1}.0`);
    if (page.history.length === 1) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const times = { fresh: [], long: [] };
  for (let i = 0; i < READS; i++)
    for (const [which, id] of [
      ['fresh', fresh],
      ['long', long],
    ])
      times[which].push(await timed(() => call('GET', `/id/users/h/rights/${id}/history?limit=1`)));
  return times;
}

const summary = (ms) => {
  const sorted = [...ms].sort((a, b) => a - b);
  const f = (v) => v.toFixed(0);
  return `${f(percentile(sorted, 50))} | ${f(percentile(sorted, 99))} | ${f(sorted.at(-1))}`;
};
const mean = (ms) => ms.reduce((sum, v) => sum + v, 0) / ms.length;

try {
  await system.seed({
    clients: [
      { clientId: 'victim', grantorId: 'V' },
      { clientId: 'attacker', grantorId: 'X' },
    ],
    users: ['u', 'h'],
    skus: { news: {} },
  });
  const rows = [];
  rows.push(['before', await victimLatencies()]);
  const stopAttack = attack();
  await new Promise((resolve) => setTimeout(resolve, 3_000)); // the attack at full strength
  rows.push(['during the attack', await victimLatencies()]);
  stopAttack();
  rows.push(['after', await victimLatencies()]);
  console.log('\n| phase | list p50 ms | p99 | slowest | create p50 ms | p99 | slowest |');
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const [phase, { list, create }] of rows) console.log(`| ${phase} | ${summary(list)} | ${summary(create)} |`);

  const history = await historyReads();
  console.log(`\n| history?limit=1 | reads | p50 ms | p99 | slowest | mean ms |`);
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const which of ['fresh', 'long'])
    console.log(
      `| ${which === 'fresh' ? '1 entry' : `${ENTRIES} entries`} | ${READS} | ${summary(history[which])} | ${mean(history[which]).toFixed(1)} |`,
    );
  console.log(
    `\nhistory at ${ENTRIES} entries / at 1 entry: ${(mean(history.long) / mean(history.fresh)).toFixed(2)} (promise: within 2)`,
  );
} finally {
  await stop();
}
