import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';
import { RightStore } from '../src/store/right-store';

/** A right as stored before lists were kept (docs/decisions/0049): in no list. */
const storedBeforeLists = (rightId: string, createdAt: string) => ({
  _id: rightId,
  userId: 'alice',
  grantorId: 'acme',
  serviceProviderId: null,
  sku: 'news-daily',
  state: 'ACTIVE',
  used: false,
  start: new Date('2026-01-01T00:00:00Z'),
  end: new Date('2027-01-01T00:00:00Z'),
  timeInterval: '2026-01-01T00:00:00Z/2027-01-01T00:00:00Z',
  generation: 1,
  createdAt: new Date(createdAt),
  updatedAt: new Date(createdAt),
  payloadJson: null,
  expiresKey: '0:1798761600',
  removed: false,
});

describe('the migration step', () => {
  it('when migrate.js runs twice, then each data step is recorded once and skipped the second time, and rights stored before lists were kept are listed in creation order', async () => {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/t_migrate_${randomBytes(3).toString('hex')}_rights`;
    const db = mongoose.createConnection(url.toString());
    await db.asPromise();
    try {
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
      const older = storedBeforeLists('R1', '2026-02-01T00:00:00Z');
      const newer = storedBeforeLists('R2', '2026-03-01T00:00:00Z');
      await db.collection('rights').insertMany([newer, older] as never[]);
      await migrate();
      const listed = await new RightStore(db).list({
        userId: 'alice',
        grantorOrProvider: 'acme',
        grantorId: 'acme',
        active: null,
        limit: 10,
        after: null,
      });
      expect(listed.items.map((right) => right.rightId)).toEqual(['R2', 'R1']);

      // Recorded (docs/operations.md, "Migrations"): a second run skips every data step, and the records keep the
      // first run's time.
      const ledger = async () =>
        (await db.collection('migrations').find().toArray()).map((step) => [step._id, step.appliedAt]);
      const recorded = await ledger();
      expect(recorded.map(([step]) => step)).toEqual([
        expect.stringMatching(/^right_token_keys:sealed-with:/),
        'rights:placed-in-lists',
      ]);
      await migrate();
      expect(await ledger()).toEqual(recorded);
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
