import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import {
  AppError,
  hasBody,
  INTERNAL_CHALLENGE,
  INTERNAL_TOKEN_HEADER,
  payloadTooLarge,
  RESOURCE_ID_HEADER,
  sendError,
  serviceUnavailable,
  startClientSpan,
} from '@rs/http';
import { PROJECTED_RIGHT_HEADER } from '@rs/contracts';
import type { Request, Response } from 'express';
import type { Budget } from '../domain/access';

/** Hop-by-hop headers (RFC 9110 7.6.1) are not forwarded; nor are the client's credentials. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);
const NEVER_FORWARDED = new Set(['authorization', INTERNAL_TOKEN_HEADER, RESOURCE_ID_HEADER, 'cookie']);

/** What is sent to the service: the body read already, and who sends it. */
export interface Outgoing {
  /** The whole request body (empty on a route that takes none): never streamed from the client. */
  body: Buffer;
  /** Whose fair share of the service's connections the request takes, and whose Idempotency-Keys it uses. */
  owner: Budget;
  /** The internal token, signed when the request is sent (a wait for a connection cannot expire it). */
  sign: () => Promise<string>;
  /** Sees the service's answer's headers (internal ones included) before the client has them. */
  answered?: ((headers: IncomingHttpHeaders) => void) | undefined;
}

/** What an idempotent request adds and keeps (see `forward`). */
export interface ForwardTap {
  headers: Record<string, string>;
  /** Called with the whole answer before it is sent on to the client. */
  keep: (answer: ForwardedResponse) => Promise<void>;
}

export interface ForwardedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface ForwarderOptions {
  /** UPSTREAM_TIMEOUT_MS: the whole wait for a service's answer, a connection included; and its longest silence. */
  timeoutMs: number;
  /** Connections to each service (256). */
  maxSockets?: number;
  /** Sees every service's answer before the client does (its headers, internal ones included). */
  onAnswer?: (headers: IncomingHttpHeaders) => void;
}

/** The part of a service's connections one owner's requests may hold at once. */
const FAIR_SHARE = 1 / 4;

/**
 * Forwards a request to the service that owns it, over a keep-alive connection pool per
 * service, with the internal token in place of the client's credentials. The service's
 * status, headers (but those meant for the gateway) and body come back unchanged.
 *
 * Forwarding holds nothing shared for a caller who is not there (docs/security.md
 * "Forwarding"): the body was read before (`readRequestBody`), so a connection to the service
 * carries a whole request at once; it is released the moment the answer ends or the client
 * leaves; one owner holds at most a fair share of the connections (503 beyond); and the whole
 * wait, queueing for a connection included, is bounded (503 while queued, 504 once sent).
 */
export class Forwarder {
  private readonly agents = new Map<string, http.Agent>();
  /** Requests under way per service and owner. */
  private readonly inFlight = new Map<string, number>();
  private readonly fairShare: number;

  constructor(private readonly options: ForwarderOptions) {
    this.fairShare = Math.max(1, Math.floor((options.maxSockets ?? 256) * FAIR_SHARE));
  }

