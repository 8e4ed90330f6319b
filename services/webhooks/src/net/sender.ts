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

export class Sender {
  private readonly agents: { http: http.Agent; https: https.Agent };

  constructor(private readonly options: { timeoutMs: number; allowPrivate: boolean; maxSockets: number }) {
    const lookup: LookupFunction = (host, lookupOptions, callback) => {
      resolveTarget(host, options.allowPrivate).then(
        (addresses) => {
          if (lookupOptions.all) (callback as (e: null, a: LookupAddress[]) => void)(null, addresses);
          else callback(null, addresses[0]!.address, addresses[0]!.family);
        },
        (error: Error) => callback(error as NodeJS.ErrnoException, '', 0),
      );
    };
    const agentOptions = { keepAlive: true, maxSockets: options.maxSockets, lookup };
    this.agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  }

  /** POSTs `body`; resolves with the status, or null with the reason, within the timeout; never throws. */
  post(target: string, headers: Record<string, string>, body: string): Promise<SendResult> {
    const url = new URL(target);
    // A connection to an address literal skips the lookup: its check is made here.
    if (!this.options.allowPrivate && isPrivateLiteral(url))
      return Promise.resolve({ status: null, error: `${url.hostname} is not a public address` });
    const client = url.protocol === 'https:' ? https : http;
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
          agent: url.protocol === 'https:' ? this.agents.https : this.agents.http,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          // The answer's body is not needed; reading it frees the connection for the next attempt.
          response.resume();
          response.on('end', () => finish({ status: response.statusCode ?? null }));
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
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}
