import http from 'node:http';
import type Provider from 'oidc-provider';
import type { DevTokenIssuer } from './issuer';
import { parseTokenRequest } from './token-request';

const MAX_BODY_BYTES = 16 * 1024;

type Answer = { status: number; body: unknown; headers?: Record<string, string> };

/**
 * The development issuer over HTTP:
 * - the OpenID Provider's endpoints (`/.well-known/openid-configuration` names them: `/auth`,
 *   `/token`, `/jwks`, `/interaction/…`);
 * - `GET /.well-known/jwks.json`: the same public key;
 * - `POST /dev/token` (form or JSON: `user`, `client`, `scope`, `expires_in`): an access token
 *   for any user without signing in (`npm run token`), answered in the shape of an OAuth 2.0
 *   token response (RFC 6749 5.1 and 5.2);
 * - `GET /healthz`.
 */
export function issuerServer(issuer: DevTokenIssuer, provider: Provider): http.Server {
  const openId = provider.callback();
  return http.createServer((req, res) => {
    if (!ROUTES[new URL(req.url ?? '/', 'http://issuer').pathname]) return void openId(req, res);
    const failed = (): Answer => invalid(500, 'server_error', 'the token could not be issued');
    void answer(issuer, req)
      .catch(failed)
      .then(({ status, body, headers }) => {
        res
          .writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers })
          .end(JSON.stringify(body));
      });
  });
}

async function answer(issuer: DevTokenIssuer, req: http.IncomingMessage): Promise<Answer> {
  const path = new URL(req.url ?? '/', 'http://issuer').pathname;
  const allowed = ROUTES[path];
  if (!allowed) return invalid(404, 'not_found', `no ${path} here`);
  if (req.method !== allowed)
    return { ...invalid(405, 'invalid_request', `use ${allowed}`), headers: { allow: allowed } };
  if (path === '/healthz') return { status: 200, body: { status: 'ok' } };
  if (path === '/.well-known/jwks.json')
    return { status: 200, body: issuer.jwks, headers: { 'cache-control': 'public, max-age=300' } };
  const fields = await readFields(req);
  if (!fields.ok) return invalid(fields.status, 'invalid_request', fields.reason);
  const request = parseTokenRequest(fields.value);
  if (!request.ok)
    return invalid(400, request.reason.includes('scope') ? 'invalid_scope' : 'invalid_request', request.reason);
  const token = await issuer.issue(request.value);
  return {
    status: 200,
    body: { access_token: token.accessToken, token_type: 'Bearer', expires_in: token.expiresIn, scope: token.scope },
  };
}

const ROUTES: Record<string, string> = { '/dev/token': 'POST', '/.well-known/jwks.json': 'GET', '/healthz': 'GET' };

const invalid = (status: number, error: string, description: string): Answer => ({
  status,
  body: { error, error_description: description },
});

type Fields = { ok: true; value: Record<string, unknown> } | { ok: false; status: number; reason: string };

async function readFields(req: http.IncomingMessage): Promise<Fields> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json' && type !== 'application/x-www-form-urlencoded')
    return { ok: false, status: 415, reason: 'send application/x-www-form-urlencoded or application/json' };
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return { ok: false, status: 413, reason: `the body exceeds ${MAX_BODY_BYTES} bytes` };
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (type === 'application/x-www-form-urlencoded')
    return { ok: true, value: Object.fromEntries(new URLSearchParams(text)) };
  try {
    const value: unknown = JSON.parse(text);
    if (value !== null && typeof value === 'object' && !Array.isArray(value))
      return { ok: true, value: value as Record<string, unknown> };
  } catch {
    // answered below
  }
  return { ok: false, status: 400, reason: 'the body must be a JSON object' };
}
