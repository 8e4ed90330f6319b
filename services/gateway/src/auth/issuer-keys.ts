import { createPublicKey, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Logger } from '@rs/logging';
import { systemClock, type Clock } from '@rs/time';
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
  /** The least time between two fetches for a `kid` the keys lack, whatever each answered. */
  unknownKidCooldownMs?: number;
  clock?: Clock;
}

const HOUR_MS = 3_600_000;
/** A key set larger than this is not one (a provider publishes a handful of keys). */
const MAX_JWKS_BYTES = 256 * 1024;

/**
 * One trusted issuer's signing keys (docs/identity-providers.md): a PEM public key, its JWKS
 * at `jwksUri`, or the `jwks_uri` its discovery document names. Remote keys are fetched at
 * start, then every `refreshMs` (an hour), and when a token names a `kid` they lack, at most
 * once per cooldown (30 s) whether that fetch succeeds or fails, whatever the tokens say. A
 * failed fetch changes nothing: the keys last fetched keep verifying until one succeeds. An
 * issuer unreachable at start is tried again in the background; until it is reached its
 * tokens are answered 503 and nothing else waits for it.
 */
export class IssuerKeys {
  private known: JWTVerifyGetKey | null = null;
  private readonly local: KeyObject | null;
  readonly algorithms: string[];
  private jwksUri: string | null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  /** The fetch under way, which every token naming an unknown `kid` meanwhile awaits. */
  private fetching: Promise<void> | null = null;
  private lastUnknownKidFetch = Number.NEGATIVE_INFINITY;
  private readonly clock: Clock;

  constructor(private readonly options: IssuerKeysOptions) {
    this.clock = options.clock ?? systemClock;
    this.jwksUri = options.jwksUri ?? null;
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
    await this.refresh();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** What `jwtVerify` needs: the key, or the lookup in the key set. */
  get key(): KeyObject | JWTVerifyGetKey {
    return this.local ?? this.lookup;
  }

  private readonly lookup: JWTVerifyGetKey = async (header, token) => {
    if (!this.known)
      throw new IssuerUnavailable(`the identity provider ${this.options.issuer} has not been reached yet`);
    try {
      return await this.known(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
      // A key the set lacks may be a new one: fetched again, once per cooldown at most.
      await this.refetchForUnknownKid();
      return this.known(header, token);
    }
  };

  private async refetchForUnknownKid(): Promise<void> {
    if (this.fetching) return this.fetching;
    const now = this.clock().getTime();
    if (now - this.lastUnknownKidFetch < (this.options.unknownKidCooldownMs ?? 30_000)) return;
    this.lastUnknownKidFetch = now;
    await this.fetchKeys(false);
  }

  /** Discovery (unless `jwksUri` is given) and the keys; scheduled again, hourly or sooner while never reached. */
  private async refresh(): Promise<void> {
    await this.fetchKeys(true);
    const reached = this.known !== null;
    this.schedule(reached ? (this.options.refreshMs ?? HOUR_MS) : (this.options.retryMs ?? 5_000));
  }

  /** One fetch at a time; a failure is logged and leaves the keys as they were. */
  private fetchKeys(discover: boolean): Promise<void> {
    this.fetching ??= (async () => {
      const { issuer, logger } = this.options;
      try {
        const jwksUri = this.options.jwksUri ?? (discover || !this.jwksUri ? await this.discover() : this.jwksUri);
        const keys = await this.fetchJwks(jwksUri);
        const first = this.known === null;
        this.jwksUri = jwksUri;
        this.known = keys;
        if (first) logger.info({ issuer, jwks_uri: jwksUri }, 'identity provider reached');
      } catch (error) {
        logger.warn(
          { err: error, issuer },
          this.known
            ? 'cannot refresh the identity provider’s keys; the keys fetched last stay in use'
            : 'cannot reach the identity provider; trying again',
        );
      } finally {
        this.fetching = null;
      }
    })();
    return this.fetching;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.refresh(), ms);
    this.timer.unref();
  }

  /** OpenID Connect Discovery 1.0: the document must name this very issuer. */
  private async discover(): Promise<string> {
    const { issuer } = this.options;
    const url = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    const document = (await this.fetchJson('discovery', url)) as { issuer?: unknown; jwks_uri?: unknown };
    if (document.issuer !== issuer) throw new Error(`${url} names the issuer ${String(document.issuer)}`);
    if (typeof document.jwks_uri !== 'string') throw new Error(`${url} names no jwks_uri`);
    return document.jwks_uri;
  }

  private async fetchJwks(url: string): Promise<JWTVerifyGetKey> {
    // createLocalJWKSet refuses what is not a key set (JWKSInvalid): the keys then stay as they were.
    return createLocalJWKSet((await this.fetchJson('jwks', url)) as JSONWebKeySet);
  }

  private async fetchJson(document: 'discovery' | 'jwks', url: string): Promise<unknown> {
    let outcome = 'error';
    try {
      const response = await fetch(url, {
        headers: { accept: 'application/json' },
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 2_000),
      });
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      const text = await response.text();
      if (text.length > MAX_JWKS_BYTES) throw new Error(`${url} answered more than ${MAX_JWKS_BYTES} bytes`);
      const parsed: unknown = JSON.parse(text);
      outcome = 'ok';
      return parsed;
    } finally {
      issuerFetches.inc({ issuer: this.options.issuer, document, outcome });
    }
  }
}
