import type { Schemas } from '@rs/client';
import * as oauth from 'oauth4webapi';
import type { ConsoleConfig } from './config';

/**
 * A signed-in staff member, as the gateway sees them (`GET /id/me`, docs/identity-providers.md
 * "Staff"): the page reads no token itself, so the mapping of a provider's claims is the
 * gateway's alone.
 */
export interface StaffMember {
  subject: string;
  name: string;
  /** Their staff level (`read`, `write` or `admin`); null when the gateway sees no staff member. */
  role: 'read' | 'write' | 'admin' | null;
  /** The grantors they act for (none for an admin). */
  grantors: string[];
}

/** Kept across the provider's redirect only: never a token. */
const PENDING = 'rs-console.sign-in';
/**
 * What the console uses: the staff member's identity and name. No `offline_access`: an offline
 * token is a lasting credential a page in a browser has no use for, and many providers refuse it
 * to staff; the session's own refresh token keeps a working day signed in.
 */
const SCOPE = 'openid profile';

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
  /** The refresh under way, which every call meanwhile awaits (a refresh token is spent once: providers rotate it). */
  private refreshing: Promise<void> | null = null;
  private server: oauth.AuthorizationServer | null = null;
  private readonly client: oauth.Client;
  private who: StaffMember | null = null;

  constructor(private readonly config: ConsoleConfig) {
    this.client = { client_id: config.clientId };
  }

  /** Who is signed in, as the gateway said (`signedInAs`); null before sign-in. */
  get member(): StaffMember | null {
    return this.accessToken ? this.who : null;
  }

  /** Keeps what the gateway says of the caller (`GET /id/me`). */
  signedInAs(me: Schemas['Me']): void {
    this.who = {
      subject: me.id,
      name: me.name ?? me.id,
      role: me.staff?.level ?? null,
      grantors: me.staff?.grantors ?? [],
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

  /**
   * The access token to call the API with, refreshed when it is about to expire. The page's
   * calls that find it so at once share one refresh: a second use of the same refresh token
   * would be refused, and a provider may then end the whole session (token reuse detection).
   */
  async token(): Promise<string> {
    if (!this.accessToken) throw new Error('not signed in');
    if (this.refreshToken && Date.now() > this.expiresAt - 30_000)
      await (this.refreshing ??= this.refresh(this.refreshToken).finally(() => (this.refreshing = null)));
    return this.accessToken!;
  }

  private async refresh(refreshToken: string): Promise<void> {
    const server = await this.discover();
    const response = await oauth.refreshTokenGrantRequest(
      server,
      this.client,
      oauth.None(),
      refreshToken,
      this.requests,
    );
    this.keep(await oauth.processRefreshTokenResponse(server, this.client, response));
  }

  signOut(): void {
    this.accessToken = null;
    this.refreshToken = null;
    this.who = null;
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

/**
 * Why a sign-in failed, in the provider's own words when it gave them (`error` and
 * `error_description` of RFC 6749 4.1.2.1 and 5.2), else what the browser said.
 */
export function signInProblem(error: unknown): string {
  const said = error as { error?: unknown; error_description?: unknown; message?: unknown } | null;
  if (said && typeof said.error === 'string') {
    const description = typeof said.error_description === 'string' ? `: ${said.error_description}` : '';
    return `The identity provider refused the sign-in (${said.error}${description}).`;
  }
  const message = typeof said?.message === 'string' ? said.message : String(error);
  if (error instanceof TypeError)
    return `The identity provider could not be reached from this page (${message}); it may not allow this origin.`;
  return message;
}
