import { readFileSync } from 'node:fs';
import { ClientBody, ClientId, ConnectId, RevocationBody } from '@rs/contracts';
import {
  admitsJson,
  AppError,
  basicChallenge,
  jsonBody,
  notAcceptable,
  notFound,
  parseBody,
  parseParam,
  route,
  unauthorized,
  type InternalTokenSigner,
  type Principal,
} from '@rs/http';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { type Authenticator, bearerChallenge, insufficientScopeChallenge, isBearer } from '../auth/authenticator';
import { hashSecret } from '../auth/secrets';
import {
  acceptsBearer,
  answersJson,
  classify,
  grantorFilter,
  redirectLocation,
  type Operation,
  type OwningService,
} from '../domain/access';
import type { ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import type { UserStore } from '../store/user-store';
import type { Forwarder } from './forward';
import { rateLimit, type RateLimitOptions } from './rate-limit';

export interface GatewayRoutesOptions {
  realm: string;
  publicBaseUrl: string;
  authenticator: Authenticator;
  clients: ClientStore;
  users: UserStore;
  revocations: RevocationStore;
  upstreams: Record<OwningService, URL>;
  forwarder: Forwarder;
  signer: InternalTokenSigner;
  rateLimit: RateLimitOptions;
  openApiPath: string;
}

export function gatewayRoutes(options: GatewayRoutesOptions): Router {
  const { realm, authenticator } = options;
  const router = Router();
  const openApi = readFileSync(options.openApiPath, 'utf8');

  /** DESIGN.md 3 "Content negotiation": after authentication, before anything is done. */
  const negotiate: RequestHandler = (req, _res, next) => {
    if (answersJson(req.method, req.baseUrl + req.path) && !admitsJson(req))
      return next(notAcceptable('this operation answers application/json, which the Accept header excludes'));
    next();
  };
  router.get('/openapi.json', negotiate, (_req, res) => {
    res.type('application/json').send(openApi);
  });

  // Everything else needs a caller; each caller is rate limited.
  const authenticate: RequestHandler = async (req, res, next) => {
    const authorization = req.get('authorization');
    // DESIGN.md 3 "Challenges": a Bearer header on a Basic-only endpoint gets the Basic challenge.
    // (req.path is relative to the mount point below.)
    if (isBearer(authorization) && !acceptsBearer(req.method, req.baseUrl + req.path))
      throw unauthorized('this operation needs Basic credentials', basicChallenge(realm));
    res.locals.principal = await authenticator.authenticate(authorization, req.socket.remoteAddress ?? '');
    next();
  };
  router.use(['/admin', '/id/users', '/catalog'], authenticate, rateLimit(options.rateLimit), negotiate);
  // The gateway parses only its own bodies; forwarded ones stream through untouched.
  router.use('/admin', jsonBody('16kb'));

  /** Admin routes take admin Basic credentials only (DESIGN.md 6). */
  const requireAdmin = (res: Response) => {
    const principal = res.locals.principal;
    if (principal.scheme !== 'basic' || !principal.admin) {
      throw unauthorized('this operation needs the Basic credentials of an admin client', basicChallenge(realm));
    }
  };
  const clientParam = (req: Request) => parseParam(ClientId, 'clientId', req.params.clientId);
  const connectIdParam = (req: Request) => parseParam(ConnectId, 'connectId', req.params.connectId);

  route(router, '/admin/clients', {
    get: async (_req, res) => {
      requireAdmin(res);
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
  });
  route(router, '/admin/clients/:clientId', {
    put: async (req, res) => {
      requireAdmin(res);
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
      else res.status(204).end();
    },
    delete: async (req, res) => {
      requireAdmin(res);
      const clientId = clientParam(req);
      await options.clients.remove(clientId);
      authenticator.invalidate(clientId);
      res.status(204).end();
    },
  });
  route(router, '/admin/revoked-tokens/:jti', {
    put: async (req, res) => {
      requireAdmin(res);
      const jti = parseParam(z.string().min(1).max(256), 'jti', req.params.jti);
      const body = parseBody(RevocationBody, req.body);
      const created = await options.revocations.revoke(jti, body.expiresAt ? new Date(body.expiresAt) : undefined);
      res.status(created ? 201 : 204).end();
    },
  });

  // DESIGN.md 3 "Users": the user directory.
  const userView = (connectId: string, createdAt: Date) => ({
    connectId,
    href: `${options.publicBaseUrl}/id/users/${encodeURIComponent(connectId)}`,
    createdAt: createdAt.toISOString(),
  });
  route(router, '/id/users/:connectId', {
    get: async (req, res) => {
      const connectId = connectIdParam(req);
      requireUserAccess(res.locals.principal, connectId, realm);
      const user = await options.users.find(connectId);
      if (!user) throw notFound(`no user ${connectId}`);
      res.json(userView(user.connectId, user.createdAt));
    },
    put: async (req, res) => {
      requireAdmin(res);
      const connectId = connectIdParam(req);
      const created = await options.users.register(connectId);
      if (created) res.status(201).json(userView(connectId, new Date()));
      else res.status(204).end();
    },
    delete: async (req, res) => {
      requireAdmin(res);
      await options.users.unregister(connectIdParam(req));
      res.status(204).end();
    },
  });

  // Everything a service owns: decide here what the contract lets the caller do, then forward.
  router.use(async (req: Request, res: Response, next) => {
    const operation = classify(req.method, req.path);
    if (!operation) return next();
    res.locals.routeLabel = `forward:${operation.service}`;
    const principal = res.locals.principal;
    authorize(operation, principal, realm);
    if (operation.connectId !== null) {
      const connectId = parseParam(ConnectId, 'connectId', operation.connectId);
      if (!(await options.users.find(connectId))) throw notFound(`no user ${connectId}`);
    }
    if (operation.list && !principal.admin) {
      const filter = grantorFilter(new URL(req.originalUrl, 'http://gateway').searchParams);
      if (filter === null) {
        res.redirect(
          307,
          redirectLocation(options.publicBaseUrl, req.originalUrl, operation.list, principal.grantorId ?? ''),
        );
        return;
      }
      // spec 5 rule 5: the "different challenge".
      if (operation.list === 'rights' && principal.scheme === 'basic' && filter !== principal.grantorId) {
        throw unauthorized(
          'you may list only the rights of your own grantor',
          `Basic realm="${realm}", error="grantor_mismatch"`,
        );
      }
    }
    await options.forwarder.forward(
      req,
      res,
      options.upstreams[operation.service],
      await options.signer.tokenFor(principal),
    );
  });
  return router;
}

/** A Bearer token acts for its user only, unless its client is an admin (DESIGN.md 3). */
function requireUserAccess(principal: Principal, connectId: string, realm: string): void {
  if (principal.scheme === 'bearer' && !principal.admin && principal.subject !== connectId) {
    throw new AppError(401, 'token not issued for this user', {
      'WWW-Authenticate': bearerChallenge(realm, 'token not issued for this user'),
    });
  }
}

/** spec 5: which scheme may call the operation, with which scope. */
function authorize(operation: Operation, principal: Principal, realm: string): void {
  if (operation.adminOnly && (principal.scheme !== 'basic' || !principal.admin)) {
    throw unauthorized('this operation needs the Basic credentials of an admin client', basicChallenge(realm));
  }
  if (principal.scheme !== 'bearer') return;
  if (operation.bearerScope === null) {
    throw unauthorized('this operation needs Basic credentials', basicChallenge(realm));
  }
  if (operation.connectId !== null) requireUserAccess(principal, operation.connectId, realm);
  if (!principal.scopes.includes(operation.bearerScope)) {
    throw new AppError(401, `the token lacks the scope ${operation.bearerScope}`, {
      'WWW-Authenticate': insufficientScopeChallenge(realm, operation.bearerScope),
    });
  }
}
