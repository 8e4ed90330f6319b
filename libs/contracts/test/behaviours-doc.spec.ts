import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// docs/behaviours.md: every row leads to a function that exists and to a test
// whose name starts as quoted. A renamed function or test fails here, not in a reader's hands.

const ROOT = path.resolve(__dirname, '../../..');
const files = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name === 'dist') return [];
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? files(full) : entry.name.endsWith('.ts') ? [full] : [];
  });
const all = ['libs', 'services', 'tools'].flatMap((dir) => files(path.join(ROOT, dir)));
const sources = all
  .filter((file) => file.includes(`${path.sep}src${path.sep}`))
  .map((file) => readFileSync(file, 'utf8'));
const tests = new Map(
  all
    .filter((file) => file.endsWith('.spec.ts'))
    .map((file) => [file.slice(ROOT.length + 1), readFileSync(file, 'utf8')] as const),
);

const rows = readFileSync(path.join(ROOT, 'docs/behaviours.md'), 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('| ') && !line.startsWith('| rule') && !line.startsWith('| ---'))
  .map((line) =>
    line
      .replace(/^\|\s*|\s*\|$/g, '')
      .split(/\s+\|\s+/)
      .map((cell) => cell.trim()),
  );

/** `rights-api.e2e` or `access (gateway)`: the test file it names. */
function testFile(reference: string): string | undefined {
  const match = /^([\w.-]+)(?: \((\w+)\))?/.exec(reference);
  if (!match) return undefined;
  const [, stem, owner] = match;
  return [...tests.keys()].find(
    (file) =>
      file.endsWith(`${path.sep}${stem}.spec.ts`) && (!owner || file.includes(`${path.sep}${owner}${path.sep}`)),
  );
}

describe('docs/behaviours.md', () => {
  it('has a row for each rule, each with a function and a test', () => {
    expect(rows.length).toBeGreaterThan(80);
    for (const row of rows) expect(row, row.join(' | ')).toHaveLength(3);
  });

  it('when a row names functions, then each exists in the sources', () => {
    for (const [rule, implementedIn] of rows) {
      const names = [...implementedIn!.matchAll(/`([^`]+)`/g)]
        .map((match) => match[1]!)
        .filter((code) => !code.includes('/') && !code.endsWith('.ts'))
        .map((code) => /^([\w.]+)/.exec(code)![1]!.split('.').at(-1)!);
      if (names.length === 0) continue; // "the whole pipeline"
      for (const name of names) {
        const found = sources.some((source) =>
          new RegExp(
            `(function|class|const|interface)\\s+${name}\\b|^\\s*((private|protected|static|async|get)\\s+)*${name}\\s*(=|[<(])`,
            'm',
          ).test(source),
        );
        expect(found, `${rule}: ${name}`).toBe(true);
      }
    }
  });

  it('when a row names a test, then its file exists and holds a test whose name starts so', () => {
    for (const [rule, , checkedBy] of rows) {
      const file = testFile(checkedBy!);
      expect(file, `${rule}: ${checkedBy}`).toBeDefined();
      for (const [, quoted] of checkedBy!.matchAll(/"([^"]+)"/g)) {
        expect(tests.get(file!)!.includes(quoted!), `${rule}: "${quoted}" in ${file}`).toBe(true);
      }
    }
  });
});

describe('docs/decisions/README.md', () => {
  it('when a decision is recorded, then the index links it with its title and status', () => {
    const folder = path.resolve(__dirname, '../../../docs/decisions');
    const index = readFileSync(path.join(folder, 'README.md'), 'utf8');
    const records = readdirSync(folder).filter((name) => /^\d{4}-.*\.md$/.test(name));
    expect(records.length).toBeGreaterThan(40);
    for (const record of records) {
      const text = readFileSync(path.join(folder, record), 'utf8');
      const status = /^Status:\s*(.+)$/m.exec(text)?.[1]?.trim();
      const row = index.split('\n').find((line) => line.includes(`](${record})`));
      expect(row, record).toBeDefined();
      expect(status, `${record} has a status line`).toBeDefined();
      expect(row, record).toContain(status!);
    }
  });
});
