import type { Clock } from '@rs/time';
import { readFileSync } from 'node:fs';
import {
  ClientBody,
  ClientId,
  ConnectId,
  Jti,
  RevocationBody,
  ROUTES,
  type Principal,
  type RouteOwner,
} from '@rs/contracts';
import {
  admitsJson,
  AppError,
  basicChallenge,
  jsonBody,
  notAcceptable,
  notFound,
  parseBody,
  parseParam,
  sendDone,
  serveRoutes,
  unauthorized,
  type InternalTokenSigner,
} from '@rs/http';
import { Router, type Request, type RequestHandler } from 'express';
import { type Authenticator, bearerChallenge, insufficientScopeChallenge, isBearer } from '../auth/authenticator';
import { hashSecret } from '../auth/secrets';
import {
  authorize,
  classify,
  grantorFilter,
  listRule,
  redirectLocation,
  type Operation,
  type Refusal,
} from '../domain/access';
import type { ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import type { UserStore } from '../store/user-store';
import type { Forwarder } from './forward';
import { idempotentForwarder, type IdempotencyOptions } from './idempotent';
import { takesIdempotencyKey } from '../domain/idempotency';
import { rateLimit, type RateLimitOptions } from './rate-limit';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      operation: Operation | null;
    }
  }
}

/** Where callers authenticate: the first segment of every route of the table that needs a caller. */
const AUTHENTICATED_PREFIXES = [
  ...new Set(ROUTES.filter((route) => route.caller !== 'none').map((route) => `/${route.path.split('/')[1]}`)),
];

/** Who calls a service for a route that needs no caller. */
const GATEWAY: Principal = {
  clientId: 'service:gateway',
  grantorId: null,
  admin: false,
  scheme: 'service',
  scopes: [],
  subject: null,
};

export interface GatewayRoutesOptions {
  realm: string;
  publicBaseUrl: string;
  authenticator: Authenticator;
  clients: ClientStore;
  users: UserStore;
  revocations: RevocationStore;
  upstreams: Record<Exclude<RouteOwner, 'gateway'>, URL>;
  forwarder: Forwarder;
  signer: InternalTokenSigner;
  rateLimit: RateLimitOptions;
  openApiPath: string;
  clock: Clock;
  idempotency: Omit<IdempotencyOptions, 'forwarder'>;
}

