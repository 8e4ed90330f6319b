import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isPrivateLiteral, isPublicAddress } from '../domain/target';

/**
 * HTTP to webhook endpoints. Every connection resolves the host itself and refuses a
 * non-public address unless private targets are allowed, so a name that resolved to a
 * public address when the endpoint was registered cannot be pointed inside the cluster
 * later (DNS rebinding); an address literal, which skips the lookup, is checked before each
 * attempt (an endpoint registered while private targets were allowed is not sent to once
 * they are not). Redirects are not followed: a 3xx is an answer that is not a 2xx.
 */
export class TargetRefused extends Error {
  override readonly name = 'TargetRefused';
}

/**
 * The addresses of `host`, all of them public unless `allowPrivate`; throws `TargetRefused`
 * otherwise, with one message whether the name does not resolve or resolves to a refused
 * address: what the platform's resolver sees of internal names is nobody's to learn.
 */
export function resolveTarget(host: string, allowPrivate: boolean): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(host, { all: true }, (error, addresses) => {
      const refused = error !== null || (!allowPrivate && addresses.some((one) => !isPublicAddress(one.address)));
      if (refused)
        return reject(new TargetRefused(`${host} cannot be a target: it must resolve, to public addresses only`));
      resolve(addresses);
    });
  });
}

export interface SendResult {
  /** The endpoint's status, or null when it did not answer (timeout, refused, reset, bad address). */
  status: number | null;
  error?: string;
}

/**
 * The most of an answer's body read (docs/api.md "Webhooks"): nothing of it is used, and an
 * endpoint answering gigabytes must not make the dispatcher read them. A longer body ends its
 * connection instead of being read to its end.
 */
const MAX_ANSWER_BYTES = 4 * 1024;
/** A pool not used for this long is closed (its endpoint idle, deleted, or its lanes elsewhere). */
const IDLE_POOL_MS = 60_000;

interface Pool {
  http: http.Agent;
  https: https.Agent;
  usedAt: number;
}

export class Sender {
  /**
   * A connection pool per endpoint (by its id), each of at most `maxSockets` connections:
   * endpoints on one host and port never share connections, so one that hangs holds only its own.
   */
  private readonly pools = new Map<string, Pool>();
  private readonly lookup: LookupFunction;
  private readonly sweeping: NodeJS.Timeout;

  constructor(private readonly options: { timeoutMs: number; allowPrivate: boolean; maxSockets: number }) {
    this.lookup = (host, lookupOptions, callback) => {
      resolveTarget(host, options.allowPrivate).then(
        (addresses) => {
          if (lookupOptions.all) (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        },
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 0),
      );
    };
    this.sweeping = setInterval(() => this.closeIdle(Date.now() - IDLE_POOL_MS), IDLE_POOL_MS);
    this.sweeping.unref();
  }

  /**
   * POSTs `body` through the connections of `pool` (the endpoint's id); resolves with the
   * status, or null with the reason, within the timeout; never throws.
   */
  post(target: string, headers: Record<string, string>, body: string, pool: string): Promise<SendResult> {
    const url = new URL(target);
    // A connection to an address literal skips the lookup: its check is made here.
    if (!this.options.allowPrivate && isPrivateLiteral(url))
      return Promise.resolve({ status: null, error: `${url.hostname} is not a public address` });
    const client = url.protocol === 'https:' ? https : http;
    const agents = this.poolOf(pool);
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const request = client.request(
        url,
        {
          method: 'POST',
          agent: url.protocol === 'https:' ? agents.https : agents.http,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          const status = response.statusCode ?? null;
          // The answer's body is not needed: a short one is read, which keeps the connection for
          // the next attempt; a long one ends the connection once MAX_ANSWER_BYTES are read.
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read <= MAX_ANSWER_BYTES) return;
            finish({ status });
            request.destroy();
          });
          response.on('end', () => finish({ status }));
          response.on('error', (error) => finish({ status: null, error: error.message }));
        },
      );
      const timer = setTimeout(() => {
        finish({ status: null, error: `no answer within ${this.options.timeoutMs} ms` });
        request.destroy();
      }, this.options.timeoutMs);
      request.on('error', (error) => finish({ status: null, error: error.message }));
      request.end(body);
    });
  }

  close(): void {
    clearInterval(this.sweeping);
    for (const pool of this.pools.values()) destroy(pool);
    this.pools.clear();
  }

  private poolOf(key: string): Pool {
    let pool = this.pools.get(key);
    if (!pool) {
      const agentOptions = { keepAlive: true, maxSockets: this.options.maxSockets, lookup: this.lookup };
      pool = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions), usedAt: 0 };
      this.pools.set(key, pool);
    }
    pool.usedAt = Date.now();
    return pool;
  }

  /** Closes the pools last used before `before` with no request under way: their kept connections go. */
  private closeIdle(before: number): void {
    for (const [key, pool] of this.pools)
      if (pool.usedAt < before && inUse(pool.http) + inUse(pool.https) === 0) {
        destroy(pool);
        this.pools.delete(key);
      }
  }
}

const inUse = (agent: http.Agent) => Object.values(agent.sockets).reduce((sum, list) => sum + (list?.length ?? 0), 0);

function destroy(pool: Pool): void {
  pool.http.destroy();
  pool.https.destroy();
}
