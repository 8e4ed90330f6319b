import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';

/** The local PostgreSQL behind FerretDB (deploy/local/start-servers.sh). */
const PG_PORT = process.env.RS_LOCAL_PG_PORT ?? '5433';

function psqlPath(): string {
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  const latest = versions.at(-1);
  if (!latest) throw new Error('no PostgreSQL under /usr/lib/postgresql: run deploy/local/setup.sh');
  return `/usr/lib/postgresql/${latest}/bin/psql`;
}

const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;
const identifier = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The rows of one query on the local PostgreSQL's `ferretdb` database, as psql prints them unaligned. */
async function psql(sql: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(psqlPath(), [
    ...['-h', '127.0.0.1', '-p', PG_PORT, '-U', 'postgres', '-d', 'ferretdb'],
    ...['-tA', '-v', 'ON_ERROR_STOP=1', '-c', sql],
  ]);
  return stdout.split('\n').filter(Boolean);
}

/** The table FerretDB keeps `collection` of `database` in, from its own metadata. */
const tableOf = (database: string, collection: string) =>
  `SELECT m._jsonb ->> 'table' FROM ${identifier(database)}._ferretdb_database_metadata m
    WHERE m._jsonb ->> '_id' = ${quoted(collection)}`;

/**
 * The fields with a GIN index on the local FerretDB's table for `collection` of `database`
 * (deploy/local/ferretdb-indexes.sql): what FerretDB 1.x answers a top-level equality from.
 * Read from PostgreSQL itself, FerretDB's own metadata naming the collection's table.
 */
export async function ferretdbGinFields(database: string, collection: string): Promise<string[]> {
  // From the catalogs, filtered to the collection's own table before any index definition is
  // read: pg_indexes reads the definition of every index it scans, and one of another test's
  // database being dropped meanwhile fails the query ("could not open relation").
  const sql = `SELECT substring(pg_get_indexdef(x.indexrelid) from '_jsonb -> ''([^'']+)''')
    FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_am am ON am.oid = i.relam
    WHERE n.nspname = ${quoted(database)} AND t.relname = (${tableOf(database, collection)}) AND am.amname = 'gin'`;
  return (await psql(sql)).sort();
}

/**
 * For each document of `collection` of `database` on the local FerretDB, the bytes its row's
 * value takes as stored and whether PostgreSQL compressed it (docs/decisions/0066).
 */
export async function ferretdbStoredRows(
  database: string,
  collection: string,
): Promise<Array<{ id: string; bytes: number; compressed: boolean }>> {
  const table = (await psql(tableOf(database, collection)))[0];
  if (!table) throw new Error(`no table for ${database}.${collection} on the local FerretDB`);
  const rows = await psql(
    `SELECT _jsonb ->> '_id', pg_column_size(_jsonb), pg_column_compression(_jsonb) IS NOT NULL
      FROM ${identifier(database)}.${identifier(table)}`,
  );
  return rows.map((row) => {
    const [id, bytes, compressed] = row.split('|');
    return { id: id!, bytes: Number(bytes), compressed: compressed === 't' };
  });
}
