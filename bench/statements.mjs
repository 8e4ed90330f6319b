// What a benchmark's operations cost the database, statement by statement: the local
// PostgreSQL under FerretDB keeps pg_stat_statements (deploy/local/start-servers.sh loads it
// where it is installed). A benchmark resets the counts before the window it measures and reads
// them after; each FerretDB collection is a table in the schema of its database, so the rows
// are grouped by database, collection and verb (docs/performance.md).
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

const PORT = process.env.RS_LOCAL_PG_PORT ?? '5433';

/** psql of the newest PostgreSQL installed, or null when there is none. */
function psqlPath() {
  if (!existsSync('/usr/lib/postgresql')) return null;
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  return versions.length === 0 ? null : `/usr/lib/postgresql/${versions.at(-1)}/bin/psql`;
}

function sql(query) {
  const psql = psqlPath();
  if (!psql) return null;
  try {
    return execFileSync(psql, ['-h', '127.0.0.1', '-p', PORT, '-U', 'postgres', '-d', 'ferretdb', '-tAF', '\t'], {
      input: query,
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'ignore'],
    });
  } catch {
    return null;
  }
}

/** Starts counting afresh; false when the server keeps no statement statistics. */
export function resetStatements() {
  return sql('SELECT pg_stat_statements_reset();') !== null;
}

/**
 * The statements run since the reset on the databases whose names hold `prefix` (and every
 * transaction's begin and commit): one row per database, collection and verb, with its calls,
 * the rows they touched and their time.
 */
export function statementsSince(prefix) {
  const text = sql(
    `SELECT query, calls, rows, round(total_exec_time::numeric, 1) FROM pg_stat_statements WHERE query LIKE '%${prefix}%' OR query IN ('begin', 'commit');`,
  );
  if (text === null) return null;
  const groups = new Map();
  for (const line of text.split('\n').filter(Boolean)) {
    const [query, calls, rows, ms] = line.split('\t');
    const verb = query.trim().split(/\s+/)[0].toUpperCase();
    // FerretDB names a database's schema `…<database>` (a test database: `…<prefix>_<run>_<service>`)
    // and a collection's table `<collection>_<hash>`; its transactions name neither.
    const table = /"([^"]+)"\."([^"]+)"/.exec(query);
    const database = table ? table[1].replace(new RegExp(`^.*${prefix}_[0-9a-z]+_`), '') : '(transactions)';
    const key = `${database}\t${table ? table[2].replace(/_[0-9a-f]{8}$/, '') : ''}\t${verb}`;
    const group = groups.get(key) ?? { calls: 0, rows: 0, ms: 0 };
    group.calls += Number(calls);
    group.rows += Number(rows);
    group.ms += Number(ms);
    groups.set(key, group);
  }
  return [...groups]
    .map(([key, group]) => {
      const [database, collection, verb] = key.split('\t');
      return { database, collection, verb, ...group };
    })
    .sort((a, b) => b.calls - a.calls);
}

/** The statements as a Markdown table, with their calls per `unit` of work (`per` of them). */
export function statementsTable(statements, per, unit) {
  if (!statements) return 'no statement statistics (pg_stat_statements is not loaded)';
  const total = statements.reduce((sum, row) => sum + row.calls, 0);
  return [
    `| database | collection | statement | calls | per ${unit} | rows | ms |`,
    '|---|---|---|---:|---:|---:|---:|',
    ...statements.map(
      (row) =>
        `| ${row.database} | ${row.collection} | ${row.verb} | ${row.calls} | ${(row.calls / per).toFixed(2)} | ${row.rows} | ${Math.round(row.ms)} |`,
    ),
    `| all | | | ${total} | ${(total / per).toFixed(2)} | | |`,
  ].join('\n');
}