export function gatewayRoutes(options: GatewayRoutesOptions): Router {
  const { realm, authenticator } = options;
  const router = Router();
  const openApi = readFileSync(options.openApiPath, 'utf8');
  const idempotent = idempotentForwarder({ ...options.idempotency, forwarder: options.forwarder });

  // Which route of the table the request is: once, for every step below.
  router.use((req, res, next) => {
    res.locals.operation = classify(req.method, req.path);
    next();
  });
  // Everything but the OpenAPI document needs a caller; each caller is rate limited.
  const authenticate: RequestHandler = async (req, res, next) => {
    const authorization = req.get('authorization');
    // DESIGN.md 3 "Challenges": a Bearer header on a Basic-only endpoint gets the Basic challenge.
    if (isBearer(authorization) && (res.locals.operation?.bearer ?? null) === null)
      throw unauthorized('this operation needs Basic credentials', basicChallenge(realm));
    res.locals.principal = await authenticator.authenticate(authorization, req.socket.remoteAddress ?? '');
    next();
  };
  router.use(AUTHENTICATED_PREFIXES, authenticate, rateLimit(options.rateLimit, options.clock));
  // DESIGN.md 3 "Content negotiation": after authentication, before anything is done.
  router.use((req, res, next) => {
    if (res.locals.operation?.json && !admitsJson(req))
      return next(notAcceptable('this operation answers application/json, which the Accept header excludes'));
    next();
  });
  // spec 5: the one decision of who may call what; then what a service owns is forwarded.
  router.use(async (req, res, next) => {
    const operation = res.locals.operation;
    if (!operation) return next();
    // A route open to anyone (the JWKS) reaches its service as the gateway itself.
    const open = operation.caller === 'none';
    const principal = open ? GATEWAY : res.locals.principal;
    if (!open) {
      const refusal = authorize(operation, principal);
      if (refusal) throw refused(refusal, realm);
    }
    if (operation.owner === 'gateway') return next();
    res.locals.routeLabel = `forward:${operation.owner}`;
    if (operation.connectId !== null) {
      const connectId = parseParam(ConnectId, 'connectId', operation.connectId);
      if (!(await options.users.find(connectId))) throw notFound(`no user ${connectId}`);
    }
    const rule = listRule(operation, principal, grantorFilter(new URL(req.originalUrl, 'http://gateway').searchParams));
    if (rule && 'redirectWith' in rule) {
      res.redirect(307, redirectLocation(options.publicBaseUrl, req.originalUrl, operation.list!, rule.redirectWith));
      return;
    }
    if (rule) throw refused(rule, realm);
    const upstream = options.upstreams[operation.owner];
    const token = await options.signer.tokenFor(principal);
    const key = req.get('idempotency-key');
    if (key !== undefined && takesIdempotencyKey(req.method, req.path))
      return idempotent(req, res, upstream, token, principal.clientId, key);
    await options.forwarder.forward(req, res, upstream, token);
  });
  // The gateway parses only its own bodies; forwarded ones stream through untouched.
  router.use('/admin', jsonBody('16kb'));

  const clientParam = (req: Request) => parseParam(ClientId, 'clientId', req.params.clientId);
  const connectIdParam = (req: Request) => parseParam(ConnectId, 'connectId', req.params.connectId);
  // DESIGN.md 3 "Users": the user directory.
  const userView = (connectId: string, createdAt: Date) => ({
    connectId,
    href: `${options.publicBaseUrl}/id/users/${encodeURIComponent(connectId)}`,
    createdAt: createdAt.toISOString(),
  });

  // The gateway's own routes (DESIGN.md 6); who may call them was decided above.
  serveRoutes(router, 'gateway', {
    getOpenApi: (_req, res) => {
      res.type('application/json').send(openApi);
    },
    listClients: async (_req, res) => {
      const clients = await options.clients.list();
      res.json({
        clients: clients.map(({ clientId, grantorId, admin, createdAt, updatedAt }) => ({
          clientId,
          grantorId,
          admin,
          createdAt: createdAt.toISOString(),
          updatedAt: updatedAt.toISOString(),
        })),
      });
    },
    putClient: async (req, res) => {
      const clientId = clientParam(req);
      const body = parseBody(ClientBody, req.body);
      const created = await options.clients.put({
        clientId,
        grantorId: body.grantorId,
        admin: body.admin ?? false,
        secretHash: await hashSecret(body.secret),
      });
      authenticator.invalidate(clientId);
      if (created) res.status(201).json({ clientId, grantorId: body.grantorId, admin: body.admin ?? false });
      else sendDone(res);
    },
    deleteClient: async (req, res) => {
      const clientId = clientParam(req);
      await options.clients.remove(clientId);
      authenticator.invalidate(clientId);
      sendDone(res);
    },
    revokeToken: async (req, res) => {
      const jti = parseParam(Jti, 'jti', req.params.jti);
      const body = parseBody(RevocationBody, req.body);
      const created = await options.revocations.revoke(jti, body.expiresAt ? new Date(body.expiresAt) : undefined);
      res.status(created ? 201 : 204).end();
    },
    getUser: async (req, res) => {
      const connectId = connectIdParam(req);
      const user = await options.users.find(connectId);
      if (!user) throw notFound(`no user ${connectId}`);
      res.json(userView(user.connectId, user.createdAt));
    },
    putUser: async (req, res) => {
      const connectId = connectIdParam(req);
      const created = await options.users.register(connectId);
      if (created) res.status(201).json(userView(connectId, options.clock()));
      else sendDone(res);
    },
    deleteUser: async (req, res) => {
      await options.users.unregister(connectIdParam(req));
      sendDone(res);
    },
  });
  return router;
}

/** A refusal of the access rules as the contract answers it: 401 with its challenge (DESIGN.md 3 "Challenges"). */
function refused(refusal: Refusal, realm: string): AppError {
  switch (refusal.challenge) {
    case 'basic':
      return unauthorized(refusal.reason, basicChallenge(realm));
    case 'bearer':
      return unauthorized(refusal.reason, bearerChallenge(realm, refusal.reason));
    case 'insufficient_scope':
      return unauthorized(refusal.reason, insufficientScopeChallenge(realm, refusal.scope));
    case 'grantor_mismatch':
      return unauthorized(refusal.reason, `Basic realm="${realm}", error="grantor_mismatch"`);
  }
}
