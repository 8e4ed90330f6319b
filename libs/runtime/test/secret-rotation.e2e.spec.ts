import { setTimeout as sleep } from 'node:timers/promises';
import { TestSystem, WebhookReceiver, clientsOf, systemFixture } from '@rs/testing';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/operations.md "Rotating a secret", through running processes: the three secrets are
// rotated in three rolling steps (docs/operations.md, "Rotating a secret") while requests flow,
// and the migration re-seals what the old keys sealed in between.

const OLD = {
  INTERNAL_TOKEN_SECRET: 'old-internal-token-secret-0123456789abcdef',
  RIGHT_TOKEN_KEY_SECRET: 'old-right-token-key-secret-0123456789abcdef',
  WEBHOOK_SECRET_KEY: 'old-webhook-secret-key-0123456789abcdefghij',
};
const NEW = {
  INTERNAL_TOKEN_SECRET: 'new-internal-token-secret-0123456789abcdef',
  RIGHT_TOKEN_KEY_SECRET: 'new-right-token-key-secret-0123456789abcdef',
  WEBHOOK_SECRET_KEY: 'new-webhook-secret-key-0123456789abcdefghij',
};
type Secrets = Record<keyof typeof OLD, string>;
/** The environment of one step: `current` signs and seals; `previous` is still accepted and opens. */
const step = (current: Secrets, previous: Secrets | null) =>
  Object.fromEntries(
    Object.entries(current).flatMap(([name, value]) => [
      [name, value],
      [`${name}_PREVIOUS`, previous ? previous[name as keyof Secrets] : undefined],
    ]),
  ) as Record<string, string | undefined>;

const A = TestSystem.clientAuthorization('grantor-a');
const fx = systemFixture({
  name: 'secret_rotation',
  backends: ['catalog', 'rights', 'webhooks'],
  env: OLD,
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['alice'], skus: { news: {} } },
});
const receiver = new WebhookReceiver();
beforeAll(async () => {
  await receiver.start();
  await fx.start();
});
afterAll(async () => {
  await fx.stop();
  await receiver.stop();
});

/** Requests that cross every internal hop, in a loop, with every answer's status kept. */
function traffic(rightId: string) {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const [path, authorization] of [
        [`/id/users/alice/rights/${rightId}`, A],
        ['/catalog/skus/news', fx.system.adminHeaders().authorization!],
        ['/webhooks/endpoints', A],
      ] as const) {
        const response = await fetch(`${fx.system.gatewayUrl}${path}`, { headers: { authorization } }).catch(
          () => null, // the gateway itself restarting: no answer at all
        );
        if (!response) continue;
        statuses.push(response.status);
        // Read to its end: an answer left unread holds its connection until it is collected
        // (undici), and the gateway's restarts reset whatever connections are held.
        await response.arrayBuffer().catch(() => undefined);
      }
      await sleep(20); // the wait is the test's subject: calls paced within the gateway's rate limit per client
    }
  })();
  return {
    statuses,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

/**
 * One rolling step: every service restarted in turn with this environment, callers before
 * the services they call (the gateway first, the rights service before the catalog): the
 * order in which pods signing with a new key meet pods that do not know it yet. Kubernetes
 * rolls each Deployment on its own, so the procedure must hold in any order.
 */
async function roll(env: Record<string, string | undefined>): Promise<void> {
  for (const name of ['gateway', 'rights', 'webhooks', 'catalog']) {
    const service = fx.system.service(name);
    await service.stop();
    service.reconfigure(env);
    await service.start();
  }
}

const signedBy = (secret: string, request: WebhookReceiver['received'][number]) =>
  new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });

describe('rotating the secrets (docs/operations.md)', () => {
  // Three rolling restarts of every service and two migrations each: about 40 s alone, over 60 s
  // with the other test files on both cores.
  it(
    'when the three secrets are rotated in three rolling steps under load, then no request gets a 401, and every sealed key and endpoint secret still opens after the old keys are gone',
    { timeout: 180_000 },
    async () => {
      const right = await fx.call('POST', '/id/users/alice/rights', A, {
        sku: 'news',
        grantorId: 'A',
        state: 'ACTIVE',
        timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/P1D`,
      });
      expect(right.status).toBe(201);
      const { rightId } = (await right.json()) as { rightId: string };
      // Sealed with the old keys: an endpoint's secret, and the right-token signing key made for the first token.
      const endpoint = await fx.call('POST', '/webhooks/endpoints', A, { url: receiver.url, events: ['right.*'] });
      expect(endpoint.status).toBe(201);
      const { secret } = (await endpoint.json()) as { secret: string };
      const token = await fx.call('GET', `/id/users/alice/rights/${rightId}/token`, A);
      expect(token.status, await token.clone().text()).toBe(200);
      const jwksBefore = await (await fetch(`${fx.system.gatewayUrl}/.well-known/jwks.json`)).json();

      const load = traffic(rightId);
      try {
        await roll(step(OLD, NEW)); // 1: the new keys accepted everywhere, the old ones still sign and seal
        await roll(step(NEW, OLD)); // 2: the new keys sign and seal, the old ones still accepted and open
        for (const service of ['rights', 'webhooks']) {
          const first = await fx.system.migrate(service, step(NEW, OLD) as Record<string, string>);
          expect([service, first.code, first.logs.join('\n')]).toEqual([
            service,
            0,
            expect.stringMatching(/"resealed":1\b/),
          ]);
          const second = await fx.system.migrate(service, step(NEW, OLD) as Record<string, string>);
          expect([service, second.code, second.logs.join('\n')]).toEqual([
            service,
            0,
            expect.not.stringMatching(/resealed/),
          ]);
        }
        await roll(step(NEW, null)); // 3: the old keys gone
      } finally {
        await load.stop();
      }
      const counts = Object.fromEntries(
        [...new Set(load.statuses)].map((status) => [status, load.statuses.filter((one) => one === status).length]),
      );
      // A service restarting answers nothing for a moment (the gateway says 502 or 503 for it, a
      // test system has one replica of each); nothing is refused.
      expect(
        Object.keys(counts).filter((status) => !['200', '502', '503'].includes(status)),
        JSON.stringify(counts),
      ).toEqual([]);
      expect(counts[200]).toBeGreaterThan(100);

      // The right-token key sealed with the old key still signs (same key id published); the
      // endpoint's secret sealed with the old key still signs deliveries the receiver verifies.
      const after = await fx.call('GET', `/id/users/alice/rights/${rightId}/token`, A);
      expect(after.status).toBe(200);
      expect(await (await fetch(`${fx.system.gatewayUrl}/.well-known/jwks.json`)).json()).toEqual(jwksBefore);
      const received = receiver.received.length;
      const change = await fx.call('POST', '/id/users/alice/rights', A, {
        sku: 'news',
        grantorId: 'A',
        timeInterval: `${new Date().toISOString()}/P1D`,
      });
      expect(change.status).toBe(201);
      await expect.poll(() => receiver.received.length).toBeGreaterThan(received);
      expect(signedBy(secret, receiver.received.at(-1)!)).toMatchObject({ type: 'right.created' });
    },
  );
});
