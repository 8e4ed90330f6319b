import { TestSystem, clientsOf, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// docs/api.md (server-side request forgery): without WEBHOOK_ALLOW_PRIVATE_TARGETS, an
// endpoint must be https and resolve to public addresses only.

const A = TestSystem.clientAuthorization('grantor-a');
const fx = systemFixture({
  name: 'webhook_targets',
  backends: ['webhooks'],
  env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' },
  seed: { clients: clientsOf({ 'grantor-a': 'A' }) },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe('webhook target URLs', () => {
  it.each([
    ['plain http', 'http://example.com/hook'],
    ['a loopback address', 'https://127.0.0.1/hook'],
    ['a private address', 'https://10.1.2.3/hook'],
    ['a link-local address (cloud metadata)', 'https://169.254.169.254/latest'],
    ['IPv6 loopback', 'https://[::1]/hook'],
    ['IPv4 mapped in IPv6', 'https://[::ffff:127.0.0.1]/hook'],
    ['IPv4-compatible IPv6', 'https://[::7f00:1]/hook'],
    ['IPv4-translated IPv6', 'https://[::ffff:0:7f00:1]/hook'],
    ['local-use NAT64', 'https://[64:ff9b:1::7f00:1]/hook'],
    ['6to4 of loopback', 'https://[2002:7f00:1::]/hook'],
    ['IPv6 site-local', 'https://[fec0::1]/hook'],
    ['a name that resolves to loopback', 'https://localhost/hook'],
    ['a name that does not resolve', 'https://no-such-host.invalid/hook'],
  ])('when the URL is %s, then 400 and nothing is stored', async (_case, url) => {
    const response = await fx.call('POST', '/webhooks/endpoints', A, { url });
    expect(response.status, await response.clone().text()).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const listed = (await (await fx.call('GET', '/webhooks/endpoints', A)).json()) as { endpoints: unknown[] };
    expect(listed.endpoints).toEqual([]);
  });
});

describe('what a refusal tells', () => {
  it('when a name does not resolve, or resolves to loopback, then the two answers say the same', async () => {
    const reason = async (host: string) => {
      const response = await fx.call('POST', '/webhooks/endpoints', A, { url: `https://${host}/hook` });
      expect(response.status).toBe(400);
      return (await response.text()).replace(host, '<host>');
    };
    expect(await reason('no-such-host.invalid')).toBe(await reason('localhost'));
  });
});
