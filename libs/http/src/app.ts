import { randomUUID } from 'node:crypto';
import { ROUTES, type OperationId, type Principal, type PublicRoute, type RouteOwner } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { CallerLeft } from '@rs/store';
import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import {
  AppError,
  badRequest,
  methodNotAllowed,
  notFound,
  sendError,
  toAppError,
  unsupportedMediaType,
} from './errors';
import { inexactField } from './exact-json';
import { requireServiceCaller } from './internal-token';
import { initMetrics, metricsRegistry, recordRequest } from './metrics';
import { bucketPage, pageParams, sendJson } from './request';
import { traceRequests } from './tracing';

export type ReadinessChecks = Record<string, () => boolean>;

export interface HttpAppOptions {
  service: string;
  logger: Logger;
  /** Dependencies that must be reachable for /readyz to answer 200 (docs/operations.md). */
  readiness: ReadinessChecks;
  /** Middleware run after the health routes and before every other route (e.g. internal auth). */
  guard?: RequestHandler;
  /** Parse JSON bodies for every route, with this size limit (e.g. "64kb"). */
  jsonLimit?: string;
  /** AUTH_REALM: of the Basic challenge a use case's `not_permitted` is answered with (default `rights`). */
  realm?: string;
  /** Whether this app serves `/metrics` itself (default), or a `metricsApp` on a port of its own does. */
  metrics?: boolean;
  routes: (app: Express) => void;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Locals {
      requestId: string;
      log: Logger;
      routeLabel?: string;
      /** Why the request was refused or failed: its request line says it. */
      errorReason?: string;
    }
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/**
 * On every answer (docs/security.md "Exposure"): nothing is sniffed into another type, and
 * nothing, an HTML error page included, loads anything or is framed. A page that needs more
 * (the API reference) widens its own policy.
 */
const SECURITY_HEADERS = [
  ['X-Content-Type-Options', 'nosniff'],
  ['Content-Security-Policy', "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"],
] as const;
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * What every request carries for its handlers (`res.locals`): its id, and its logger, made when
 * something logs (most requests log their line alone, and a child logger per request was a
 * measurable part of the request path: docs/performance.md). The getter is the class's, shared:
 * one defined on each request's own object gave each request a hidden class of its own, which
 * V8 keeps in the old generation with the getter, its closure and through it the request and
 * its answer, so that every request outlived the young generation (docs/performance.md,
 * 2026-12-06).
 */
class RequestLocals {
  readonly #logger: Logger;
  #log: Logger | undefined;

  constructor(
    readonly requestId: string,
    logger: Logger,
  ) {
    this.#logger = logger;
  }

  get log(): Logger {
    return (this.#log ??= this.#logger.child({ request_id: this.requestId }));
  }
}

/** Express 5 app with request ids, one log line per request, metrics, health, and the error format of docs/architecture.md. */
export function createHttpApp(options: HttpAppOptions): Express {
  initMetrics(options.service);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', false);
  // docs/api.md "Routes match exactly": a path in another letter case or with a trailing
  // slash is another path, which no route serves (the gateway's edge refuses it first).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  // Every request's first steps, as one middleware (`sequence`). An absolute-form request
  // target (`GET http://evil.example/…`) is read as its path and query alone, before anything
  // looks at it: no host a caller writes into the request line ever reaches a link, a redirect
  // or a forwarded request (every URL is PUBLIC_BASE_URL's). Then its span, then what every
  // answer carries and what every request leaves behind, with one `finish` listener.
  const originFormOnly: RequestHandler = (req, _res, next) => {
    if (!req.url.startsWith('/')) req.url = req.originalUrl = originForm(req.url);
    next();
  };
  const bookkeeping: RequestHandler = (req, res, next) => {
    for (const [name, value] of SECURITY_HEADERS) res.setHeader(name, value);
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', requestId);
    res.locals = new RequestLocals(requestId, options.logger) as unknown as Response['locals'];
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      recordRequest(req, res, seconds);
      // Probes, scrapes and the services' reads of each other (rebuilds, projections) are routine.
      const routine = QUIET_PATHS.has(req.path) || (req.path.startsWith('/internal/') && res.statusCode < 400);
      if (!options.logger.isLevelEnabled(routine ? 'debug' : 'info')) return;
      const principal = res.locals.principal as Partial<Principal> | undefined;
      const client = principal?.clientId;
      // A person acting (a staff member) is named by their identity provider (docs/identity-providers.md).
      const person = principal?.person;
      const record = {
        request_id: requestId,
        method: req.method,
        path: req.path,
        status: res.statusCode,
        duration_ms: seconds * 1e3,
        ...(client ? { client } : {}),
        ...(person ? { actor: { issuer: person.issuer, subject: person.subject, name: person.name } } : {}),
        ...(res.locals.errorReason ? { reason: res.locals.errorReason } : {}),
      };
      if (routine) options.logger.debug(record, 'request');
      else options.logger.info(record, 'request');
    });
    next();
  };
  app.use(sequence(originFormOnly, traceRequests(QUIET_PATHS), bookkeeping));

