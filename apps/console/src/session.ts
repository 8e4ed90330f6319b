import * as oauth from 'oauth4webapi';
import type { ConsoleConfig } from './config';

/** A signed-in staff member, as their access token names them (docs/identity-providers.md "Staff"). */
export interface StaffMember {
  subject: string;
  name: string;
  /** The staff roles the token carries: `read`, `write` or `admin` (the highest counts). */
  role: 'read' | 'write' | 'admin' | null;
  /** The grantors they act for (none for an admin). */
  grantors: string[];
}

/** Kept across the provider's redirect only: never a token. */
const PENDING = 'rs-console.sign-in';
const SCOPE = 'openid profile offline_access';

/**
 * Sign-in at the staff's OpenID Provider: authorization code with PKCE (RFC 7636) through
 * `oauth4webapi`, a certified client. Tokens live in this object only, in memory: a reload asks
 * the provider again (its own session usually answers at once). Access tokens are refreshed
 * shortly before they expire.
 */
export class Session {
  private accessToken: string | null = null;
  private refreshToken: string | null = null;
  private expiresAt = 0;
  private server: oauth.AuthorizationServer | null = null;
  private readonly client: oauth.Client;

  constructor(private readonly config: ConsoleConfig) {
    this.client = { client_id: config.clientId };
  }

  /** Who the token names; null before sign-in. */
  get member(): StaffMember | null {
    if (!this.accessToken) return null;
    const claims = JSON.parse(decodeBase64Url(this.accessToken.split('.')[1] ?? '')) as Record<string, unknown>;
    const { staff } = this.config;
    const listed = (value: unknown) =>
      Array.isArray(value) ? value.map(String) : typeof value === 'string' ? [value] : [];
    const roles = listed(claimAt(claims, staff.rolesClaim));
    const role = roles.includes(staff.admin)
      ? 'admin'
      : roles.includes(staff.write)
        ? 'write'
        : roles.includes(staff.read)
          ? 'read'
          : null;
    return {
      subject: String(claims.sub ?? ''),
      name: String(claims.name ?? claims.email ?? claims.sub ?? ''),
      role,
      grantors: listed(claimAt(claims, staff.grantorClaim)),
    };
  }

  /** Sends the browser to the provider's sign-in. */
  async signIn(): Promise<void> {
    const server = await this.discover();
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state }));
    const url = new URL(server.authorization_endpoint!);
    url.searchParams.set('client_id', this.client.client_id);
    url.searchParams.set('redirect_uri', this.config.redirectUri);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', SCOPE);
    url.searchParams.set('prompt', 'consent');
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', state);
    location.assign(url);
  }

  /** Completes a sign-in the provider sent the browser back from; false when this is no such return. */
  async completeSignIn(current: URL): Promise<boolean> {
    const pending = sessionStorage.getItem(PENDING);
    if (!pending || (!current.searchParams.has('code') && !current.searchParams.has('error'))) return false;
    sessionStorage.removeItem(PENDING);
    const { verifier, state } = JSON.parse(pending) as { verifier: string; state: string };
    const server = await this.discover();
    const params = oauth.validateAuthResponse(server, this.client, current, state);
    const response = await oauth.authorizationCodeGrantRequest(
      server,
      this.client,
      oauth.None(),
      params,
      this.config.redirectUri,
      verifier,
      this.requests,
    );
    this.keep(await oauth.processAuthorizationCodeResponse(server, this.client, response));
    // The code is spent: the address bar forgets it.
    history.replaceState(null, '', `${current.pathname}${current.hash}`);
    return true;
  }

  /** The access token to call the API with, refreshed when it is about to expire. */
  async token(): Promise<string> {
    if (!this.accessToken) throw new Error('not signed in');
    if (this.refreshToken && Date.now() > this.expiresAt - 30_000) {
      const server = await this.discover();
      const response = await oauth.refreshTokenGrantRequest(
        server,
        this.client,
        oauth.None(),
        this.refreshToken,
        this.requests,
      );
      this.keep(await oauth.processRefreshTokenResponse(server, this.client, response));
    }
    return this.accessToken;
  }

  signOut(): void {
    this.accessToken = null;
    this.refreshToken = null;
  }

  /** A provider on plain HTTP is allowed on this machine only (the development provider). */
  private get requests() {
    const local = ['localhost', '127.0.0.1'].includes(new URL(this.config.issuer ?? 'https://x').hostname);
    return local ? { [oauth.allowInsecureRequests]: true } : {};
  }

  private keep(result: oauth.TokenEndpointResponse): void {
    this.accessToken = result.access_token;
    this.refreshToken = result.refresh_token ?? this.refreshToken;
    this.expiresAt = Date.now() + (result.expires_in ?? 300) * 1000;
  }

  private async discover(): Promise<oauth.AuthorizationServer> {
    if (this.server) return this.server;
    if (!this.config.issuer) throw new Error('no identity provider is configured for the console (CONSOLE_ISSUER)');
    const issuer = new URL(this.config.issuer);
    const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...this.requests });
    this.server = await oauth.processDiscoveryResponse(issuer, response);
    return this.server;
  }
}

/** A claim by its dotted path (`realm_access.roles`), or by a name that holds dots itself. */
function claimAt(claims: Record<string, unknown>, path: string): unknown {
  if (path in claims) return claims[path];
  return path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], claims);
}

function decodeBase64Url(text: string): string {
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/');
  const bytes = Uint8Array.from(atob(base64), (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}
