import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

describe("the gateway's migration step", () => {
  it('when migrate.js runs, then the ranges its idempotency keys and revoked tokens are read and purged by have indexes', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/t_migrate_${randomBytes(3).toString('hex')}_gateway`;
    const db = mongoose.createConnection(url.toString());
    await db.asPromise();
    try {
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
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
