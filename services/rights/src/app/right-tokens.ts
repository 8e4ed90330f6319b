import { DomainError, newId, type Principal } from '@rs/contracts';
import type { Clock } from '@rs/time';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type CryptoKey } from 'jose';
import { publishedKeys, rightTokenClaims, signingKey } from '../domain/right-token';
import type { SigningKey, SigningKeyStore } from '../store/signing-key-store';
import type { RightsUseCases } from './rights';

export interface RightTokenOptions {
  /** `iss` of every token: PUBLIC_BASE_URL. */
  issuer: string;
  /** RIGHT_TOKEN_TTL_S: the longest lifetime of a token. */
  ttlS: number;
  clock: Clock;
}

/** Keys are read again this often, so a rotation through one replica reaches the others. */
const KEYS_FRESH_MS = 2_000;

/**
 * Signed right tokens (docs/api.md): a service provider checks a right offline with the
 * published keys instead of calling the platform on every access.
 */
export class RightTokens {
  private keys: { loadedAt: number; keys: Promise<SigningKey[]> } | null = null;
  /** The first key, made once however many tokens are asked for before it exists. */
  private firstKey: Promise<SigningKey> | null = null;
  private readonly signers = new Map<string, Promise<CryptoKey>>();

  constructor(
    private readonly rights: RightsUseCases,
    private readonly store: SigningKeyStore,
    private readonly options: RightTokenOptions,
  ) {}

  /** A token for a right the caller may read (404 otherwise), while it is active (409 otherwise). */
  async issue(principal: Principal, userId: string, rightId: string): Promise<string> {
    const { right } = await this.rights.get(principal, userId, rightId);
    // A provider verifies a token against real time: a right on a test clock (docs/decisions/0048) has none.
    if (right.clockId)
      throw DomainError.conflict(`right ${rightId} lives on test clock ${right.clockId}: it has no signed token`);
    const now = this.options.clock();
    const claims = rightTokenClaims(right, now, { ...this.options, jti: newId(now.getTime()) });
    if (!claims) throw DomainError.conflict(`right ${rightId} is not active now`);
    const key = await this.ensureSigningKey();
    return new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'ES256', typ: 'right+jwt', kid: key.kid })
      .sign(await this.signerOf(key));
  }

  /**
   * The key that signs now; the first one is made when there is none (docs/api.md: at start,
   * so that the JWKS is never empty), once however many ask for it at once. Two replicas
   * starting together on an empty database may each make one: the later signs, and both are
   * published while the earlier one's tokens may be valid.
   */
  async ensureSigningKey(): Promise<SigningKey> {
    return (
      signingKey(await this.current()) ??
      (await (this.firstKey ??= this.rotate().finally(() => (this.firstKey = null))))
    );
  }

  /** The public keys whose tokens may still be valid (`/.well-known/jwks.json`). */
  async jwks(): Promise<{ keys: Array<Record<string, unknown>> }> {
    const published = publishedKeys(await this.current(), this.options.clock(), this.options.ttlS);
    return { keys: published.map((key) => key.publicJwk) };
  }

  /** POST /admin/right-token-keys: admins only (docs/operations.md). */
  async rotateFor(principal: Principal): Promise<string> {
    if (!principal.admin) throw DomainError.notPermitted('only admin clients may start a new signing key');
    return (await this.rotate()).kid;
  }

  /** A new signing key; the previous ones are retired, and published until their tokens have expired. */
  private async rotate(): Promise<SigningKey> {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const kid = newId();
    const publicJwk = { ...(await exportJWK(publicKey)), kid, use: 'sig', alg: 'ES256' };
    const key = { kid, createdAt: this.options.clock(), publicJwk, privateJwk: await exportJWK(privateKey) };
    await this.store.add(key);
    this.keys = null;
    return { ...key, retiredAt: null };
  }

  private current(): Promise<SigningKey[]> {
    const now = Date.now();
    if (!this.keys || now - this.keys.loadedAt > KEYS_FRESH_MS) {
      const keys = this.store.all();
      this.keys = { loadedAt: now, keys };
      keys.catch(() => (this.keys = null));
    }
    return this.keys.keys;
  }

  private signerOf(key: SigningKey): Promise<CryptoKey> {
    let signer = this.signers.get(key.kid);
    if (!signer) {
      signer = importJWK(key.privateJwk, 'ES256') as Promise<CryptoKey>;
      this.signers.set(key.kid, signer);
    }
    return signer;
  }
}
