import { randomBytes } from 'node:crypto';
import { freePort, ServiceProcess, TEST_INTERNAL_SECRET } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The gateway as the images run it: its process refuses what it must not run with (its
// migration's indexes: libs/runtime/test/indexes.e2e.spec.ts).

const url = new URL(process.env.MONGODB_URL!);
url.pathname = `/t_gateway_process_${randomBytes(3).toString('hex')}`;
const db = mongoose.createConnection(url.toString());
beforeAll(() => db.asPromise());
afterAll(async () => {
  await db.dropDatabase();
  await db.close();
});

describe('shipped secrets never run in production (docs/api.md)', () => {
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
