import { ROUTES, type Principal, type PublicRoute, type RouteOwner, type Scope } from '@rs/contracts';

/**
 * Which route of the table a request is, and whether its caller may call it (docs/api.md,
 * docs/api.md "Principals and authorization"). Pure: no I/O. Derived from the route table
 * (@rs/contracts `routes/routes.ts`), like the services' routes and the OpenAPI document.
 */
export interface Operation {
  /** The route of the table. */
  route: PublicRoute;
  owner: RouteOwner;
  /** The user of a /id/users/{connectId}… path, percent-decoded. */
  connectId: string | null;
  /** The path's parameters by their names in the template, each percent-decoded once. */
  params: Record<string, string>;
  caller: PublicRoute['caller'];
  bearer: PublicRoute['bearer'];
  list: 'subscriptions' | 'rights' | null;
  json: boolean;
}

/** What the edge makes of a request's method and path, before anything else is looked at (docs/api.md). */
export type Classified =
  | { kind: 'operation'; operation: Operation }
  | { kind: 'not_found' }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'malformed' };

/** A template's segments: a literal to compare exactly, or a parameter (null), and the parameters' names by position. */
const TABLE = ROUTES.map((route: PublicRoute) => {
  const named = route.path.split('/').map((segment) => /^\{([^}]+)\}$/.exec(segment)?.[1] ?? null);
  return {
    route,
    segments: route.path.split('/').map((segment, i) => (named[i] === null ? segment : null)),
    names: named.flatMap((name, at) => (name === null ? [] : [{ name, at }])),
  };
});

/** A `%` not followed by two hex digits. */
const BAD_ESCAPE = /%(?![0-9A-Fa-f]{2})/;

/**
 * docs/api.md "Routes match exactly": which route of the table a request is. `rawPath` is the
 * path as sent (percent-encoded, before any normalization). Literal segments compare exactly:
 * another letter case, an encoded letter, an empty segment (a trailing or doubled slash) or a
 * dot segment is another path, which no route names (404; 405 when the path is named for
 * other methods). A parameter is one non-empty segment, not a dot segment, decoded once;
 * malformed percent-encoding anywhere is refused (400). Its pattern is checked where it is
 * used. HEAD is GET without the body.
 */
export function classify(method: string, rawPath: string): Classified {
  if (BAD_ESCAPE.test(rawPath)) return { kind: 'malformed' };
  const segments = rawPath.split('/');
  const wanted = method === 'HEAD' ? 'GET' : method;
  // Plain loops, no closures: this runs for every request (docs/performance.md, 2026-12-02 (day)).
  let allow: Set<string> | undefined;
  for (const { route, segments: template, names } of TABLE) {
    if (!matches(template, segments)) continue;
    if (route.method !== wanted) {
      (allow ??= new Set()).add(route.method);
      continue;
    }
    for (const segment of segments) if (!decodes(segment)) return { kind: 'malformed' };
    const params: Record<string, string> = {};
    for (const { name, at } of names) params[name] = decodeURIComponent(segments[at]!);
    return {
      kind: 'operation',
      operation: {
        route,
        owner: route.owner,
        connectId: params.connectId ?? null,
        params,
        caller: route.caller,
        bearer: route.bearer,
        list: 'list' in route ? (route.list ?? null) : null,
        json: route.json,
      },
    };
  }
  if (allow === undefined) return { kind: 'not_found' };
  if (allow.has('GET')) allow.add('HEAD');
  return { kind: 'method_not_allowed', allow: [...allow] };
}

function matches(template: ReadonlyArray<string | null>, segments: readonly string[]): boolean {
  if (template.length !== segments.length) return false;
  for (let i = 0; i < template.length; i++) {
    const literal = template[i];
    const segment = segments[i]!;
    if (literal !== null ? segment !== literal : segment === '' || DOT_SEGMENT.test(segment)) return false;
  }
  return true;
}

/** `.` and `..`, also encoded (`%2e`): never a parameter (RFC 3986 5.2.4 would remove them). */
const DOT_SEGMENT = /^(?:\.|%2[eE]){1,2}$/;