  /**
   * With `tap` (idempotent requests): its headers are added, and the answer is also collected
   * and returned (null when the service gave none).
   */
  forward(req: Request, res: Response, upstream: URL, outgoing: Outgoing): Promise<void>;
  forward(
    req: Request,
    res: Response,
    upstream: URL,
    outgoing: Outgoing,
    tap: ForwardTap,
  ): Promise<ForwardedResponse | null>;
  forward(
    req: Request,
    res: Response,
    upstream: URL,
    outgoing: Outgoing,
    tap?: ForwardTap,
  ): Promise<ForwardedResponse | null | void> {
    const share = `${upstream.origin} ${outgoing.owner.kind} ${outgoing.owner.key}`;
    const holding = this.inFlight.get(share) ?? 0;
    if (holding >= this.fairShare) {
      sendError(req, res, serviceUnavailable('too many of your requests are under way; try again shortly', 1));
      return Promise.resolve(null);
    }
    this.inFlight.set(share, holding + 1);

    const headers: OutgoingHttpHeaders = filterHeaders(req.headers, NEVER_FORWARDED);
    if (tap) Object.assign(headers, tap.headers);
    headers['content-length'] = String(outgoing.body.length);
    headers['x-request-id'] = res.locals.requestId;
    headers['x-forwarded-for'] = [req.get('x-forwarded-for'), req.socket.remoteAddress].filter(Boolean).join(', ');
    headers['x-forwarded-proto'] = req.protocol;
    if (req.get('host')) headers['x-forwarded-host'] = req.get('host');

    const span = startClientSpan(req.method, upstream, headers);
    let answered: ForwardedResponse | null = null;
    return new Promise<ForwardedResponse | null | void>((resolve) => {
      // Once: when the client's response is done, or the client went away and nothing it sent
      // is left under way at the service.
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        span.end();
        const left = (this.inFlight.get(share) ?? 1) - 1;
        if (left > 0) this.inFlight.set(share, left);
        else this.inFlight.delete(share);
        resolve(answered);
      };
      /**
       * An idempotent request whose client left after it reached the service: its answer is
       * still awaited and kept (docs/decisions/0051), so a retry is answered as it was instead of
       * running again while the first attempt may still be applied.
       */
      let awaitedForRetry = false;
      const request = http.request({
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.originalUrl,
        headers,
        agent: this.agentFor(upstream),
        timeout: this.options.timeoutMs,
      });
      // Once: the whole-wait deadline and the connection's silence may both fire.
      let failed = false;
      const fail = (error: AppError) => {
        if (failed) return;
        failed = true;
        span.end();
        request.destroy();
        if (awaitedForRetry) return settle();
        if (!res.headersSent) sendError(req, res, error);
        else res.destroy();
      };
      // The whole wait for an answer, from now: queued for a connection, then sent.
      const deadline = setTimeout(
        () =>
          fail(
            request.socket
              ? new AppError(504, 'the service did not answer in time') // an answer names no internal host or port
              : serviceUnavailable('the service is busy; try again shortly', 1),
          ),
        this.options.timeoutMs,
      );
      request.on('socket', () => {
        outgoing.sign().then(
          (token) => {
            if (request.destroyed) return;
            request.setHeader(INTERNAL_TOKEN_HEADER, token);
            // Headers and body in one write; no empty write after the headers of a GET.
            if (outgoing.body.length > 0) request.end(outgoing.body);
            else request.end();
          },
          (error: unknown) => {
            res.locals.log?.error({ err: error }, 'cannot sign an internal token');
            fail(serviceUnavailable('the service is unavailable; try again shortly'));
          },
        );
      });
      request.on('timeout', () => fail(new AppError(504, 'the service did not answer in time')));
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (res.headersSent || res.writableEnded) return;
        res.locals.log?.warn({ err: error, upstream: upstream.origin }, 'service unavailable');
        fail(serviceUnavailable('the service is unavailable; try again shortly'));
      });
      request.on('response', (incoming) => {
        clearTimeout(deadline);
        span.end(incoming.statusCode);
        // The service refused the gateway's own token (a key out of step, a clock far off):
        // the hop between them failed, not the client's credentials (docs/security.md).
        if (incoming.statusCode === 401 && incoming.headers['www-authenticate'] === INTERNAL_CHALLENGE) {
          res.locals.log?.error({ upstream: upstream.origin }, 'the service refused the internal token');
          return fail(serviceUnavailable('the service is unavailable; try again shortly'));
        }
        this.options.onAnswer?.(incoming.headers);
        outgoing.answered?.(incoming.headers);
        if (awaitedForRetry && tap) {
          const chunks: Buffer[] = [];
          incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
          incoming.on('error', () => settle());
          incoming.on('end', () => {
            answered = { status: incoming.statusCode ?? 502, headers: incoming.headers, body: Buffer.concat(chunks) };
            void tap
              .keep(answered)
              .catch(() => undefined)
              .then(settle);
          });
          return;
        }
        res.status(incoming.statusCode ?? 502);
        for (const [name, value] of Object.entries(filterHeaders(incoming.headers, NEVER_ANSWERED))) {
          if (value !== undefined) res.setHeader(name, value);
        }
        // pipe, not stream.pipeline: pipeline builds a DOMException for its AbortSignal on
        // every call, a cost on the hot path for nothing the forwarder needs.
        incoming.on('error', () => (awaitedForRetry ? settle() : res.destroy()));
        if (!tap) {
          incoming.pipe(res);
          return;
        }
        // The answer is kept before the client has it, so a retry sent once it arrived
        // finds it kept (not still running).
        const chunks: Buffer[] = [];
        incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
        incoming.on('end', () => {
          const answer = { status: incoming.statusCode ?? 502, headers: incoming.headers, body: Buffer.concat(chunks) };
          answered = answer;
          void tap
            .keep(answer)
            .catch(() => undefined) // not kept: a retry waits for the lease, then runs again
            .then(() => (awaitedForRetry ? settle() : res.end(answer.body)));
        });
      });
      // Settled when the client's response is done, or the client went away: either way the
      // connection to the service is free again (an answer not wholly read is cut off).
      res.on('close', () => {
        const sent = request.writableEnded; // it may have reached the service
        if (tap && sent && !answered && !failed && !res.writableFinished) {
          awaitedForRetry = true; // the deadline still bounds the wait
          return;
        }
        if (!res.writableFinished || !request.writableFinished) request.destroy();
        settle();
      });
    });
  }

  close(): void {
    for (const agent of this.agents.values()) agent.destroy();
  }

  private agentFor(upstream: URL): http.Agent {
    let agent = this.agents.get(upstream.origin);
    if (!agent) {
      agent = new http.Agent({ keepAlive: true, maxSockets: this.options.maxSockets ?? 256, scheduling: 'lifo' });
      this.agents.set(upstream.origin, agent);
    }
    return agent;
  }
}

