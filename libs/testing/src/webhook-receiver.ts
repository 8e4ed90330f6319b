import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  /** The path it was sent to (`/hook`, or another path of a receiver shared by several endpoints). */
  path: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/**
 * How the receiver answers a request: a status, after an optional delay, with a body of
 * `bodyBytes` bytes when given (streamed; `sentBytes` counts what the client let it send);
 * `hang` never answers.
 */
export type ReceiverBehaviour = (
  request: ReceivedWebhook,
  count: number,
) => { status: number; delayMs?: number; bodyBytes?: number } | 'hang';

/**
 * A webhook endpoint for tests: a real HTTP server on this machine that records
 * every request it gets and answers as told; it can go down and come back on the same port.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  private server: http.Server | undefined;
  private port = 0;
  private readonly hanging = new Set<http.ServerResponse>();
  private inFlight = 0;
  /** The most requests this receiver has had open at once (received, not yet answered or dropped). */
  maxInFlight = 0;
  /** The bytes of answer bodies the clients took (written before they closed the connection). */
  sentBytes = 0;

  constructor(public behaviour: ReceiverBehaviour = () => ({ status: 204 })) {}

  async start(): Promise<void> {
    const server = http.createServer((req, res) => {
      this.maxInFlight = Math.max(this.maxInFlight, ++this.inFlight);
      res.on('close', () => this.inFlight--);
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const request = {
          path: req.url ?? '/',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          at: Date.now(),
        };
        this.received.push(request);
        const answer = this.behaviour(request, this.received.length);
        if (answer === 'hang') {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        setTimeout(() => {
          if (answer.bodyBytes === undefined) return void res.writeHead(answer.status).end();
          res.writeHead(answer.status, { 'content-length': String(answer.bodyBytes) });
          void this.stream(res, answer.bodyBytes);
        }, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** Another path of this receiver: endpoints on one host and port. */
  urlOf(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Writes `bytes` of filler as fast as the client takes them, until it has all or leaves. */
  private async stream(res: http.ServerResponse, bytes: number): Promise<void> {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let left = bytes;
    while (left > 0 && !res.destroyed) {
      const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= part.length;
      const drained = res.write(part);
      if (!res.destroyed) this.sentBytes += part.length;
      if (!drained) await new Promise((resolve) => (res.once('drain', resolve), res.once('close', resolve)));
    }
    if (!res.destroyed) res.end();
  }

  /** The CloudEvent ids received, each once (receivers de-duplicate by `webhook-id`). */
  ids(): Set<string> {
    return new Set(this.received.map((request) => String(request.headers['webhook-id'])));
  }

  /** Stops answering: connections are refused until `start` again (same port). */
  async stop(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