  app.get('/healthz', (_req, res) => {
    sendJson(res, { status: 'alive' });
  });
  app.get('/readyz', (_req, res) => {
    const checks = Object.fromEntries(Object.entries(options.readiness).map(([name, check]) => [name, check()]));
    const ready = Object.values(checks).every(Boolean);
    if (!ready) res.status(503).set('Retry-After', '5');
    sendJson(res, { status: ready ? 'ready' : 'not ready', checks });
  });
  if (options.metrics ?? true) app.get('/metrics', serveMetrics);

  if (options.guard) app.use(options.guard);
  if (options.jsonLimit) app.use(jsonBody(options.jsonLimit));
  options.routes(app);

  app.use((req: Request, _res: Response, next: NextFunction) => next(notFound(`no resource at ${req.path}`)));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const appError = toAppError(error, options.realm);
    res.locals.errorReason = appError.message;
    // A change not started because its caller had left is the caller's doing, not a failure.
    if (appError.status >= 500 && !(error instanceof AppError) && !(error instanceof CallerLeft)) {
      res.locals.log?.error({ err: error }, 'request failed');
    }
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendError(req, res, appError);
  });
  return app;
}

/**
 * Handlers run one after the other as one middleware, as Express runs a layer each: a handler
 * that throws, or whose promise rejects, passes its error to the error handlers; `next()` runs
 * the next one, and after the last the app's next layer. Without a layer's matching and
 * bookkeeping per request, which was a quarter of what the gateway allocated for a check
 * (docs/performance.md, 2026-12-02 (day)).
 */
export function sequence(...handlers: RequestHandler[]): RequestHandler {
  return (req, res, next) => {
    let at = 0;
    const step = (error?: unknown): void => {
      if (error !== undefined && error !== null) return next(error);
      const handler = handlers[at++];
      if (!handler) return next();
      try {
        const result: unknown = handler(req, res, step as NextFunction);
        if (result instanceof Promise)
          result.catch((failure: unknown) => step(failure ?? new Error('Rejected promise')));
      } catch (failure) {
        step(failure);
      }
    };
    step();
  };
}

/** The path and query of a request target in any form (RFC 9112 3.2), never its host. */
export function originForm(target: string): string {
  const { pathname, search } = new URL(target, 'http://origin.invalid');
  return `${pathname}${search}`;
}

const serveMetrics: RequestHandler = async (_req, res) => {
  res.type(metricsRegistry.contentType).send(await metricsRegistry.metrics());
};

/**
 * `/metrics` alone, for a port of its own (the gateway's METRICS_PORT): what the platform
 * counts is for its operators, never on the public port.
 */
export function metricsApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', serveMetrics);
  app.use((_req: Request, res: Response) => {
    res.status(404).type('text/plain').send('not found');
  });
  return app;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** How deep a field of a JSON body may nest (docs/security.md "Bounds"). */
export const MAX_NESTING = 64;

/**
 * JSON bodies only: a body with another content type or in any `Content-Encoding` is 415,
 * malformed JSON 400, an oversized body 413, a field nested deeper than `MAX_NESTING`
 * levels 400 naming it (docs/security.md), a value that could not come back exactly as sent 400
 * naming it (`exactReviver`), each before any handler runs, so nothing is written.
 */
export function jsonBody(limit: string): RequestHandler[] {
  // inflate: false: the platform accepts bodies as sent (identity) only; a compressed body
  // would cost far more to inflate than its size says.
  // The text is kept until the body is checked: what cannot come back as sent is refused.
  const texts = new WeakMap<object, Buffer>();
  const parse = express.json({
    limit,
    strict: true,
    inflate: false,
    type: () => true,
    verify: (req, _res, text) => void texts.set(req, text),
  });
  const requireJson: RequestHandler = (req, _res, next) => {
    if (!BODY_METHODS.has(req.method) || !hasBody(req)) return next();
    if (!req.is(['application/json', 'application/*+json'])) {
      return next(unsupportedMediaType('request body must be application/json'));
    }
    next();
  };
  const parseIfBody: RequestHandler = (req, res, next) => {
    if (!BODY_METHODS.has(req.method) || !hasBody(req)) return next();
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      const deep = fieldNestedDeeperThan(req.body, MAX_NESTING);
      if (deep !== null) return next(badRequest(`${deep}: nests deeper than ${MAX_NESTING} levels`));
      const inexact = inexactField(texts.get(req));
      texts.delete(req);
      next(inexact === null ? undefined : badRequest(`${inexact}; it could not come back as sent`));
    });
  };
  return [requireJson, parseIfBody];
}

