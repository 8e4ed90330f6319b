// `npm run bench:issuers`: what a flood of tokens with unknown keys costs (docs/identity-providers.md
// "How tokens are verified"). The services as processes trust one issuer (a test provider
// serving its JWKS); BENCH_KID_TOKENS tokens (default 1,000), each signed by it but naming a
// random `kid`, arrive over BENCH_KID_SECONDS (default 10). Prints how often the gateway asked
// the issuer for its keys meanwhile (promise: at most one JWKS fetch per 30 s), as the issuer
// counted them and as the gateway's `gateway_issuer_fetches_total` says, how the flood was
// answered, and whether a good token of the same issuer is still answered at once.
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startBenchSystem } from './system.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { TokenIssuer } = await import(path.join(root, 'libs/testing/dist/index.js'));
const TOKENS = Number(process.env.BENCH_KID_TOKENS ?? 1_000);
const SECONDS = Number(process.env.BENCH_KID_SECONDS ?? 10);

const issuer = new TokenIssuer({ issuer: 'self', audience: 'rights-api' });
await issuer.start();
const { system, stop } = await startBenchSystem({
  name: 'bench_issuers',
  backends: ['catalog', 'rights'],
  env: issuer.env,
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gateway's count of JWKS fetches, every issuer and outcome. */
async function jwksFetches() {
  const text = await (await fetch(system.service('gateway').metricsUrl)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('gateway_issuer_fetches_total{') && line.includes('document="jwks"'))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

try {
  await system.seed({ clients: [{ clientId: 'app', grantorId: 'acme' }], users: ['alice'] });
  const good = await issuer.token('app', 'alice', { scope: 'id.user.right.read' });
  const call = (token) =>
    fetch(`${system.gatewayUrl}/id/users/alice`, { headers: { authorization: `Bearer ${token}` } }).then(
      async (response) => {
        await response.body?.cancel();
        return response.status;
      },
    );
  for (let i = 0; i < 60 && (await call(good)) !== 200; i++) await sleep(500);
  const flood = await Promise.all(
    Array.from({ length: TOKENS }, (_, i) =>
      issuer.token('app', 'alice', { scope: 'id.user.right.read' }, { kid: `flood-${i}-${Math.random()}` }),
    ),
  );
  const fetchedBefore = { issuer: issuer.jwksRequests, gateway: await jwksFetches() };
  const statuses = new Map();
  const begun = performance.now();
  const everyMs = (SECONDS * 1000) / TOKENS;
  await Promise.all(
    flood.map(async (token, i) => {
      await sleep(i * everyMs);
      const status = await call(token);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }),
  );
  const seconds = (performance.now() - begun) / 1000;
  const afterGood = performance.now();
  const goodStatus = await call(good);
  const goodMs = performance.now() - afterGood;
  const fetched = {
    issuer: issuer.jwksRequests - fetchedBefore.issuer,
    gateway: (await jwksFetches()) - fetchedBefore.gateway,
  };
  console.log(
    `${TOKENS} tokens with unknown kids in ${seconds.toFixed(1)} s: answered ${[...statuses]
      .map(([status, count]) => `${count} × ${status}`)
      .join(
        ', ',
      )}; JWKS fetches meanwhile: ${fetched.issuer} at the issuer, ${fetched.gateway} by the gateway's count ` +
      `(promise: at most ${Math.ceil(seconds / 30)}, one per 30 s); a good token afterwards: ${goodStatus} in ${goodMs.toFixed(0)} ms`,
  );
} finally {
  await stop();
  await issuer.close();
}
