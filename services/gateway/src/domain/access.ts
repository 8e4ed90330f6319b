import { pathParameters, ROUTES, type Principal, type PublicRoute, type RouteOwner, type Scope } from '@rs/contracts';

/**
 * Which route of the table a request is, and whether its caller may call it (spec 4 and 5,
 * DESIGN.md 3 "Principals and authorization"). Pure: no I/O. Derived from the route table
 * (@rs/contracts routes.ts), like the services' routes and the OpenAPI document.
 */
export interface Operation {
  /** The route of the table; null for a path a service owns that no route names (it answers 404 or 405). */
  route: PublicRoute | null;
  owner: RouteOwner;
  /** The user of a /id/users/{connectId}… path. */
  connectId: string | null;
  caller: PublicRoute['caller'];
  bearer: PublicRoute['bearer'];
  list: 'subscriptions' | 'rights' | null;
  json: boolean;
}

const TABLE = ROUTES.map((route: PublicRoute) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '([^/]+)')}/?$`),
  connectIdAt: pathParameters(route.path).indexOf('connectId'),
}));
const UNDER_USER = /^\/id\/users\/([^/]+)\/(subs|rights)(?:\/|$)/;

export function classify(method: string, path: string): Operation | null {
  const wanted = method === 'HEAD' ? 'GET' : method;
  for (const { route, pattern, connectIdAt } of TABLE) {
    if (route.method !== wanted) continue;
    const match = pattern.exec(path);
    if (!match) continue;
    return {
      route,
      owner: route.owner,
      connectId: connectIdAt < 0 ? null : decode(match[connectIdAt + 1]!),
      caller: route.caller,
      bearer: route.bearer,
      list: 'list' in route ? (route.list ?? null) : null,
      json: route.json,
    };
  }
  // Paths no route names, under what a service owns: forwarded for the service to answer
  // 404 or 405, after the same authentication (Basic only; the catalog admins only).
  const fallback = { route: null, bearer: null, list: null, json: false } as const;
  if (path === '/catalog' || path.startsWith('/catalog/'))
    return { ...fallback, owner: 'catalog', connectId: null, caller: 'admin' };
  if (path === '/webhooks' || path.startsWith('/webhooks/'))
    return { ...fallback, owner: 'webhooks', connectId: null, caller: 'client' };
  const under = UNDER_USER.exec(path);
  if (under) {
    const owner = under[2] === 'subs' ? 'subscriptions' : 'rights';
    return { ...fallback, owner, connectId: decode(under[1]!), caller: 'client' };
  }
  return null;
}

/**
 * Whether a Bearer token may call the endpoint at all (spec 5). On Basic-only endpoints any
 * Bearer header, even an empty or invalid one, is answered with the Basic challenge
 * (DESIGN.md 3 "Challenges").
 */
export function acceptsBearer(method: string, path: string): boolean {
  return (classify(method, path)?.bearer ?? null) !== null;
}

/**
 * Operations that answer JSON, and every subscription operation (spec 4 "Accept:
 * application/json"): those an `Accept` without JSON makes 406 (DESIGN.md 3 "Content
 * negotiation").
 */
export function answersJson(method: string, path: string): boolean {
  return classify(method, path)?.json ?? false;
}

/** Why a caller may not call an operation, and so which challenge it gets (DESIGN.md 3 "Challenges"). */
export type Refusal =
  | { challenge: 'basic'; reason: string }
  | { challenge: 'bearer'; reason: string }
  | { challenge: 'insufficient_scope'; scope: Scope; reason: string }
  | { challenge: 'grantor_mismatch'; reason: string };

/**
 * spec 5 and DESIGN.md 3 "Principals and authorization": the one decision of who may call
 * what, for the gateway's own routes and those it forwards. null: allowed.
 */
export function authorize(operation: Operation, principal: Principal): Refusal | null {
  if (operation.caller === 'admin' && (principal.scheme !== 'basic' || !principal.admin))
    return { challenge: 'basic', reason: 'this operation needs the Basic credentials of an admin client' };
  if (principal.scheme !== 'bearer') return null;
  if (operation.bearer === null) return { challenge: 'basic', reason: 'this operation needs Basic credentials' };
  // A Bearer token acts for its user only, unless its client is an admin (DESIGN.md 3).
  if (operation.connectId !== null && !principal.admin && principal.subject !== operation.connectId)
    return { challenge: 'bearer', reason: 'token not issued for this user' };
  if (operation.bearer !== 'any' && !principal.scopes.includes(operation.bearer))
    return {
      challenge: 'insufficient_scope',
      scope: operation.bearer,
      reason: `the token lacks the scope ${operation.bearer}`,
    };
  return null;
}

/**
 * spec 5 rules 2 and 5: a non-admin lists only with its grantor as the filter. Without a
 * filter it is redirected (307) with its own grantor added; a Basic client naming another
 * grantor in a rights list gets the "different challenge".
 */
export function listRule(
  operation: Operation,
  principal: Principal,
  filter: string | null,
): { redirectWith: string } | Refusal | null {
  if (operation.list === null || principal.admin) return null;
  if (filter === null) return { redirectWith: principal.grantorId ?? '' };
  if (operation.list === 'rights' && principal.scheme === 'basic' && filter !== principal.grantorId)
    return { challenge: 'grantor_mismatch', reason: 'you may list only the rights of your own grantor' };
  return null;
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
