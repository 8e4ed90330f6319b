import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@rs/testing';
import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

describe('the migration step', () => {
  it('when migrate.js runs twice, then each data step is recorded once and skipped the second time', async () => {
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
      await migrate();

      // Recorded (docs/operations.md, "Migrations"): a second run skips every data step, and the records keep the
      // first run's time.
      const ledger = async () =>
        (await db.collection('migrations').find().toArray()).map((step) => [step._id, step.appliedAt]);
      const recorded = await ledger();
      expect(recorded.map(([step]) => step)).toEqual([expect.stringMatching(/^right_token_keys:sealed-with:/)]);
      await migrate();
      expect(await ledger()).toEqual(recorded);
    } finally {
      await db.dropDatabase();
      await db.close();
    }
  });
});
