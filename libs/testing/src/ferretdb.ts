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

/**
 * The fields with a GIN index on the local FerretDB's table for `collection` of `database`
 * (deploy/local/ferretdb-indexes.sql): what FerretDB 1.x answers a top-level equality from.
 * Read from PostgreSQL itself, FerretDB's own metadata naming the collection's table.
 */
export async function ferretdbGinFields(database: string, collection: string): Promise<string[]> {
  const quoted = (text: string) => `'${text.replaceAll("'", "''")}'`;
  // From the catalogs, filtered to the collection's own table before any index definition is
  // read: pg_indexes reads the definition of every index it scans, and one of another test's
  // database being dropped meanwhile fails the query ("could not open relation").
  const sql = `SELECT substring(pg_get_indexdef(x.indexrelid) from '_jsonb -> ''([^'']+)''')
    FROM pg_index x
      JOIN pg_class t ON t.oid = x.indrelid
      JOIN pg_namespace n ON n.oid = t.relnamespace
      JOIN pg_class i ON i.oid = x.indexrelid
      JOIN pg_am am ON am.oid = i.relam
      JOIN "${database.replaceAll('"', '""')}"._ferretdb_database_metadata m ON t.relname = m._jsonb ->> 'table'
    WHERE n.nspname = ${quoted(database)} AND m._jsonb ->> '_id' = ${quoted(collection)} AND am.amname = 'gin'`;
  const { stdout } = await promisify(execFile)(psqlPath(), [
    '-h',
    '127.0.0.1',
    '-p',
    PG_PORT,
    '-U',
    'postgres',
    '-d',
    'ferretdb',
    '-tA',
    '-v',
    'ON_ERROR_STOP=1',
    '-c',
    sql,
  ]);
  return stdout.split('\n').filter(Boolean).sort();
}
