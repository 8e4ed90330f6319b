import { createHash } from 'node:crypto';
import type { mongo } from 'mongoose';
import { isDuplicateKey } from './items';

/** Where a service's database records the migration steps applied to it (docs/operations.md). */
export const MIGRATIONS_COLLECTION = 'migrations';

interface AppliedStep {
  _id: string;
  appliedAt: Date;
  durationMs: number;
}

/**
 * Runs a migration step unless the database records it as applied, then records it: a step
 * runs once per database however many pods or Jobs run the migration, and what ran, when and
 * for how long stays in `migrations` (docs/operations.md). Steps are idempotent, so two migrations
 * that race both run one harmlessly and one record stays. Name a step for what it does and,
 * when its work depends on a setting (an index set, a key), for that too: a changed setting is
 * a new step. Returns whether the step ran.
 */
export async function applyOnce(db: mongo.Db, step: string, run: () => Promise<void>): Promise<boolean> {
  const ledger = db.collection<AppliedStep>(MIGRATIONS_COLLECTION);
  if (await ledger.findOne({ _id: step }, { projection: { _id: 1 } })) return false;
  const started = Date.now();
  await run();
  try {
    await ledger.insertOne({ _id: step, appliedAt: new Date(), durationMs: Date.now() - started });
  } catch (error) {
    if (!isDuplicateKey(error)) throw error;
  }
  return true;
}

/** A short, stable fingerprint of a step's setting (an index set), for its name. */
export const fingerprintOf = (setting: unknown): string =>
  createHash('sha256').update(JSON.stringify(setting)).digest('base64url').slice(0, 12);
