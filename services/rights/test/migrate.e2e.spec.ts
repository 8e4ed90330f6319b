import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

describe('the migration step', () => {
  it('when migrate.js runs against an empty database, then every index the rights queries use exists', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/t_migrate_${randomBytes(3).toString('hex')}_rights`;
    await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'services/rights/dist/migrate.js')], {
      env: { PATH: process.env.PATH ?? '', RIGHTS_MONGODB_URL: url.toString(), LOG_LEVEL: 'warn' },
    });
    const db = mongoose.createConnection(url.toString());
    await db.asPromise();
    try {
      const names = (await db.collection('rights').indexes()).map((index) => index.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'by_user',
          'by_user_and_grantor',
          'by_service_provider',
          'by_interval_end',
          'by_subscription',
          'outbox_pending',
        ]),
      );
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