/**
 * The body of a request to forward, read whole before any connection to a service is taken
 * (docs/security.md "Forwarding"): empty, unread, on a route that takes none; at most
 * `maxBytes` (413); in no `Content-Encoding` (415); arrived within `timeoutMs` (408, and the
 * connection is closed, its body unread).
 */
export async function readRequestBody(
  req: Request,
  res: Response,
  options: { takesBody: boolean; maxBytes: number; timeoutMs: number },
): Promise<Buffer> {
  if (!options.takesBody || !hasBody(req)) return EMPTY;
  if (Number(req.get('content-length') ?? 0) > options.maxBytes)
    throw payloadTooLarge(`the body exceeds ${options.maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      res.set('Connection', 'close');
      reject(new AppError(408, 'the request body did not arrive in time'));
    }, options.timeoutMs);
  });
  const read = (async () => {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > options.maxBytes) throw payloadTooLarge(`the body exceeds ${options.maxBytes} bytes`);
      chunks.push(chunk);
    }
    return Buffer.concat(chunks);
  })();
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
    read.catch(() => undefined);
  }
}

const EMPTY = Buffer.alloc(0);

/** What a service tells the gateway alone (docs/api.md "Entitlement checks"). */
const NEVER_ANSWERED = new Set([PROJECTED_RIGHT_HEADER]);

function filterHeaders(headers: IncomingHttpHeaders, drop: Set<string>): OutgoingHttpHeaders {
  const connectionListed = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter(Boolean),
  );
  const result: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (HOP_BY_HOP.has(name) || drop.has(name) || connectionListed.has(name)) continue;
    result[name] = value;
  }
  return result;
}
