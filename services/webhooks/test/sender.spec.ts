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
        const result = await sender.post(url, {}, '{}');
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
        expect((await sender.post(url, { 'content-type': 'application/json' }, '{}')).status, url).toBe(204);
      }
      expect(receiver.received).toHaveLength(2);
    } finally {
      sender.close();
    }
  });
});
