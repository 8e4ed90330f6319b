import type { Request, Response } from 'express';
import type { z } from 'zod';
import { badRequest, preconditionFailed } from './errors';

/** DESIGN.md 3 "Listing filters": query parameter names match case-insensitively. */
export function queryParam(req: Request, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(req.query)) {
    if (key.toLowerCase() !== wanted) continue;
    if (typeof value === 'string') return value;
    throw badRequest(`query parameter ${name} must be given once`);
  }
  return undefined;
}

export interface Page {
  limit: number;
  /** Decoded cursor: where the previous page ended. */
  after: string | undefined;
}

const DEFAULT_LIMIT = 100;
const MAX_LIMIT = 1000;

/** `limit` (default 100, max 1000) and an opaque `cursor` (DESIGN.md 3). */
export function pageParams(req: Request): Page {
  const rawLimit = queryParam(req, 'limit');
  const limit = rawLimit === undefined ? DEFAULT_LIMIT : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw badRequest(`limit: must be an integer from 1 to ${MAX_LIMIT}`);
  }
  const cursor = queryParam(req, 'cursor');
  if (cursor === undefined) return { limit, after: undefined };
  const after = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!after || Buffer.from(after, 'utf8').toString('base64url') !== cursor)
    throw badRequest('cursor: not a cursor this service issued');
  return { limit, after };
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

/** Where a page of a newest-first list ended: the creation time and id of its last item. */
export interface Keyset {
  createdAt: Date;
  id: string;
}

const KEYSET = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)\|([0-9A-Za-z]+)$/;

/** The cursor key of a newest-first list (the opaque `cursor` encodes it). */
export const keysetOf = (item: { createdAt: Date }, id: string) => `${item.createdAt.toISOString()}|${id}`;

export function parseKeyset(page: Page): Keyset | null {
  if (page.after === undefined) return null;
  const match = KEYSET.exec(page.after);
  if (!match) throw badRequest('cursor: not a cursor this service issued');
  return { createdAt: new Date(match[1]!), id: match[2]! };
}

/** The opaque cursor of the page after this one, or null when this page is the last. */
export function nextCursor(page: Page, lastKey: string | undefined, count: number): string | null {
  if (count < page.limit || lastKey === undefined) return null;
  return Buffer.from(lastKey, 'utf8').toString('base64url');
}

/** `ETag: "<generation>"` (DESIGN.md 3 "generation"). */
export function setETag(res: Response, generation: number | string): void {
  res.set('ETag', `"${generation}"`);
}

/** The generation an `If-Match` header requires, or undefined when there is none. */
export function ifMatchGeneration(req: Request): number | undefined {
  const header = req.get('if-match');
  if (header === undefined) return undefined;
  const match = /^\s*(?:W\/)?"([1-9][0-9]*)"\s*$/.exec(header);
  if (!match) throw preconditionFailed(`If-Match: ${header.slice(0, 64)} does not name a generation of this resource`);
  return Number(match[1]);
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

/** Paging through numbered buckets 0…count-1: an internal listing read a bucket at a time. */
export function bucketPage(page: Page, count: number): { bucket: number; next: string | null } {
  const bucket = page.after === undefined ? 0 : Number(page.after);
  if (!Number.isInteger(bucket) || bucket < 0 || bucket >= count)
    throw badRequest('cursor: not a cursor this service issued');
  return { bucket, next: bucket + 1 < count ? Buffer.from(String(bucket + 1), 'utf8').toString('base64url') : null };
}