/**
 * The first top-level field of a parsed JSON body whose value nests deeper than `max`
 * levels, or null. Iterative, so that no depth of input can exhaust the stack here, and
 * nothing after it (validation, storage, `JSON.stringify`) meets a deeper value.
 */
export function fieldNestedDeeperThan(body: unknown, max: number): string | null {
  if (body === null || typeof body !== 'object') return null;
  for (const [field, value] of Object.entries(body)) {
    const pending: Array<[unknown, number]> = [[value, 0]];
    while (pending.length > 0) {
      const [node, depth] = pending.pop()!;
      if (node === null || typeof node !== 'object') continue;
      if (depth + 1 > max) return field;
      for (const child of Object.values(node)) pending.push([child, depth + 1]);
    }
  }
  return null;
}

/** Whether a request carries a body (RFC 9112 6.3: a length or a transfer coding). */
export function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** The one kind of router of every service: case-sensitive and strict, as the app (docs/api.md). */
export const exactRouter = (): Router => express.Router({ caseSensitive: true, strict: true });

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';

/**
 * Mounts one owner's routes of the route table (`ROUTES` in @rs/contracts), a handler per
 * operation id: the compiler refuses a table route without its handler, and no route can be
 * served that the table (and so the gateway and the OpenAPI document) does not know.
 */
export function serveRoutes<O extends RouteOwner>(
  router: Router,
  owner: O,
  handlers: Record<OperationId<O>, RequestHandler>,
): void {
  const byPath = new Map<string, Partial<Record<Method, RequestHandler>>>();
  for (const entry of ROUTES as readonly PublicRoute[]) {
    if (entry.owner !== owner) continue;
    const path = entry.path.replace(/\{([^}]+)\}/g, ':$1');
    const methods = byPath.get(path) ?? {};
    methods[entry.method.toLowerCase() as Method] = handlers[entry.operationId as OperationId<O>];
    byPath.set(path, methods);
  }
  for (const [path, methods] of byPath) route(router, path, methods);
}

/** Registers the handlers of one path and answers 405 with `Allow` for any other method. */
export function route(router: Router, path: string, handlers: Partial<Record<Method, RequestHandler>>): void {
  const allowed: string[] = [];
  for (const [method, handler] of Object.entries(handlers) as [Method, RequestHandler][]) {
    router[method](path, handler);
    allowed.push(method.toUpperCase());
  }
  if (allowed.includes('GET')) allowed.push('HEAD');
  router.all(path, (_req, _res, next) => next(methodNotAllowed(allowed)));
}

/**
 * The largest page of an internal listing: a service rebuilding what it derives reads fewer,
 * larger pages (on FerretDB each page reads its whole bucket; docs/operations.md).
 */
const INTERNAL_MAX_LIMIT = 5_000;

/**
 * Internal: a whole collection a bucket at a time (`{items, next}`), for another service to
 * rebuild what it derives from it (docs/decisions/0011). Other services only; the gateway
 * never forwards /internal.
 */
export function bucketListing<T>(
  router: Router,
  path: string,
  buckets: number,
  read: (bucket: number, page: BucketPageRequest) => Promise<BucketPageRead<T>>,
): void {
  route(router, path, {
    get: async (req, res) => {
      requireServiceCaller(res.locals.principal);
      const { bucket, after, limit } = bucketPage(pageParams(req, INTERNAL_MAX_LIMIT), buckets);
      const { items, lastId } = await read(bucket, { after, limit });
      sendJson(res, { items, next: lastId === null ? null : `${bucket}.${lastId}` });
    },
  });
}

/** One page of a bucket to read: the documents after `after` (an id), at most `limit`, in id order. */
export interface BucketPageRequest {
  after: string | undefined;
  limit: number;
}

/**
 * What a page of a bucket held: its entries (those a listing leaves out, removed or set aside,
 * are not among them), and the id of the last document read when the page was full (null:
 * the bucket has no more).
 */
export interface BucketPageRead<T> {
  items: T[];
  lastId: string | null;
}
