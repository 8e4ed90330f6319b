/**
 * Which operation of the contract a request is, and what it takes to call it (spec 4 and
 * 5, DESIGN.md 3 "Principals and authorization"). Pure: no I/O.
 */
export type Scope = 'id.user.sub.read' | 'id.user.right.read' | 'id.user.right.use';
export type OwningService = 'subscriptions' | 'rights' | 'catalog';

export interface Operation {
  service: OwningService;
  /** The user of a /id/users/{connectId}/… path. */
  connectId: string | null;
  /** null: Basic only (spec 5). Otherwise Bearer may call it with this scope. */
  bearerScope: Scope | null;
  /** A list without the grantor filter is redirected for non-admins (spec 5 rule 2). */
  list: 'subscriptions' | 'rights' | null;
  /** Only admin clients (the catalog's admin API). */
  adminOnly: boolean;
}

const USER_PATH = /^\/id\/users\/([^/]+)\/(subs|rights)(?:\/([^/]+)(?:\/([^/]+))?)?\/?$/;

export function classify(method: string, path: string): Operation | null {
  if (path === '/catalog' || path.startsWith('/catalog/')) {
    return { service: 'catalog', connectId: null, bearerScope: null, list: null, adminOnly: true };
  }
  const match = USER_PATH.exec(path);
  if (!match) {
    const other = /^\/id\/users\/([^/]+)\/(subs|rights)\//.exec(path);
    if (!other) return null;
    // Deeper paths under a user's resources: Basic only; the service answers 404.
    return {
      service: other[2] === 'subs' ? 'subscriptions' : 'rights',
      connectId: decode(other[1]!),
      bearerScope: null,
      list: null,
      adminOnly: false,
    };
  }
  const [, rawConnectId, collection, id, action] = match;
  const service: OwningService = collection === 'subs' ? 'subscriptions' : 'rights';
  const connectId = decode(rawConnectId!);
  const read: Scope = service === 'subscriptions' ? 'id.user.sub.read' : 'id.user.right.read';
  let bearerScope: Scope | null = null;
  let list: Operation['list'] = null;
  if (method === 'GET' && !id) {
    bearerScope = read;
    list = service;
  } else if (method === 'GET' && id && !action) {
    bearerScope = read;
  } else if (method === 'POST' && service === 'rights' && action === 'usage') {
    bearerScope = 'id.user.right.use';
  }
  return { service, connectId, bearerScope, list, adminOnly: false };
}

const USER = /^\/id\/users\/[^/]+\/?$/;

/**
 * Whether a Bearer token may call the endpoint at all (spec 5). On Basic-only endpoints any
 * Bearer header, even an empty or invalid one, is answered with the Basic challenge
 * (DESIGN.md 3 "Challenges").
 */
export function acceptsBearer(method: string, path: string): boolean {
  if (USER.test(path)) return method === 'GET' || method === 'HEAD';
  return (classify(method, path)?.bearerScope ?? null) !== null;
}

/**
 * Operations whose success answers with a JSON body, and every subscription operation
 * (spec 4 "Accept: application/json"): the ones an `Accept` without JSON makes 406
 * (DESIGN.md 3 "Content negotiation").
 */
export function answersJson(method: string, path: string): boolean {
  if (method === 'GET' || method === 'HEAD' || method === 'PUT') return !path.startsWith('/admin/revoked-tokens/');
  const match = USER_PATH.exec(path);
  if (!match) return false;
  const [, , collection, id] = match;
  return collection === 'subs' || (method === 'POST' && id === undefined);
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The query parameter that filters a list by grantor (DESIGN.md 3 "307"). */
export const GRANTOR_FILTER: Record<'subscriptions' | 'rights', string> = {
  subscriptions: 'grantorid',
  rights: 'grantorId',
};

/** The grantor filter of a query, its name matched case-insensitively (DESIGN.md 3). */
export function grantorFilter(query: URLSearchParams): string | null {
  for (const [key, value] of query) if (key.toLowerCase() === 'grantorid') return value;
  return null;
}

/**
 * spec 5 rule 2 and DESIGN.md 3 "307": a non-admin listing without the grantor filter is
 * sent to the same URL with its own grantor added, every other parameter kept.
 */
export function redirectLocation(
  publicBaseUrl: string,
  originalUrl: string,
  list: 'subscriptions' | 'rights',
  grantorId: string,
): string {
  const url = new URL(originalUrl, `${publicBaseUrl}/`);
  const target = new URL(`${publicBaseUrl}${url.pathname}`);
  url.searchParams.forEach((value, key) => target.searchParams.append(key, value));
  target.searchParams.append(GRANTOR_FILTER[list], grantorId);
  return target.toString();
}
