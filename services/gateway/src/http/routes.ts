import { parseDateTime, type Clock } from '@rs/time';
import { readFileSync } from 'node:fs';
import {
  AUDIT_REASON_HEADER,
  AmountParam,
  ClientBody,
  ClockId,
  ClientId,
  ConnectId,
  Jti,
  RevocationBody,
  SkuName,
  takesIdempotencyKey,
  type OperationId,
  type Principal,
  type RouteOwner,
} from '@rs/contracts';
import {
  admitsJson,
  AppError,
  badRequest,
  basicChallenge,
  jsonBody,
  sequence,
  malformedPath,
  methodNotAllowed,
  notAcceptable,
  notFound,
  pageParams,
  parseBody,
  queryParam,
  parseListPosition,
  parseParam,
  sendDone,
  sendJson,
  setNextLink,
  unauthorized,
  type InternalTokenSigner,
} from '@rs/http';
import type { Request, RequestHandler, Response } from 'express';
import { type Authenticator, bearerChallenge, insufficientScopeChallenge, isBearer } from '../auth/authenticator';
import type { Administration } from '../app/administration';
import type { Forwarding } from '../app/forwarding';
import type { Entitlements } from '../app/entitlements';
import type { AuditLog } from '../app/audit';
import { grantorOfBody, isAudited, reasonOf, type AuditQuery } from '../domain/audit';
import { meOf } from '../domain/me';
import type { AuditedRequests } from './audited';
import { budgetOf, classify, type Operation, type Refusal } from '../domain/access';
import type { TrustedProxies } from '../domain/source-address';
import type { KnownUser } from '../store/user-store';
import { readRequestBody, type Forwarder, type Outgoing } from './forward';
import { idempotentForwarder } from './idempotent';
import type { Idempotency } from '../app/idempotency';
import { rateLimit, type RateLimitOptions } from './rate-limit';
import { API_REFERENCE_POLICY, apiReference } from './api-reference';
import type { ConsolePage } from './console';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      operation: Operation;
    }
  }
}

export interface GatewayRoutesOptions {
  realm: string;
  publicBaseUrl: string;
  authenticator: Authenticator;
  /** The gateway's own use cases. */
  administration: Administration;
  /** What is done with a request bound for a service (docs/api.md). */
  forwarding: Forwarding;
  /** docs/api.md "Entitlement checks". */
  entitlements: Pick<Entitlements, 'check' | 'list'>;
  /** docs/audit.md: the log, and its side of each audited request. */
  auditLog: AuditLog;
  audit: AuditedRequests;
  /** TRUSTED_PROXIES: whose X-Forwarded-For names the source address (docs/api.md). */
  proxies: TrustedProxies;
  upstreams: Record<Exclude<RouteOwner, 'gateway'>, URL>;
  forwarder: Forwarder;
  signer: InternalTokenSigner;
  rateLimit: RateLimitOptions;
  openApiPath: string;
  clock: Clock;
  /** docs/api.md "Idempotency-Key". */
  idempotency: Idempotency;
  /** How long a request body may take to arrive (408 after). */
  bodyTimeoutMs: number;
  /** docs/console.md: the page and its files. */
  console: ConsolePage;
}

/** Forwarded bodies are at most this large (the services' own limit). */
const MAX_BODY_BYTES = 64 * 1024;

/**
 * The gateway's edge and its own routes, as one middleware of steps (`sequence`): which
 * operation, who calls, their budget, what they accept, then forwarded, redirected or answered
 * here.
 */
