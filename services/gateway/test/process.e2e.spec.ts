import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, REPO_ROOT, ServiceProcess, TEST_INTERNAL_SECRET } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The gateway as the images run it: its process refuses what it must not run with, and its
// migration Job's entry point creates what its queries need.

const url = new URL(process.env.MONGODB_URL!);
url.pathname = `/t_gateway_process_${randomBytes(3).toString('hex')}`;
const db = mongoose.createConnection(url.toString());
beforeAll(() => db.asPromise());
afterAll(async () => {
  await db.dropDatabase();
  await db.close();
});

describe('shipped secrets never run in production (DESIGN.md 9)', () => {
  it('when the gateway starts in production with a secret this repository ships, then it stops at once naming the variable', async () => {
    const port = await freePort();
    const gateway = new ServiceProcess('gateway', port, {
      NODE_ENV: 'production',
      GATEWAY_PORT: String(port),
      GATEWAY_MONGODB_URL: url.toString(),
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
      ADMIN_CLIENT_ID: 'admin',
      ADMIN_CLIENT_SECRET: 'admin-secret-change-me',
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'none',
    });
    await expect(gateway.start(15_000)).rejects.toThrow(
      /exit code 1[\s\S]*ADMIN_CLIENT_SECRET: is a default or placeholder/,
    );
  });
});

describe("the gateway's migration step", () => {
  it('when migrate.js runs, then the ranges its idempotency keys and revoked tokens are read and purged by have indexes', async () => {
    await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'services/gateway/dist/migrate.js')], {
      env: { PATH: process.env.PATH ?? '', GATEWAY_MONGODB_URL: url.toString(), LOG_LEVEL: 'warn' },
    });
    const indexes = async (collection: string) =>
      Object.fromEntries((await db.collection(collection).indexes()).map((index) => [index.name, index.key]));
    expect(await indexes('idempotency_keys')).toMatchObject({ by_expiry: { expiresAt: 1 } });
    expect(await indexes('revoked_tokens')).toMatchObject({
      by_revocation: { revokedAt: 1 },
      by_expiry: { expiresAt: 1 },
    });
  });
});
