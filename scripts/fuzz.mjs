// `npm run fuzz`: a property-based fuzzer (schemathesis, installed from PyPI by the setup
// script) runs against /openapi.json through the gateway of a running system (issue 9). It
// fails on any 5xx, any status the document does not list for the operation, any response
// whose content type or body the document does not describe, and any schema-valid request
// that is rejected. FUZZ_EXAMPLES bounds the examples per operation (CI runs a few).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { provideTestServers, TestSystem, TEST_ADMIN } = require(path.join(root, 'libs/testing/dist/index.js'));

const schemathesis = path.join(root, '.local/fuzz/bin/st');
if (!existsSync(schemathesis)) {
  console.error('schemathesis is not installed: run `npm run setup` (deploy/local/setup.sh installs it)');
  process.exit(1);
}
const EXAMPLES = process.env.FUZZ_EXAMPLES ?? '25';

const servers = await provideTestServers();
process.env.MONGODB_URL = servers.mongoUrl;
process.env.AMQP_URL = servers.amqpUrl;
process.env.RABBITMQ_MANAGEMENT_URL = servers.managementUrl;
const system = await TestSystem.start({
  name: 'fuzz',
  backends: ['catalog', 'rights', 'subscriptions'],
  // The fuzzer is one client sending as fast as it can: no rate limit, quiet logs.
  env: { LOG_LEVEL: 'warn', RATE_LIMIT_PER_SECOND: '0' },
});
let status;
try {
  // Something for the generated requests to find: a user, a SKU, a client.
  await system.seed({ users: ['fuzz-user'], skus: { news: {} }, clients: [{ clientId: 'fuzz-app', grantorId: 'G' }] });
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
        process.env.FUZZ_SEED ?? '20261122',
        '--no-color',
        // Not the webhooks API: an endpoint at a generated address would have the platform send
        // events there, and tests send traffic only to this machine. Its bad input is covered by
        // services/webhooks/test (URLs, patterns, ids).
        '--exclude-path-regex',
        '^/webhooks',
        ...(process.env.FUZZ_ARGS ?? '').split(' ').filter(Boolean),
      ],
      { stdio: ['ignore', 'pipe', 'inherit'], cwd: root },
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
} finally {
  await system.stop();
  await servers.stop();
}
process.exit(status);
