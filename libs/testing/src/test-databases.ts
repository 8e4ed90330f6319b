import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';

/**
 * Names of what a test makes on the shared servers (databases, vhosts): `t_<stamp>_<label>_<random>`,
 * the stamp being when it was named (milliseconds, base 36, eight characters), so that what a
 * killed run left behind can be told from what a run under way uses.
 */
export function testName(label: string, now = Date.now()): string {
  const stamp = now.toString(36).padStart(8, '0');
  return `t_${stamp}_${label.replace(/[^A-Za-z0-9]/g, '_')}_${randomBytes(3).toString('hex')}`;
}

const STAMPED = /^t_([0-9a-z]{8})_/;

/** No run of the suite lasts this long: a test database older than this was left by a killed run. */
export const ABANDONED_AFTER_MS = 6 * 3_600_000;

/** Of `names`, the test databases named (by `testName`) more than `ABANDONED_AFTER_MS` before `now`. */
export function abandonedTestDatabases(names: readonly string[], now = Date.now()): string[] {
  return names.filter((name) => {
    const stamp = STAMPED.exec(name)?.[1];
    return stamp !== undefined && now - parseInt(stamp, 36) > ABANDONED_AFTER_MS;
  });
}

/** The databases of the server at `mongoUrl` whose names begin with `prefix`. */
export async function databasesNamed(mongoUrl: string, prefix: string): Promise<string[]> {
  const connection = await mongoose.createConnection(mongoUrl).asPromise();
  try {
    const { databases } = await connection.db!.admin().listDatabases({ nameOnly: true });
    return databases.map(({ name }) => name).filter((name) => name.startsWith(prefix));
  } finally {
    await connection.close();
  }
}

/** Drops the databases `names` of the server at `mongoUrl`. */
export async function dropDatabases(mongoUrl: string, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const connection = await mongoose.createConnection(mongoUrl).asPromise();
  try {
    for (const name of names) await connection.useDb(name, { useCache: false }).dropDatabase();
  } finally {
    await connection.close();
  }
}

/**
 * Drops the test databases killed runs left on the server (a run drops its own when it stops):
 * hundreds of them once made every query of the local FerretDB slower.
 */
export async function dropAbandonedTestDatabases(mongoUrl: string): Promise<string[]> {
  const abandoned = abandonedTestDatabases(await databasesNamed(mongoUrl, 't_'));
  await dropDatabases(mongoUrl, abandoned);
  return abandoned;
}
