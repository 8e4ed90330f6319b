import { randomBytes } from 'node:crypto';
import { SCOPES } from '@rs/contracts';
import type { JWK } from 'jose';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { DEV_STAFF } from './policy';

/**
 * The people of the development provider (docs/identity-providers.md "Locally"): staff of
 * grantor `acme` who change (`acme-agent`) and who only read (`acme-reader`), an agent of
 * another grantor (`globex-agent`), and an operator (`operator`, admin). Any other login is a user of that connectId, with no staff role.
 */
export const DEV_ACCOUNTS: Record<string, { name: string; roles: string[]; grantor?: string[] }> = {
  'acme-agent': { name: 'Ada Agent (acme, write)', roles: [DEV_STAFF.write], grantor: ['acme'] },
  'acme-reader': { name: 'Rui Reader (acme, read)', roles: [DEV_STAFF.read], grantor: ['acme'] },
  'globex-agent': { name: 'Gil Agent (globex, write)', roles: [DEV_STAFF.write], grantor: ['globex'] },
  operator: { name: 'Olga Operator (admin)', roles: [DEV_STAFF.admin] },
};

export interface OpenIdProviderOptions {
  issuer: string;
  /** The API the access tokens are for (their `aud`). */
  audience: string;
  /** The signing key, private (ES256), with its `kid`. */
  signingKey: JWK;
  /** Where the console may be sent back after sign-in. */
  consoleRedirectUris: string[];
  /** API clients that may ask tokens for themselves (client credentials), with their secrets. */
  machineClients: Array<{ clientId: string; secret: string }>;
  /** Access token lifetime, seconds. */
  accessTokenTtl?: number;
}

/**
 * A real OpenID Provider for development (panva's certified `oidc-provider`): discovery, JWKS,
 * authorization code with PKCE for the console (a public client), refresh tokens, and client
 * credentials for API clients. Access tokens are RFC 9068 JWTs for `audience`, carrying the
 * account's `roles`, `grantor` and `name`, signed with the same key the `/dev/token` shortcut
 * uses. Its sign-in pages are the library's development pages: any login, any password.
 */
/** The API as a resource indicator (RFC 8707). */
const RESOURCE = 'urn:rights-api';

export function openIdProvider(options: OpenIdProviderOptions): Provider {
  const scope = SCOPES.join(' ');
  const configuration: Configuration = {
    clients: [
      {
        client_id: 'rights-console',
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        redirect_uris: options.consoleRedirectUris,
      },
      ...options.machineClients.map(({ clientId, secret }) => ({
        client_id: clientId,
        client_secret: secret,
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        scope,
      })),
    ],
    jwks: { keys: [options.signingKey] },
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    scopes: ['openid', 'offline_access', 'profile', ...SCOPES],
    claims: { openid: ['sub'], profile: ['name'] },
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // A resource indicator is an absolute URI; the tokens' audience is the gateway's own name.
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: () => ({
          scope,
          audience: options.audience,
          accessTokenTTL: options.accessTokenTtl ?? 300,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    // The console runs at the gateway's origin and asks for tokens from there.
    clientBasedCORS: () => true,
    ttl: { AccessToken: options.accessTokenTtl ?? 300, RefreshToken: 8 * 3600 },
    findAccount: (_ctx, id) => ({
      accountId: id,
      claims: () => ({ sub: id, name: DEV_ACCOUNTS[id]?.name ?? id }),
    }),
    // What the gateway reads of a person: its staff roles, its grantors and its name.
    extraTokenClaims: (_ctx, token) => {
      const account =
        'accountId' in token && typeof token.accountId === 'string' ? DEV_ACCOUNTS[token.accountId] : undefined;
      return account
        ? { roles: account.roles, name: account.name, ...(account.grantor ? { grantor: account.grantor } : {}) }
        : {};
    },
    // The console's session is refreshed for a working day (the refresh token's TTL) without an
    // offline token, which a browser app has no use for (docs/console.md).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  };
  const provider = new Provider(options.issuer, configuration);
  provider.use(selfContainedPages);
  return provider;
}

/** What the library's pages import from another host (Google's web fonts): nothing of it is needed. */
const REMOTE_IMPORT = /@import url\(https?:[^)]*\);?/g;

/**
 * The provider's own pages (sign-in, consent, errors) load nothing from another host: their
 * font import is left out and their Content-Security-Policy allows this origin only.
 */
async function selfContainedPages(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
  await next();
  if (typeof ctx.body !== 'string' || !ctx.response.is('html')) return;
  ctx.body = ctx.body.replace(REMOTE_IMPORT, '');
  ctx.set(
    'content-security-policy',
    "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'",
  );
}
