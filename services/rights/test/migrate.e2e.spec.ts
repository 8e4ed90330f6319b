import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

describe('the migration step', () => {
  it('when migrate.js runs, then every index the rights queries use exists and older pending events stay pending', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/t_migrate_${randomBytes(3).toString('hex')}_rights`;
    const db = mongoose.createConnection(url.toString());
    await db.asPromise();
    try {
      // A database as an earlier version left it: events pending in the outbox, no flag, the old index.
      await db.collection('rights').createIndex({ 'outbox.0.id': 1 }, { sparse: true, name: 'outbox_pending' });
      await db.collection('rights').insertOne({ _id: 'r-old', outbox: [{ id: 'e-1' }] } as never);
      await db.collection('rights').insertOne({ _id: 'r-done', outbox: [] } as never);

      await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'services/rights/dist/migrate.js')], {
        env: { PATH: process.env.PATH ?? '', RIGHTS_MONGODB_URL: url.toString(), LOG_LEVEL: 'warn' },
      });

      const pending = await db.collection('rights').find({ outboxPending: true }).toArray();
      expect(pending.map((doc) => doc._id)).toEqual(['r-old']);
      const names = (await db.collection('rights').indexes()).map((index) => index.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'by_user',
          'by_user_and_grantor',
          'by_service_provider',
          'by_interval_end',
          'by_subscription',
          'outbox_pending_flag',
        ]),
      );
      expect(names).not.toContain('outbox_pending');
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
