import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clientsOf, freePort, REPO_ROOT, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/**
 * A fault is never a 500 (docs/security.md "Bounds"): the MongoDB-wire server restarts while
 * clients write through the gateway. The system runs on a FerretDB of its own (over the local
 * PostgreSQL of deploy/local), so that stopping it disturbs no other test.
 */
// Its own PostgreSQL database (deploy/local/postgres-database.sh): a FerretDB starting reads every
// database of the one it is given, and others' tests create and drop theirs meanwhile.
const DATABASE = `rs_database_restart_${process.pid}`;
const database = (action: 'create' | 'drop') =>
  execFileSync('bash', [path.join(REPO_ROOT, 'deploy/local/postgres-database.sh'), action, DATABASE]);
// 50 connections: with the shared FerretDB's 400, PostgreSQL's 450 (deploy/local/start-servers.sh)
// are never exceeded; and no update the services send has more statements than that.
const POSTGRES = `postgres://postgres@127.0.0.1:5433/${DATABASE}?pool_max_conns=50`;
let ferretdb: ChildProcess | undefined;
let port: number;
const stateDir = mkdtempSync(path.join(tmpdir(), 'ferretdb-'));

async function startFerretDb(): Promise<void> {
  ferretdb = spawn(
    'ferretdb',
    [
      '--handler=postgresql',
      `--postgresql-url=${POSTGRES}`,
      `--state-dir=${stateDir}`,
      `--listen-addr=127.0.0.1:${port}`,
      '--debug-addr=127.0.0.1:0',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { stdio: 'ignore' },
  );
  const failed = once(ferretdb, 'error');
  const listening = () =>
    Promise.race([
      fetch(`http://127.0.0.1:${port}`).then(
        () => true,
        (error: { cause?: { code?: string } }) => error.cause?.code !== 'ECONNREFUSED',
      ),
      failed.then(([error]) => {
        throw new Error(`ferretdb (deploy/local/setup.sh installs it) did not start: ${String(error)}`);
      }),
    ]);
  await vi.waitFor(
    async () => {
      if (!(await listening())) throw new Error('ferretdb does not listen yet');
    },
    { timeout: 10_000, interval: 100 },
  );
}

const fx = systemFixture({
  name: 'database_restart',
  backends: ['catalog', 'rights'],
  env: { RATE_LIMIT_PER_SECOND: '0' },
  seed: { clients: clientsOf({ writer: 'W' }), users: ['w'], skus: { news: {} } },
});
beforeAll(async () => {
  port = await freePort();
  database('create');
  await startFerretDb();
  process.env.MONGODB_URL = `mongodb://127.0.0.1:${port}`;
  await fx.start();
}, 180_000);
afterAll(async () => {
  await fx.stop();
  ferretdb?.kill('SIGKILL');
  database('drop');
});

const WRITER = TestSystem.clientAuthorization('writer');

describe('a restart of the database under write load', () => {
  it('when the MongoDB-wire server is killed and restarted while clients create rights, then no answer is a 500, and every right answered 201 is there', async () => {
    const statuses: number[] = [];
    const created: string[] = [];
    let writing = true;
    const writer = async () => {
      while (writing) {
        const response = await fx.call('POST', '/id/users/w/rights', WRITER, {
          sku: 'news',
          grantorId: 'W',
          timeInterval: '2026-01-01T00:00:00Z/P1D',
        });
        statuses.push(response.status);
        if (response.status === 201) created.push(((await response.json()) as { rightId: string }).rightId);
        else await response.body?.cancel();
      }
    };
    const writers = Array.from({ length: 4 }, writer);
    await expect.poll(() => created.length, { timeout: 10_000 }).toBeGreaterThan(20);
    ferretdb!.kill('SIGKILL');
    await once(ferretdb!, 'exit');
    await new Promise((resolve) => setTimeout(resolve, 12_000)); // the wait is the test's subject: down longer than mongoose buffers an operation (10 s)
    await startFerretDb();
    const createdBefore = created.length;
    // Writes resume once the services' connections find the server again: seconds, longer under
    // the suite's load; this test is about what the answers were, not how soon they came.
    await expect.poll(() => created.length, { timeout: 45_000 }).toBeGreaterThan(createdBefore + 20);
    writing = false;
    await Promise.all(writers);

    // What a 500 would have been, as the services logged it (the assertion's message).
    const failures = ['gateway', 'rights', 'catalog']
      .flatMap((service) => fx.system.service(service).logs)
      .filter((line) => line.includes('request failed'));
    expect(
      statuses.filter((status) => status >= 500 && status !== 503 && status !== 504),
      failures.join('\n'),
    ).toEqual([]);
    expect(statuses.filter((status) => ![201, 503, 504].includes(status))).toEqual([]);
    const listed = await fx.call('GET', '/id/users/w/rights?grantorId=W&limit=1000', WRITER);
    const stored = new Set(
      ((await listed.json()) as { right: Array<{ rightId: string }> }).right.map((r) => r.rightId),
    );
    expect(created.filter((rightId) => !stored.has(rightId))).toEqual([]);
  }, 150_000);
});
