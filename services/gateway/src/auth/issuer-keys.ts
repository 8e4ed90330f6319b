import { createPublicKey, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, customFetch, type FetchImplementation, type RemoteJWKSetOptions } from 'jose';
import type { Logger } from '@rs/logging';
import { issuerFetches } from './metrics';

/** Asymmetric algorithms only: `none` and HMAC (a shared secret) are never accepted. */
export const ALGORITHMS_BY_KEY: Record<string, string[]> = {
  rsa: ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'],
  'rsa-pss': ['PS256', 'PS384', 'PS512'],
  ec: ['ES256', 'ES384', 'ES512'],
  ed25519: ['EdDSA', 'Ed25519'],
};
const ALL_ALGORITHMS = [...new Set(Object.values(ALGORITHMS_BY_KEY).flat())];

/** The issuer's keys are not known yet: it was unreachable since the gateway started (503). */
export class IssuerUnavailable extends Error {
  override readonly name = 'IssuerUnavailable';
}

export interface IssuerKeysOptions {
  issuer: string;
  jwksUri?: string | undefined;
  publicKey?: string | undefined;
  logger: Logger;
  /** How long a fetch may take. */
  timeoutMs?: number;
  /** How often the discovery document and keys are fetched again. */
  refreshMs?: number;
  /** How soon an issuer unreachable at start is tried again. */
  retryMs?: number;
}

type RemoteKeys = ReturnType<typeof createRemoteJWKSet>;

/**
 * One trusted issuer's signing keys (docs/identity-providers.md): a PEM public key, its JWKS
 * at `jwksUri`, or the `jwks_uri` its discovery document names. Remote keys are fetched at
 * start and then by jose's `createRemoteJWKSet`: again when they are an hour old, and when a
 * token names a `kid` they lack, at most once per 30 s (its cooldown), whatever the tokens
 * say. An issuer unreachable at start is tried again in the background; until it is reached
 * its tokens are answered 503 and nothing else waits for it.
 */
export class IssuerKeys {
  private remote: RemoteKeys | null = null;
  private readonly local: KeyObject | null;
  readonly algorithms: string[];
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly options: IssuerKeysOptions) {
    if (options.publicKey) {
      this.local = createPublicKey(options.publicKey);
      this.algorithms = ALGORITHMS_BY_KEY[this.local.asymmetricKeyType ?? ''] ?? [];
      if (this.algorithms.length === 0)
        throw new Error(`${options.issuer}: unsupported public key type ${this.local.asymmetricKeyType}`);
    } else {
      this.local = null;
      this.algorithms = ALL_ALGORITHMS;
    }
  }

  /** Fetches the keys once; an unreachable issuer is retried in the background. Never throws. */
  async start(): Promise<void> {
    if (this.local) return;
    await this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** What `jwtVerify` needs: the key, or the key set's lookup. */
  get key(): KeyObject | RemoteKeys {
    if (this.local) return this.local;
    if (!this.remote)
      throw new IssuerUnavailable(`the identity provider ${this.options.issuer} has not been reached yet`);
    return this.remote;
  }

  private async connect(): Promise<void> {
    const { issuer, logger } = this.options;
    try {
      const jwksUri = this.options.jwksUri ?? (await this.discover());
      const keys = createRemoteJWKSet(new URL(jwksUri), this.remoteOptions());
      await keys.reload();
      this.remote = keys;
      this.schedule(this.options.refreshMs ?? 3_600_000);
      logger.info({ issuer, jwks_uri: jwksUri }, 'identity provider reached');
    } catch (error) {
      // Keys already known stay in use; an issuer never reached answers 503 meanwhile.
      logger.warn({ err: error, issuer }, 'cannot reach the identity provider; trying again');
      this.schedule(this.remote ? (this.options.refreshMs ?? 3_600_000) : (this.options.retryMs ?? 5_000));
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.connect(), ms);
    this.timer.unref();
  }

  /** OpenID Connect Discovery 1.0: the document must name this very issuer. */
  private async discover(): Promise<string> {
    const { issuer } = this.options;
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const response = await this.fetchCounted('discovery', url, { signal: AbortSignal.timeout(this.timeoutMs) });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    const document = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    if (document.issuer !== issuer) throw new Error(`${url} names the issuer ${String(document.issuer)}`);
    if (typeof document.jwks_uri !== 'string') throw new Error(`${url} names no jwks_uri`);
    return document.jwks_uri;
  }

  private remoteOptions(): RemoteJWKSetOptions {
    const counted: FetchImplementation = (url, options) => this.fetchCounted('jwks', url, options);
    return {
      timeoutDuration: this.timeoutMs,
      cooldownDuration: 30_000,
      cacheMaxAge: this.options.refreshMs ?? 3_600_000,
      [customFetch]: counted,
    };
  }

  private async fetchCounted(document: 'discovery' | 'jwks', url: string, options: RequestInit): Promise<Response> {
    try {
      const response = await fetch(url, options);
      issuerFetches.inc({ issuer: this.options.issuer, document, outcome: response.ok ? 'ok' : 'error' });
      return response;
    } catch (error) {
      issuerFetches.inc({ issuer: this.options.issuer, document, outcome: 'error' });
      throw error;
    }
  }

  private get timeoutMs(): number {
    return this.options.timeoutMs ?? 2_000;
  }
}