export function gatewayRoutes(options: GatewayRoutesOptions): RequestHandler {
  const { realm, authenticator } = options;
  const openApi = readFileSync(options.openApiPath, 'utf8');
  const reference = apiReference();
  const idempotent = idempotentForwarder(options.idempotency, options.forwarder);
  /** docs/api.md: the socket's peer, or the client behind a trusted proxy. */
  const sourceAddress = (req: Request) =>
    options.proxies.sourceOf(req.socket.remoteAddress ?? '', req.get('x-forwarded-for'));

  // docs/api.md "Routes match exactly": which route of the table the request is, once, before
  // any credential is checked, any body read or any handler run; what the table does not
  // name ends here.
  const classifyRequest: RequestHandler = (req, res, next) => {
    const found = classify(req.method, req.path);
    switch (found.kind) {
      case 'not_found':
        return next(notFound('no resource at this path'));
      case 'method_not_allowed':
        return next(methodNotAllowed(found.allow));
      case 'malformed':
        return next(malformedPath());
      case 'operation':
        res.locals.operation = found.operation;
        // Its span and metrics carry the public route template, forwarded or not.
        res.locals.routeLabel = found.operation.route.path;
        return next();
    }
  };
  // Every route but the open ones needs a caller; each caller is rate limited.
  const authenticate: RequestHandler = async (req, res, next) => {
    const operation = res.locals.operation;
    if (operation.caller === 'none') return next();
    const authorization = req.get('authorization');
    const principal = authenticator.authenticate(authorization, sourceAddress(req));
    // docs/api.md "Challenges": a Bearer header on a Basic-only endpoint gets the Basic challenge,
    // unless it is a staff member's (docs/identity-providers.md "Staff"), who acts as its role allows.
    if (isBearer(authorization) && operation.bearer === null) {
      const staff = await principal.then((one) => (one.scheme === 'staff' ? one : null)).catch(() => null);
      if (!staff) throw unauthorized('this operation needs Basic credentials', basicChallenge(realm));
    }
    res.locals.principal = await principal;
    next();
  };
  // Budgets belong to one principal (docs/security.md): an open route spends its source address's.
  const limit = rateLimit(
    options.rateLimit,
    (req, res) =>
      budgetOf(res.locals.operation.caller === 'none' ? undefined : res.locals.principal, sourceAddress(req)),
    options.clock,
  );
  // docs/api.md "Content negotiation": after authentication, before anything is done.
  const acceptable: RequestHandler = (req, res, next) => {
    if (res.locals.operation.json && !admitsJson(req))
      return next(notAcceptable('this operation answers application/json, which the Accept header excludes'));
    next();
  };
  // docs/api.md: the forwarding use case decides; this carries it out.
  const route: RequestHandler = async (req, res, next) => {
    const operation = res.locals.operation;
    const routing = await options.forwarding.route({
      operation,
      principal: operation.caller === 'none' ? undefined : res.locals.principal,
      url: req.originalUrl,
      sourceAddress: sourceAddress(req),
    });
    // docs/audit.md: a change by an admin client or a staff member says why, before anything is read.
    const principal: Principal | undefined = res.locals.principal;
    const audited = routing.kind !== 'refuse' && routing.kind !== 'redirect' && isAudited(req.method, principal);
    const reason = audited ? reasonOf(req.get(AUDIT_REASON_HEADER), principal!) : null;
    if (reason && !reason.ok) throw badRequest(reason.message);
    const auditing = (bodyGrantor: () => string | null) =>
      audited && reason?.ok ? options.audit.record(req, res, principal!, reason.reason, bodyGrantor) : undefined;
    switch (routing.kind) {
      case 'answer':
        if (audited) await auditing(() => grantorOfParsedBody(req.body));
        return next();
      case 'refuse':
        throw refused(routing.refusal, realm);
      case 'redirect':
        res.redirect(307, routing.location);
        return;
      case 'forward': {
        const outgoing: Outgoing = {
          body: await readRequestBody(req, res, {
            takesBody: operation.route.body !== undefined,
            maxBytes: MAX_BODY_BYTES,
            timeoutMs: options.bodyTimeoutMs,
          }),
          owner: routing.budget,
          sign: () => options.signer.tokenFor(routing.caller, routing.service),
          answered: audited ? (headers) => options.audit.answeredBy(res, headers) : undefined,
        };
        await auditing(() => grantorOfBody(outgoing.body));
        const upstream = options.upstreams[routing.service];
        const key = req.get('idempotency-key');
        if (key !== undefined && takesIdempotencyKey(req.method, req.path))
          return idempotent({ req, res, upstream, outgoing, key });
        return options.forwarder.forward(req, res, upstream, outgoing);
      }
    }
  };
  // The gateway parses only its own bodies; forwarded ones stream through untouched.
  const parseJson = sequence(...jsonBody('16kb'));
  const ownBody: RequestHandler = (req, res, next) =>
    res.locals.operation.route.body === undefined ? next() : parseJson(req, res, next);

  const principalOf = (res: Response): Principal | undefined => res.locals.principal;
  const clientParam = (req: Request) => parseParam(ClientId, 'clientId', req.params.clientId);
  const connectIdParam = (req: Request) => parseParam(ConnectId, 'connectId', req.params.connectId);
  // docs/api.md "Users": the user directory.
  const userView = ({ connectId, createdAt }: KnownUser) => ({
    connectId,
    href: `${options.publicBaseUrl}/id/users/${encodeURIComponent(connectId)}`,
    createdAt: createdAt.toISOString(),
  });
  const { administration } = options;

  // The gateway's own routes (docs/operations.md); who may call them was decided above, and each
  // admin use case checks it again (docs/api.md).
  const answer = ownRoutes({
    getOpenApi: (_req, res) => {
      res.type('application/json').send(openApi);
    },
    getApiReference: (_req, res) => {
      res.set('Content-Security-Policy', API_REFERENCE_POLICY).type('text/html; charset=utf-8').send(reference.page);
    },
    getRoot: (_req, res) => {
      res.redirect(302, `${options.publicBaseUrl}/docs`);
    },
    getConsole: (_req, res) => {
      if (options.console.page === null) throw notFound('the console was not built (npm run build)');
      res
        .set({ 'Content-Security-Policy': options.console.policy, 'Cache-Control': 'no-cache' })
        .type('text/html; charset=utf-8')
        .send(options.console.page);
    },
    getConsoleAsset: (req, res) => {
      const asset = options.console.asset(String(req.params.consoleAsset));
      if (!asset) throw notFound('no such file of the console');
      // Its name changes with its content: kept for good.
      res.set('Cache-Control', 'public, max-age=31536000, immutable').type(asset.type).send(asset.body);
    },
    getApiReferenceAsset: (req, res) => {
      const asset = reference.asset(String(req.params.asset));
      if (!asset) throw notFound('no such asset of the API reference');
      res.set('Cache-Control', 'public, max-age=3600').type(asset.type).send(asset.body);
    },
    listClients: async (_req, res) => {
      const clients = await administration.listClients(principalOf(res));
      sendJson(res, {
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
      if (await administration.putClient(principalOf(res), clientId, body))
        sendJson(res.status(201), { clientId, grantorId: body.grantorId, admin: body.admin ?? false });
      else sendDone(res);
    },
    deleteClient: async (req, res) => {
      await administration.deleteClient(principalOf(res), clientParam(req));
      sendDone(res);
    },
    revokeToken: async (req, res) => {
      const jti = parseParam(Jti, 'jti', req.params.jti);
      const body = parseBody(RevocationBody, req.body);
      const created = await administration.revokeToken(
        principalOf(res),
        jti,
        body.expiresAt ? new Date(body.expiresAt) : undefined,
      );
      res.status(created ? 201 : 204).end();
    },
    listEntitlements: async (req, res) => {
      const named = queryParam(req, 'clockId');
      const clockId = named === undefined ? undefined : parseParam(ClockId, 'clockId', named);
      const answer = await options.entitlements.list(
        principalOf(res)!,
        connectIdParam(req),
        clockId === undefined ? {} : { clockId },
      );
      sendJson(res.set('Cache-Control', 'no-store'), answer);
    },
    listAudit: async (req, res) => {
      const page = pageParams(req);
      const found = await options.auditLog.list(principalOf(res)!, auditQueryOf(req), {
        after: parseListPosition(page),
        limit: page.limit,
      });
      const last = found.last && `${found.last.position}.${found.last.id}`;
      setNextLink(req, res, options.publicBaseUrl, page, last ?? undefined, found.items.length);
      sendJson(res, { entries: found.items });
    },
    checkEntitlement: async (req, res) => {
      const sku = parseParam(SkuName, 'sku', req.params.sku);
      const raw = queryParam(req, 'amount');
      const amount = raw === undefined ? undefined : parseParam(AmountParam, 'amount', raw);
      const named = queryParam(req, 'clockId');
      const clockId = named === undefined ? undefined : parseParam(ClockId, 'clockId', named);
      const answer = await options.entitlements.check(principalOf(res)!, connectIdParam(req), sku, {
        ...(amount === undefined ? {} : { amount }),
        ...(clockId === undefined ? {} : { clockId }),
      });
      res.setHeader('Cache-Control', 'no-store');
      sendJson(res, answer);
    },
    listUsers: async (req, res) => {
      const page = pageParams(req);
      const after = page.after === undefined ? undefined : parseParam(ConnectId, 'cursor', page.after);
      const users = await administration.users(principalOf(res), page.limit, after);
      setNextLink(req, res, options.publicBaseUrl, page, users.at(-1)?.connectId, users.length);
      sendJson(res, { users: users.map(userView) });
    },
    getUser: async (req, res) => {
      sendJson(res, userView(await administration.user(connectIdParam(req))));
    },
    getMe: (_req, res) => {
      res.setHeader('Cache-Control', 'no-store');
      sendJson(res, meOf(principalOf(res)!));
    },
    putUser: async (req, res) => {
      const created = await administration.registerUser(principalOf(res), connectIdParam(req));
      if (created) sendJson(res.status(201), userView(created));
      else sendDone(res);
    },
    deleteUser: async (req, res) => {
      await administration.unregisterUser(principalOf(res), connectIdParam(req));
      sendDone(res);
    },
  });
  return sequence(classifyRequest, authenticate, limit, acceptable, route, ownBody, answer);
}

/**
 * Answers the gateway's own operations of the route table, a handler per operation id (the
 * compiler refuses a table route without its handler). The edge has already found the
 * operation and its parameters (`classify`), so the request goes straight to its handler:
 * matching the path again route by route was a measurable part of every check
 * (docs/performance.md, 2026-12-02 (day)).
 */
function ownRoutes(handlers: Record<OperationId<'gateway'>, RequestHandler>): RequestHandler {
  return (req, res, next) => {
    const { route, params } = res.locals.operation;
    if (route.owner !== 'gateway') return next(notFound('no resource at this path'));
    req.params = params;
    return handlers[route.operationId as OperationId<'gateway'>](req, res, next);
  };
}

/** The `grantorId` of a body the gateway parsed itself (an API client's). */
const grantorOfParsedBody = (body: unknown): string | null => {
  const grantorId = (body as { grantorId?: unknown } | undefined)?.grantorId;
  return typeof grantorId === 'string' ? grantorId : null;
};

/** The filters of `GET /admin/audit` (docs/audit.md). */
function auditQueryOf(req: Request): AuditQuery {
  const text = (name: string) => {
    const value = queryParam(req, name);
    if (value !== undefined && (value.length === 0 || value.length > 512))
      throw badRequest(`${name}: must be 1 to 512 characters`);
    return value;
  };
  const instant = (name: string) => {
    const value = text(name);
    if (value === undefined) return undefined;
    const parsed = parseDateTime(value);
    if (!parsed.ok)
      throw badRequest(`${name}: must be a date-time with offset, e.g. 2026-01-01T00:00:00Z; ${parsed.reason}`);
    return parsed.value.toJSDate();
  };
  const query: AuditQuery = {};
  const [actor, subject, grantorId, after, before] = [
    text('actor'),
    text('subject'),
    text('grantorId'),
    instant('after'),
    instant('before'),
  ];
  if (actor !== undefined) query.actor = actor;
  if (subject !== undefined) query.subject = subject;
  if (grantorId !== undefined) query.grantorId = grantorId;
  if (after !== undefined) query.after = after;
  if (before !== undefined) query.before = before;
  return query;
}

/** A refusal of the access rules as the contract answers it: 401 with its challenge (docs/api.md "Challenges"). */
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
