import { WebhookReceiver } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Sender } from '../src/net/sender';

// docs/api.md (server-side request forgery), at delivery time: an endpoint that was accepted
// once (a name that resolved to a public address then, or a private address while private
// targets were allowed) is not sent to when its address is not public now.

const receiver = new WebhookReceiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

const senderOf = (allowPrivate: boolean) => new Sender({ timeoutMs: 2_000, allowPrivate, maxSockets: 2 });
const port = () => new URL(receiver.url).port;

describe('the sender at delivery time', () => {
  it('when private targets are not allowed, then a loopback address, by name or literal, is refused before connecting', async () => {
    const sender = senderOf(false);
    try {
      for (const url of [`http://localhost:${port()}/hook`, receiver.url, `http://[::ffff:127.0.0.1]:${port()}/hook`]) {
        const result = await sender.post(url, {}, '{}', 'endpoint-1');
        expect(result.status, url).toBeNull();
        expect(result.error, url).toMatch(/to public addresses only|not a public address/);
      }
      expect(receiver.received).toHaveLength(0);
    } finally {
      sender.close();
    }
  });

  it('when private targets are allowed, then the same endpoints are delivered to', async () => {
    const sender = senderOf(true);
    try {
      for (const url of [`http://localhost:${port()}/hook`, receiver.url]) {
        expect((await sender.post(url, { 'content-type': 'application/json' }, '{}', 'endpoint-1')).status, url).toBe(
          204,
        );
      }
      expect(receiver.received).toHaveLength(2);
    } finally {
      sender.close();
    }
  });
});

describe('connections per endpoint (docs/decisions/0082)', () => {
  it('when one endpoint’s requests hang on every connection it may hold, then another endpoint on the same host and port is answered at once', async () => {
    const shared = new WebhookReceiver((request) => (request.path.startsWith('/hanging') ? 'hang' : { status: 204 }));
    await shared.start();
    const sender = new Sender({ timeoutMs: 3_000, allowPrivate: true, maxSockets: 2 });
    try {
      const hanging = [1, 2, 3].map(() => sender.post(shared.urlOf('/hanging'), {}, '{}', 'endpoint-hanging'));
      await expect.poll(() => shared.received.length).toBe(2);
      const began = Date.now();
      expect(await sender.post(shared.urlOf('/answering'), {}, '{}', 'endpoint-answering')).toEqual({ status: 204 });
      expect(Date.now() - began).toBeLessThan(1_000);
      // The hanging endpoint held two connections at most: its third request waited for one.
      expect(shared.received.filter((request) => request.path === '/hanging')).toHaveLength(2);
      for (const result of await Promise.all(hanging)) expect(result.status).toBeNull();
    } finally {
      sender.close();
      await shared.stop();
    }
  });

  it('when an endpoint answers with a long body, then at most a bound of it is read and the connection is closed', async () => {
    const talkative = new WebhookReceiver(() => ({ status: 200, bodyBytes: 50 * 1024 * 1024 }));
    await talkative.start();
    const sender = new Sender({ timeoutMs: 5_000, allowPrivate: true, maxSockets: 2 });
    try {
      expect(await sender.post(talkative.url, {}, '{}', 'endpoint-1')).toEqual({ status: 200 });
      await expect.poll(() => talkative.sentBytes).toBeGreaterThan(0);
      expect(talkative.sentBytes).toBeLessThan(16 * 1024 * 1024);
    } finally {
      sender.close();
      await talkative.stop();
    }
  });
});
