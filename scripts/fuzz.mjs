// `npm run fuzz`: a property-based fuzzer (schemathesis, installed from PyPI by the setup
// script) runs against /openapi.json through the gateway of a running system. It
// fails on any 5xx, any status the document does not list for the operation, any response
// whose content type or body the document does not describe, and any schema-valid request
// that is rejected. FUZZ_EXAMPLES bounds the examples per operation (CI runs a few).
// scripts/fuzz_hooks.py gives each request its own client address behind a trusted proxy and
// keeps the fuzzer's own admin client alive, so that the answers come from the logic, not the
// failure throttle: the run fails when 5 % or more of the answers are 429, and prints the share.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchSystem } from '../bench/system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { TEST_ADMIN } = require(path.join(root, 'libs/testing/dist/index.js'));

const schemathesis = path.join(root, '.local/fuzz/bin/st');
if (!existsSync(schemathesis)) {
  console.error('schemathesis is not installed: run `npm run setup` (deploy/local/setup.sh installs it)');
  process.exit(1);
}
const EXAMPLES = process.env.FUZZ_EXAMPLES ?? '25';
const SEED = process.env.FUZZ_SEED ?? '20261122';
const MOST_THROTTLED_SHARE = 0.05;

const { system, stop } = await startBenchSystem({
  // As the images run them: one process per service.
  name: 'fuzz',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler'],
  // The fuzzer is one client sending as fast as it can: no rate limit, quiet logs.
  // The hooks send each request from its own address through X-Forwarded-For.
  env: {
    TRUSTED_PROXIES: '127.0.0.1',
    // Test clocks on (docs/decisions/0048), so that their routes are reached.
    TEST_CLOCKS_MAX: '100',
  },
});
const reports = mkdtempSync(path.join(tmpdir(), 'rs-fuzz-'));
let status;
try {
  // Something for the generated requests to find: a user, a SKU, a client.
  await system.seed({
    users: ['fuzz-user', 'fuzz-payloads'],
    skus: { news: {} },
    clients: [{ clientId: 'fuzz-app', grantorId: 'G' }],
  });
  status = await new Promise((resolve, reject) => {
    const child = spawn(
      schemathesis,
      [
        'run',
        `${system.gatewayUrl}/openapi.json`,
        '--url',
        system.gatewayUrl,
        '--auth',
        `${TEST_ADMIN.clientId}:${TEST_ADMIN.secret}`,
        '--checks',
        'not_a_server_error,status_code_conformance,content_type_conformance,positive_data_acceptance',
        '--max-examples',
        EXAMPLES,
        '--seed',
        SEED,
        '--report',
        'har',
        '--report-dir',
        reports,
        '--no-color',
        // Not the webhooks API: an endpoint at a generated address would have the platform send
        // events there, and tests send traffic only to this machine. Its bad input is covered by
        // services/webhooks/test (URLs, patterns, ids).
        '--exclude-path-regex',
        '^/webhooks',
        ...(process.env.FUZZ_ARGS ?? '').split(' ').filter(Boolean),
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        cwd: root,
        env: {
          ...process.env,
          PYTHONPATH: path.join(root, 'scripts'),
          SCHEMATHESIS_HOOKS: 'fuzz_hooks',
          FUZZ_ADMIN_ID: TEST_ADMIN.clientId,
          FUZZ_RIGHT_OWNER: 'fuzz-payloads:news:G',
          FUZZ_SEED: SEED,
        },
      },
    );
    // schemathesis closes on a pytest-style banner ("=== 3 warnings in 21.66s ===") that CI
    // would read as a test runner's summary with no test run: its banners lose their rules.
    createInterface({ input: child.stdout }).on('line', (line) => {
      const banner = /^=+ (.*) =+$/.exec(line);
      console.log(banner ? `[schemathesis] ${banner[1].toLowerCase().replace(/ in ([\d.]+s)$/, ', $1')}` : line);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve(code ?? 1));
  });
  if (status === 0 && throttledShare(reports) >= MOST_THROTTLED_SHARE) status = 1;
} finally {
  rmSync(reports, { recursive: true, force: true });
  await stop();
}
process.exit(status);

/** The share of the run's answers that were 429, read from schemathesis's HAR report, printed. */
function throttledShare(directory) {
  const entries = readdirSync(directory)
    .filter((name) => name.endsWith('.json'))
    .flatMap((name) => JSON.parse(readFileSync(path.join(directory, name), 'utf8')).log.entries);
  const throttled = entries.filter((entry) => entry.response.status === 429).length;
  const share = entries.length === 0 ? 1 : throttled / entries.length;
  const percent = (100 * share).toFixed(1);
  const verdict = share < MOST_THROTTLED_SHARE ? 'under' : 'NOT under';
  console.log(`[fuzz] ${throttled} of ${entries.length} answers were 429 (${percent} %, ${verdict} 5 %)`);
  return share;
}
