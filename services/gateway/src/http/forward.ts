import http, { type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import {
  AppError,
  hasBody,
  INTERNAL_CHALLENGE,
  INTERNAL_TOKEN_HEADER,
  RESOURCE_ID_HEADER,
  sendError,
  serviceUnavailable,
  startClientSpan,
} from '@rs/http';
import { PROJECTED_RIGHT_HEADER } from '@rs/contracts';
import type { Request, Response } from 'express';

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

/** What an idempotent request sends and keeps (see `forward`). */
export interface ForwardTap {
  body: Buffer;
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
  timeoutMs: number;
  maxSockets?: number;
  /** Sees every service's answer before the client does (its headers, internal ones included). */
  onAnswer?: (headers: IncomingHttpHeaders) => void;
}

/**
 * Forwards a request to the service that owns it, over a keep-alive connection pool per
 * service, with the internal token in place of the client's credentials. The service's
 * status, headers (but those meant for the gateway) and body come back unchanged; an unreachable service is 503 with
 * Retry-After, a slow one 504.
 */
export class Forwarder {
  private readonly agents = new Map<string, http.Agent>();

  constructor(private readonly options: ForwarderOptions) {}

  /**
   * With `tap` (idempotent requests): the body was read already and is sent as given, the
   * extra headers are added, and the answer is also collected and returned (null when the
   * service gave none).
   */
  forward(req: Request, res: Response, upstream: URL, internalToken: string): Promise<void>;
  forward(
    req: Request,
    res: Response,
    upstream: URL,
    internalToken: string,
    tap: ForwardTap,
  ): Promise<ForwardedResponse | null>;
  forward(
    req: Request,
    res: Response,
    upstream: URL,
    internalToken: string,
    tap?: ForwardTap,
  ): Promise<ForwardedResponse | null | void> {
    const headers: OutgoingHttpHeaders = filterHeaders(req.headers, NEVER_FORWARDED);
    headers[INTERNAL_TOKEN_HEADER] = internalToken;
    if (tap) {
      Object.assign(headers, tap.headers);
      headers['content-length'] = String(tap.body.length);
      delete headers['transfer-encoding'];
    }
    headers['x-request-id'] = res.locals.requestId;
    headers['x-forwarded-for'] = [req.get('x-forwarded-for'), req.socket.remoteAddress].filter(Boolean).join(', ');
    headers['x-forwarded-proto'] = req.protocol;
    if (req.get('host')) headers['x-forwarded-host'] = req.get('host');

    const span = startClientSpan(req.method, upstream, headers);
    let answered: ForwardedResponse | null = null;
    return new Promise<ForwardedResponse | null | void>((resolve) => {
      const outgoing = http.request({
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.originalUrl,
        headers,
        agent: this.agentFor(upstream),
        timeout: this.options.timeoutMs,
      });
      const fail = (error: AppError) => {
        span.end();
        if (!res.headersSent) sendError(req, res, error);
        else res.destroy();
        resolve(null);
      };
      outgoing.on('timeout', () => {
        outgoing.destroy();
        // DESIGN.md 9: the answer names no internal host or port.
        fail(new AppError(504, 'the service did not answer in time'));
      });
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (outgoing.destroyed && res.headersSent) return resolve(null);
        res.locals.log?.warn({ err: error, upstream: upstream.origin }, 'service unavailable');
        fail(serviceUnavailable('the service is unavailable; try again shortly'));
      });
      outgoing.on('response', (incoming) => {
        span.end(incoming.statusCode);
        // The service refused the gateway's own token (a key out of step, a clock far off):
        // the hop between them failed, not the client's credentials (DESIGN.md 4).
        if (incoming.statusCode === 401 && incoming.headers['www-authenticate'] === INTERNAL_CHALLENGE) {
          incoming.resume();
          res.locals.log?.error({ upstream: upstream.origin }, 'the service refused the internal token');
          return fail(serviceUnavailable('the service is unavailable; try again shortly'));
        }
        this.options.onAnswer?.(incoming.headers);
        res.status(incoming.statusCode ?? 502);
        for (const [name, value] of Object.entries(filterHeaders(incoming.headers, NEVER_ANSWERED))) {
          if (value !== undefined) res.setHeader(name, value);
        }
        // pipe, not stream.pipeline: pipeline builds a DOMException for its AbortSignal on
        // every call, measured at 3-4 % of the gateway's CPU.
        incoming.on('error', () => res.destroy());
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
            .then(() => res.end(answer.body));
        });
      });
      // Settled when the client's response is done, or the client went away (which cancels
      // the forwarded request too).
      res.on('close', () => {
        span.end();
        if (!res.writableFinished) outgoing.destroy();
        resolve(answered);
      });
      if (tap) {
        outgoing.end(tap.body);
      } else if (hasBody(req)) {
        req.on('error', () => outgoing.destroy());
        req.pipe(outgoing);
      } else {
        outgoing.end();
      }
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

/** What a service tells the gateway alone (DESIGN.md 8 "Entitlement checks"). */
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
