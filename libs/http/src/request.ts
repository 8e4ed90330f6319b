import {
  ConnectId,
  HISTORY_CURSOR_PATTERN,
  IF_MATCH_PATTERN,
  KEYSET_CURSOR_PATTERN,
  type HistoryEntry,
  type HistoryPageRequest,
  type Principal,
} from '@rs/contracts';
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { badRequest, preconditionFailed } from './errors';
import { RESOURCE_ID_HEADER } from './internal-token';
import type { ListPage, ListPosition } from '@rs/store';

/**
 * docs/api.md "Listing filters": query parameter names match case-insensitively, so a name
 * given twice in any spellings (`grantorid=x&grantorId=y`) is given twice: 400.
 */
export function queryParam(req: Request, name: string): string | undefined {
  const wanted = name.toLowerCase();
  const given = Object.entries(req.query).filter(([key]) => key.toLowerCase() === wanted);
  if (given.length === 0) return undefined;
  const [[, value]] = given as [[string, unknown]];
  if (given.length === 1 && typeof value === 'string') return value;
  throw badRequest(`query parameter ${name} must be given once`);
}

export interface Page {
  limit: number;
  /** Decoded cursor: where the previous page ended. */
  after: string | undefined;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/**
 * `limit` (default 100, max 1000) and an opaque `cursor` (docs/api.md). A cursor is the key
 * of the previous page's last item written as URL-safe text, never encoded: so that its
 * OpenAPI pattern describes exactly what is accepted, and any cursor that matches it is a
 * valid place to start (docs/decisions/0012). Each list parses its own key (`parseListPosition`).
 */
export function pageParams(req: Request, maxLimit = MAX_LIMIT): Page {
  const rawLimit = queryParam(req, 'limit');
  const limit = rawLimit === undefined ? DEFAULT_LIMIT : Number(rawLimit);
  if (!/^[0-9]+$/.test(rawLimit ?? '1') || !Number.isInteger(limit) || limit < 1 || limit > maxLimit) {
    throw badRequest(`limit: must be an integer from 1 to ${maxLimit}`);
  }
  return { limit, after: queryParam(req, 'cursor') };
}

/**
 * When a page is full, sets `Link: <…>; rel="next"` to the same URL with the cursor of
 * its last item (the body shape stays as the contract says).
 */
export function setNextLink(
  req: Request,
  res: Response,
  publicBaseUrl: string,
  page: Page,
  lastKey: string | undefined,
  count: number,
): void {
  const cursor = nextCursor(page, lastKey, count);
  if (cursor === null) return;
  const url = new URL(req.originalUrl, publicBaseUrl);
  for (const key of [...url.searchParams.keys()]) if (key.toLowerCase() === 'cursor') url.searchParams.delete(key);
  url.searchParams.set('cursor', cursor);
  res.set('Link', `<${url.toString()}>; rel="next"`);
}

const KEYSET = new RegExp(KEYSET_CURSOR_PATTERN);

/** Where a page of a newest-first list ended (the cursor `<position>.<id>`), or null on a first page. */
export function parseListPosition(page: Page): ListPosition | null {
  if (page.after === undefined) return null;
  if (!KEYSET.test(page.after)) throw badRequest(`cursor: must match ${KEYSET_CURSOR_PATTERN}`);
  const dot = page.after.indexOf('.');
  return { position: Number(page.after.slice(0, dot)), id: page.after.slice(dot + 1) };
}

/**
 * One page of a newest-first list (docs/api.md "Listing filters"): `read` gets the page size
 * and where the previous page ended, and tells where this one ends; a full page links to the
 * next one.
 */
export async function sendNewestFirst<P extends ListPage<unknown>>(
  req: Request,
  res: Response,
  publicBaseUrl: string,
  list: {
    read: (limit: number, after: ListPosition | null) => Promise<P>;
    /** The answer's body; `page`: the page as read, with what else its reader told of it. */
    body: (items: P['items'], page: P) => object | Promise<object>;
  },
): Promise<void> {
  const page = pageParams(req);
  const found = await list.read(page.limit, parseListPosition(page));
  const last = found.last && `${found.last.position}.${found.last.id}`;
  setNextLink(req, res, publicBaseUrl, page, last ?? undefined, found.items.length);
  sendJson(res, await list.body(found.items, found));
}

/**
 * One page of a resource's history (docs/api.md "History"), oldest first, paginated as lists:
 * `cursor` is the generation and position of the previous page's last entry. `read` reads that
 * page alone.
 */
export async function sendHistory(
  req: Request,
  res: Response,
  publicBaseUrl: string,
  read: (page: HistoryPageRequest) => Promise<ReadonlyArray<HistoryEntry & { cursor: string }>>,
): Promise<void> {
  const page = pageParams(req);
  if (page.after !== undefined && !HISTORY_CURSOR.test(page.after))
    throw badRequest(`cursor: must match ${HISTORY_CURSOR_PATTERN}`);
  const [generation, order] = (page.after ?? '').split('.').map(Number);
  const found = await read({
    after: page.after === undefined ? null : { generation: generation!, order: order! },
    limit: page.limit,
  });
  setNextLink(req, res, publicBaseUrl, page, found.at(-1)?.cursor, found.length);
  sendJson(res, { history: found.map(({ cursor: _cursor, ...entry }) => entry) });
}

const HISTORY_CURSOR = new RegExp(HISTORY_CURSOR_PATTERN);

/**
 * A change of one of a user's resources (docs/api.md: remove, activate, suspend, usage): the use
 * case gets the caller, the user, the resource's id from the path and the generation
 * If-Match requires; the answer is 204.
 */
export function userResourceChange<R>(
  id: { name: string; schema: z.ZodType<string> },
  act: (principal: Principal, userId: string, id: string, ifMatch: number | undefined) => Promise<R>,
  /** Headers the change's outcome adds to the answer (for the gateway: docs/api.md "Entitlement checks"). */
  describe?: (res: Response, outcome: R) => void,
): RequestHandler {
  return async (req, res) => {
    const resourceId = parseParam(id.schema, id.name, req.params[id.name]);
    const outcome = await act(res.locals.principal, connectIdOf(req), resourceId, ifMatchGeneration(req));
    describe?.(res, outcome);
    sendDone(res);
  };
}

/**
 * The id a create must give its resource, when the gateway derived one from an
 * Idempotency-Key (docs/api.md); otherwise the service makes a new one.
 */
export function resourceIdOf(req: Request): string | undefined {
  const id = req.get(RESOURCE_ID_HEADER);
  return id !== undefined && /^[0-9A-Za-z]{1,64}$/.test(id) ? id : undefined;
}

/** The user of a `/id/users/{connectId}/…` path (docs/api.md). */
export const connectIdOf = (req: Request): string => parseParam(ConnectId, 'connectId', req.params.connectId);

/** The cursor of the page after this one, or null when this page is the last. */
export function nextCursor(page: Page, lastKey: string | undefined, count: number): string | null {
  if (count < page.limit || lastKey === undefined) return null;
  return lastKey;
}

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * Answers with `body` as JSON, with the status set before: the answer Express's `res.json`
 * gives, written directly. Express's looks its settings up, parses and rebuilds the content
 * type and reads the request's freshness on every answer, a measurable part of a check's CPU
 * (docs/performance.md, 2026-12-06). A conditional request (`If-None-Match`,
 * `If-Modified-Since`) still goes through Express, which answers 304 when the ETag matches.
 */
export function sendJson(res: Response, body: object): void {
  const { req } = res;
  if (req.headers['if-none-match'] !== undefined || req.headers['if-modified-since'] !== undefined) {
    res.json(body);
    return;
  }
  const text = JSON.stringify(body);
  res.setHeader('Content-Type', JSON_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(text));
  if (req.method === 'HEAD') res.end();
  else res.end(text);
}

/** `ETag: "<generation>"` (docs/api.md "generation"). */
export function setETag(res: Response, generation: number | string): void {
  res.setHeader('ETag', `"${generation}"`);
}

/** docs/api.md: the representation, its generation as the ETag. */
export function sendResource(res: Response, generation: number, view: object): void {
  setETag(res, generation);
  sendJson(res, view);
}

/** docs/api.md "Find by id": the resource found by its id alone, `Content-Location` its own URL. */
export function sendFound(res: Response, generation: number, view: { href: string }): void {
  res.set('Content-Location', view.href);
  sendResource(res, generation, view);
}

/** docs/api.md: 201, the ETag, `Location` the new resource's href, and its representation. */
export function sendCreated(res: Response, generation: number, view: { href: string }): void {
  setETag(res, generation);
  sendJson(res.status(201).location(view.href), view);
}

/** A change done: 204, no body (docs/api.md). */
export function sendDone(res: Response): void {
  res.status(204).end();
}

const IF_MATCH = new RegExp(IF_MATCH_PATTERN);

/** The generation an `If-Match` header requires, or undefined when there is none. */
export function ifMatchGeneration(req: Request): number | undefined {
  const header = req.get('if-match');
  if (header === undefined) return undefined;
  const match = IF_MATCH.exec(header);
  if (!match) throw preconditionFailed(`If-Match: ${header.slice(0, 64)} does not name a generation of this resource`);
  return Number(/[0-9]+/.exec(match[0])![0]);
}

/** Parses with a zod schema; the 400 message names each field and the reason. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const field = issue.path.join('.');
    if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`;
    return field ? `${field}: ${issue.message}` : issue.message;
  });
  throw badRequest(problems.join('; '));
}

export function parseParam<T>(schema: z.ZodType<T>, name: string, value: unknown): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw badRequest(`${name}: ${result.error.issues[0]?.message ?? 'invalid'}`);
}

/**
 * Paging through numbered buckets 0…count-1, an internal listing read a bucket at a time
 * (docs/decisions/0011, docs/operations.md): the cursor is `<bucket>` for a bucket's first page or
 * `<bucket>.<id>` for the page after that id; a page holds up to `limit` entries in id order,
 * so a reader holds a page, never a bucket, and walks only the buckets it asks for.
 */
export function bucketPage(page: Page, count: number): { bucket: number; after: string | undefined; limit: number } {
  const cursor = /^([0-9]{1,6})(?:\.(.+))?$/s.exec(page.after ?? '0');
  const bucket = Number(cursor?.[1]);
  if (!cursor || bucket >= count)
    throw badRequest(`cursor: must be <bucket> or <bucket>.<id>, the bucket below ${count}`);
  return { bucket, after: cursor[2], limit: page.limit };
}

/**
 * Aborted when the client stops waiting for this response: it closed the connection before the
 * response was done (the gateway does at its deadline, UPSTREAM_TIMEOUT_MS). A change given it
 * is not started once its caller has gone (`untilStored`; docs/decisions/0077).
 */
export function callerSignal(res: Response): AbortSignal {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}
