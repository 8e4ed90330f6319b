import { readFileSync } from 'node:fs';
import { AppError, basicChallenge, type InternalTokenSigner, type Principal } from '@rs/http';
import { Router, type Request, type Response } from 'express';
import { parseBasic, secretsEqual } from '../auth/basic';
import type { Forwarder } from './forward';

export interface Upstreams {
  catalog: URL;
  rights: URL;
  subscriptions: URL;
}

export interface GatewayRoutesOptions {
  realm: string;
  admin: { clientId: string; secret: string } | null;
  upstreams: Upstreams;
  forwarder: Forwarder;
  signer: InternalTokenSigner;
  openApiPath: string;
}

/**
 * Which service owns a path. The catalog's admin API is /catalog/…; a user's rights and
 * subscriptions live under /id/users/{connectId}/rights and …/subs (spec 4).
 */
export function owningService(path: string): keyof Upstreams | null {
  if (path === '/catalog' || path.startsWith('/catalog/')) return 'catalog';
  const match = /^\/id\/users\/[^/]+\/(rights|subs)(?:\/|$)/.exec(path);
  if (match) return match[1] === 'rights' ? 'rights' : 'subscriptions';
  return null;
}

/**
 * Until API clients are stored (the gateway's identity database), the only caller is the
 * admin client of ADMIN_CLIENT_ID/ADMIN_CLIENT_SECRET, with Basic credentials.
 */
function authenticate(req: Request, options: GatewayRoutesOptions): Principal {
  const challenge = basicChallenge(options.realm);
  const credentials = parseBasic(req.get('authorization'));
  if (!credentials) throw new AppError(401, 'authentication required', { 'WWW-Authenticate': challenge });
  const admin = options.admin;
  const known = admin !== null && secretsEqual(credentials.clientId, admin.clientId);
  // The secret is compared even for an unknown client, so timing does not tell which part was wrong.
  const secretOk = secretsEqual(credentials.secret, admin?.secret ?? '');
  if (!known || !secretOk) throw new AppError(401, 'invalid credentials', { 'WWW-Authenticate': challenge });
  return { clientId: credentials.clientId, grantorId: null, admin: true, scheme: 'basic', scopes: [], subject: null };
}

export function gatewayRoutes(options: GatewayRoutesOptions): Router {
  const router = Router();
  const openApi = readFileSync(options.openApiPath, 'utf8');

  router.get('/openapi.json', (_req, res) => {
    res.type('application/json').send(openApi);
  });

  router.use(async (req: Request, res: Response, next) => {
    const service = owningService(req.path);
    if (!service) return next();
    res.locals.routeLabel = `forward:${service}`;
    const principal = authenticate(req, options);
    await options.forwarder.forward(req, res, options.upstreams[service], await options.signer.tokenFor(principal));
  });
  return router;
}
