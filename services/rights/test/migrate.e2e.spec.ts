import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

describe('the migration step', () => {
  it('when migrate.js runs, then the old outbox index is gone, older pending events stay pending, and each data step is recorded and skipped when it runs again', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/t_migrate_${randomBytes(3).toString('hex')}_rights`;
    const db = mongoose.createConnection(url.toString());
    await db.asPromise();
    try {
      // A database as an earlier version left it: events pending in the outbox, no flag, the old index.
      await db.collection('rights').createIndex({ 'outbox.0.id': 1 }, { sparse: true, name: 'outbox_pending' });
      await db.collection('rights').insertOne({ _id: 'r-old', outbox: [{ id: 'e-1' }] } as never);
      await db.collection('rights').insertOne({ _id: 'r-done', outbox: [] } as never);

      // As the Kubernetes Job runs it: production, with the service's secrets.
      const migrate = () =>
        promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'services/rights/dist/migrate.js')], {
          env: {
            PATH: process.env.PATH ?? '',
            RIGHTS_MONGODB_URL: url.toString(),
            LOG_LEVEL: 'warn',
            RIGHT_TOKEN_KEY_SECRET: 'a-right-token-key-secret-of-32-characters',
          },
        });
      await migrate();

      const pending = await db.collection('rights').find({ outboxPending: true }).toArray();
      expect(pending.map((doc) => doc._id)).toEqual(['r-old']);
      // The old index is gone (the indexes every query needs: libs/runtime/test/indexes.e2e.spec.ts).
      const names = (await db.collection('rights').indexes()).map((index) => index.name);
      expect(names).not.toContain('outbox_pending');

      // Recorded (DESIGN.md 10): a second run skips every data step, so a document that would
      // need one now stays as it is, and the records keep the first run's time.
      const ledger = async () =>
        (await db.collection('migrations').find().toArray()).map((step) => [step._id, step.appliedAt]);
      const recorded = await ledger();
      expect(recorded.map(([step]) => step)).toEqual(
        expect.arrayContaining([
          'rights:outbox-pending-flag',
          'rights:buckets',
          'rights:payloads-as-text',
          'rights:drop-by-interval-end',
          expect.stringMatching(/^right_token_keys:sealed-with:/),
        ]),
      );
      await db.collection('rights').insertOne({ _id: 'r-later', outbox: [{ id: 'e-2' }] } as never);
      await migrate();
      expect(await ledger()).toEqual(recorded);
      expect(await db.collection('rights').findOne({ _id: 'r-later' } as never)).not.toHaveProperty('outboxPending');
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
