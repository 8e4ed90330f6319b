import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { connect } from 'node:net';
import { createHttpApp, sendError, toAppError } from '@rs/http';
import { createLogger } from '@rs/logging';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Forwarder, readRequestBody } from '../src/http/forward';

/**
 * Forwarding holds nothing shared for a caller who is not there (docs/security.md
 * "Forwarding"): the gateway's forwarder between real HTTP servers, a service that answers
 * when the test says so.
 */
const SOCKETS = 8;
const TIMEOUT_MS = 1_500;

/**
 * A service that records what it received; `/slow` answers at once but keeps its body open,
 * a byte at a time, until released (a long answer holds its connection without going silent).
 */
class Service {
  readonly received: Array<{ path: string; bodyLength: number; token: string | undefined }> = [];
  private held: Array<() => void> = [];
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.received.push({
        path: req.url!,
        bodyLength: Buffer.concat(chunks).length,
        token: req.headers['x-internal-token'] as string | undefined,
      });
      res.writeHead(200, { 'content-type': 'application/json' });
      if (!req.url!.startsWith('/slow')) return res.end('{"ok":true}');
      res.write('[');
      const beat = setInterval(() => res.write(' '), 200);
      this.held.push(() => {
        clearInterval(beat);
        res.end(']');
      });
    });
  });
  get url(): URL {
    return new URL(`http://127.0.0.1:${(this.server.address() as AddressInfo).port}`);
  }
  release(): void {
    for (const answer of this.held.splice(0)) answer();
  }
}

const service = new Service();
const forwarder = new Forwarder({ timeoutMs: TIMEOUT_MS, maxSockets: SOCKETS });
let gateway: http.Server;
let signed = 0;

beforeAll(async () => {
  service.server.listen(0, '127.0.0.1');
  await once(service.server, 'listening');
  const app: Express = createHttpApp({
    service: 'forwarding-test',
    logger: createLogger('forwarding-test', 'silent'),
    readiness: {},
    routes: (routes) =>
      routes.use(async (req, res) => {
        try {
          const body = await readRequestBody(req, res, {
            takesBody: req.path.startsWith('/takes-body'),
            maxBytes: 1_024,
            timeoutMs: TIMEOUT_MS,
          });
          await forwarder.forward(req, res, service.url, {
            body,
            owner: { kind: 'client', key: req.get('x-owner') ?? 'anyone' },
            sign: async () => `token-${(signed += 1)}`,
          });
        } catch (error) {
          sendError(req, res, toAppError(error));
        }
      }),
  });
  gateway = http.createServer(app);
  gateway.listen(0, '127.0.0.1');
  await once(gateway, 'listening');
});
afterAll(async () => {
  service.release();
  forwarder.close();
  gateway.closeAllConnections();
  service.server.closeAllConnections();
  await new Promise((resolve) => gateway.close(resolve));
  await new Promise((resolve) => service.server.close(resolve));
});

const base = () => `http://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
const get = (path: string, owner: string) => fetch(`${base()}${path}`, { headers: { 'x-owner': owner } });
/** A raw request whose head promises `length` body bytes and sends `sent` of them. */
function promise(
  path: string,
  method: string,
  length: number,
  sent: string,
  owner: string,
): Promise<{ socket: Socket; status: Promise<number> }> {
  const { port } = gateway.address() as AddressInfo;
  const socket = connect({ host: '127.0.0.1', port });
  socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: x\r\nx-owner: ${owner}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${sent}`,
  );
  const status = new Promise<number>((resolve) => {
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (match) resolve(Number(match[1]));
    });
    socket.on('close', () => resolve(0));
  });
  return Promise.resolve({ socket, status });
}

describe('forwarding holds nothing shared', () => {
  it('when a route takes no body, then none is forwarded, and the service connection is free once the answer ends although the client never sent the rest', async () => {
    const attempts = await Promise.all(
      Array.from({ length: 3 * SOCKETS }, (_, i) => promise('/no-body', 'GET', 100, 'x', `attacker-${i}`)),
    );
    expect(await Promise.all(attempts.map((attempt) => attempt.status))).toEqual(Array(3 * SOCKETS).fill(200));
    for (const attempt of attempts) attempt.socket.destroy();
    expect(service.received.filter((one) => one.path === '/no-body').every((one) => one.bodyLength === 0)).toBe(true);
    // Every connection to the service is free: others are answered at once.
    expect((await get('/no-body?after', 'someone-else')).status).toBe(200);
  });

  it('when a body trickles, then it is answered 408 once its time is up, and no service connection was taken meanwhile', async () => {
    const before = service.received.length;
    const trickling = await Promise.all(
      Array.from({ length: 2 * SOCKETS }, (_, i) => promise('/takes-body', 'POST', 200, '{', `trickler-${i}`)),
    );
    expect((await get('/no-body?during-trickle', 'someone-else')).status).toBe(200);
    expect(await Promise.all(trickling.map((attempt) => attempt.status))).toEqual(Array(2 * SOCKETS).fill(408));
    for (const attempt of trickling) attempt.socket.destroy();
    expect(service.received.slice(before).map((one) => one.path)).toEqual(['/no-body?during-trickle']);
  });

  it('when one owner holds its fair share of a service, then its next request is 503, and another owner is still served', async () => {
    const held = Array.from({ length: SOCKETS / 4 }, () => get('/slow', 'greedy'));
    await expect.poll(() => service.received.filter((one) => one.path === '/slow').length).toBe(SOCKETS / 4);
    const over = await get('/slow', 'greedy');
    expect(over.status).toBe(503);
    expect(over.headers.get('retry-after')).toBe('1');
    expect((await get('/no-body?fair', 'modest')).status).toBe(200);
    service.release();
    const answers = await Promise.all(held);
    expect(answers.map((response) => response.status)).toEqual(Array(SOCKETS / 4).fill(200));
    await Promise.all(answers.map((response) => response.text()));
  });

  it('when every connection is taken, then a queued request is answered 503 once the whole wait is up, and the internal token is signed only when it is sent', async () => {
    const owners = Array.from({ length: SOCKETS }, (_, i) => `owner-${i}`);
    const held = owners.map((owner) => get('/slow', owner));
    await expect.poll(() => service.received.filter((one) => one.path === '/slow').length).toBe(SOCKETS / 4 + SOCKETS);
    const signedBefore = signed;
    const queued = await get('/no-body?queued', 'patient');
    expect(queued.status).toBe(503);
    expect(queued.headers.get('retry-after')).toBe('1');
    expect(signed).toBe(signedBefore); // never sent, never signed
    service.release();
    await Promise.all((await Promise.all(held)).map((response) => response.text()));
    const later = await get('/no-body?later', 'patient');
    expect(later.status).toBe(200);
    expect(service.received.at(-1)?.token).toBe(`token-${signed}`);
  });
});