function decodes(segment: string): boolean {
  if (!segment.includes('%')) return true;
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

const READ_METHODS = new Set(['GET', 'HEAD']);

/** Why a caller may not call an operation, and so which challenge it gets (docs/api.md "Challenges"). */
export type Refusal =
  | { challenge: 'basic'; reason: string }
  | { challenge: 'bearer'; reason: string }
  | { challenge: 'insufficient_scope'; scope: Scope | 'write'; reason: string }
  | { challenge: 'grantor_mismatch'; reason: string };

/**
 * docs/api.md "Principals and authorization": the one decision of who may call
 * what, for the gateway's own routes and those it forwards. null: allowed.
 */
export function authorize(operation: Operation, principal: Principal): Refusal | null {
  const adminCaller =
    principal.admin && ((principal.scheme === 'basic' && !principal.limitedTo) || principal.scheme === 'staff');
  if (operation.caller === 'admin' && !adminCaller)
    return { challenge: 'basic', reason: 'this operation needs the Basic credentials of an admin client' };
  // Staff act on any user of their grantors (the services decide which), changing with `write`.
  if (principal.scheme === 'staff')
    return READ_METHODS.has(operation.route.method) || principal.staff?.write
      ? null
      : { challenge: 'insufficient_scope', scope: 'write', reason: 'a staff member needs the write role to change' };
  if (principal.limitedTo) return withinScopes(operation, principal.limitedTo);
  if (principal.scheme !== 'bearer') return null;
  if (operation.bearer === null) return { challenge: 'basic', reason: 'this operation needs Basic credentials' };
  // A Bearer token acts for its user only, unless its client is an admin (docs/api.md).
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

/** A client-credentials token: what its client may do, on the routes whose scope it carries. */
function withinScopes(operation: Operation, scopes: readonly string[]): Refusal | null {
  if (operation.bearer === null) return { challenge: 'basic', reason: 'this operation needs Basic credentials' };
  if (operation.bearer === 'any' || scopes.includes(operation.bearer)) return null;
  return {
    challenge: 'insufficient_scope',
    scope: operation.bearer,
    reason: `the token lacks the scope ${operation.bearer}`,
  };
}

/**
 * docs/api.md "307": a non-admin lists only with its grantor as the filter. Without a
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

/** Whose budget a call spends: a Basic client's, a (client, user) pair's of Bearer calls, or a source address's. */
export type BudgetKind = 'client' | 'user' | 'address';
export interface Budget {
  kind: BudgetKind;
  /** Unique within its kind. */
  key: string;
}

/**
 * Budgets and Idempotency-Keys belong to one principal (docs/security.md): a Basic
 * client spends its own budget and keys; each (client, user) pair of Bearer calls has its
 * own, apart from the client's, so a user's app can neither spend its grantor's budget nor
 * collide with its keys. (A client id holds no space, so the pair's key is unambiguous.)
 */
export function budgetOf(principal: Principal | undefined, sourceAddress: string): Budget {
  // An open route (no principal) spends its source address's.
  if (principal === undefined) return { kind: 'address', key: sourceAddress };
  if (principal.person) return { kind: 'user', key: `staff ${principal.person.issuer} ${principal.person.subject}` };
  return principal.scheme === 'bearer'
    ? { kind: 'user', key: `${principal.clientId} ${principal.subject ?? ''}` }
    : { kind: 'client', key: principal.clientId };
}

/** The query parameter that filters a list by grantor (docs/api.md "307"). */
export const GRANTOR_FILTER: Record<'subscriptions' | 'rights', string> = {
  subscriptions: 'grantorid',
  rights: 'grantorId',
};

/**
 * The grantor filter of a query, its name matched case-insensitively (docs/api.md): null when
 * absent, `twice` when given more than once in any spellings (`grantorid=x&grantorId=y`), which
 * is as malformed as one name given twice.
 */
export function grantorFilter(query: URLSearchParams): string | null | 'twice' {
  const values: string[] = [];
  for (const [key, value] of query) if (key.toLowerCase() === 'grantorid') values.push(value);
  if (values.length > 1) return 'twice';
  return values[0] ?? null;
}

/**
 * docs/api.md "307": a non-admin listing without the grantor filter is
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
