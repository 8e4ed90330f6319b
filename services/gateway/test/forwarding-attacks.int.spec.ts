import { connect, type Socket } from 'node:net';
import { clientsOf, systemFixture, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Forwarding holds nothing shared for a caller who is not there (docs/security.md
 * "Forwarding"), tried as an attacker would through the gateway of a running system. The
 * rate limits are off here, so that only the forwarding stands between the attack and the
 * other clients.
 */
const fx = systemFixture({
  name: 'gateway_forwarding_attacks',
  backends: ['catalog', 'rights'],
  env: {
    RATE_LIMIT_PER_SECOND: '0',
    RATE_LIMIT_USER_PER_SECOND: '0',
    RATE_LIMIT_OPEN_PER_SECOND: '0',
    BODY_TIMEOUT_MS: '2000',
  },
  seed: { clients: clientsOf({ victim: 'V', attacker: 'X' }), users: ['u'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

const VICTIM = TestSystem.clientAuthorization('victim');
const ATTACKER = TestSystem.clientAuthorization('attacker');
/**
 * The victim's call, bounded: a service holds a request it cannot finish for its 30 s request
 * timeout, so an answer within 15 s shows that the attack held none of its connections.
 */
const victim = (method: string, path: string, body?: unknown) =>
  fetch(`${fx.system.gatewayUrl}${path}`, {
    method,
    headers: { authorization: VICTIM, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });

/** A request whose head promises `length` body bytes and sends `sent` of them; resolves to its status (0 if none). */
function promise(head: string, length: number, sent: string): { socket: Socket; status: Promise<number> } {
  const gateway = new URL(fx.system.gatewayUrl);
  const socket = connect({ host: gateway.hostname, port: Number(gateway.port) });
  socket.write(`${head}\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${sent}`);
  const status = new Promise<number>((resolve) => {
    socket.on('data', (chunk: Buffer) => {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'));
      if (match) {
        resolve(Number(match[1]));
        socket.destroy(); // gone the moment its answer arrives
      }
    });
    socket.on('close', () => resolve(0));
    socket.on('error', () => resolve(0));
  });
  return { socket, status };
}

describe('an attacker cannot hold the connections to a service other clients need', () => {
  it('when 300 anonymous requests promise a body on a route that takes none and leave with their answer, then another client is answered as usual', async () => {
    const attack = Array.from({ length: 300 }, () => promise('GET /.well-known/jwks.json HTTP/1.1', 100, 'x'));
    const statuses = await Promise.all(attack.map((one) => one.status));
    expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
    expect(statuses.every((status) => status === 200 || status === 503)).toBe(true);
    const list = await victim('GET', '/id/users/u/rights?grantorId=V');
    expect(list.status).toBe(200);
  });

  it('when one client trickles 300 POST bodies, then each is answered 408 in time, and another client creates meanwhile', async () => {
    const attack = Array.from({ length: 300 }, () =>
      promise(`POST /id/users/u/rights HTTP/1.1\r\nAuthorization: ${ATTACKER}`, 200, '{"sku":'),
    );
    const created = await victim('POST', '/id/users/u/rights', {
      sku: 'news',
      grantorId: 'V',
      timeInterval: '2026-01-01T00:00:00Z/P1D',
    });
    expect(created.status).toBe(201);
    const statuses = await Promise.all(attack.map((one) => one.status));
    expect(statuses).toEqual(Array(300).fill(408));
    // Nothing of the attacker's was created.
    const listed = await fetch(`${fx.system.gatewayUrl}/id/users/u/rights?grantorId=X`, {
      headers: { authorization: ATTACKER },
    });
    expect(((await listed.json()) as { right: unknown[] }).right).toEqual([]);
  });
});
