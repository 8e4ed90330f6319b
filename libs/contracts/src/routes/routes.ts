/**
 * The route table: every public route of the gateway, once. The gateway's
 * forwarding and authorization (services/gateway/src/domain/access.ts), each service's
 * routes (`serveRoutes` in @rs/http) and the OpenAPI document (docs/openapi.ts) are all derived
 * from it, so they cannot disagree. What a route says about who may call it, and its statuses,
 * are docs/api.md's ("Principals and authorization", "Error bodies").
 */
import { ACTIVE_FILTER_PATTERN, DATE_TIME_PATTERN } from '../schemas/formats';

/** The scopes of docs/api.md. */
export const SCOPES = ['id.user.sub.read', 'id.user.right.read', 'id.user.right.use'] as const;
export type Scope = (typeof SCOPES)[number];
export type RouteOwner = 'gateway' | 'subscriptions' | 'rights' | 'catalog' | 'webhooks' | 'scheduler';
export type RouteMethod = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** OpenAPI fragments the table keeps with its routes (see docs/openapi.ts for how they are completed). */
type Responses = Readonly<Record<string, unknown>>;

export interface PublicRoute {
  readonly operationId: string;
  readonly method: RouteMethod;
  /** An OpenAPI path template, e.g. `/id/users/{connectId}/rights/{rightId}`. */
  readonly path: string;
  /** Who answers it: the gateway itself, or the service it forwards to. */
  readonly owner: RouteOwner;
  /** docs/api.md: `none` needs no credentials; `admin`, the Basic credentials of an admin client; `client`, any caller. */
  readonly caller: 'none' | 'admin' | 'client';
  /**
   * docs/api.md: whether a Bearer token may call it: with this scope, with any scope (`any`,
   * still only for its own user), or not at all (null: Basic only).
   */
  readonly bearer: Scope | 'any' | null;
  /** docs/api.md "307": a list a non-admin must filter by its grantor (307 otherwise). */
  readonly list?: 'subscriptions' | 'rights';
  /**
   * docs/api.md "Content negotiation": it answers JSON (every subscription operation does, spec
   * 4), so an Accept header without JSON gets 406.
   */
  readonly json: boolean;
  /** The change is guarded by If-Match (docs/api.md "Concurrency"). */
  readonly ifMatch?: boolean;
  readonly tag:
    'meta' | 'admin' | 'users' | 'rights' | 'subscriptions' | 'entitlements' | 'catalog' | 'webhooks' | 'clocks';
  readonly summary: string;
  /** The name of the request body's schema in the OpenAPI components. */
  readonly body?: { readonly schema: string; readonly required: boolean };
  /** Query parameters, as OpenAPI parameter objects or references. */
  readonly query?: readonly unknown[];
  /** The statuses that are the operation's own; those every route shares are added from the fields above. */
  readonly responses: Responses;
}

const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });

/** The files of the API reference page (`GET /docs/{asset}`): Swagger UI's, and the page's own start-up script. */
export const API_REFERENCE_ASSETS = ['swagger-ui.css', 'swagger-ui-bundle.js', 'reference.js'] as const;
const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
const json = (schema: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
const etag = { ETag: { description: 'The generation of the resource, quoted', schema: { type: 'string' } } };
const created = (schema: string) => ({
  description: 'Created',
  headers: { ...etag, Location: { schema: { type: 'string' } } },
  content: json(schema),
});
const one = (description: string, schema: string) => ({ description, headers: etag, content: json(schema) });
const page = (description: string, schema: string) => ({
  description,
  headers: { Link: { schema: { type: 'string' } } },
  content: json(schema),
});
/** A PUT that creates (201) or finds the resource there already (204). */
const createdOrNot = (created: { description: string; content?: unknown }, not: string) => ({
  '201': created,
  '204': { description: not },
});
const redirect = {
  description: "Redirect to the same list with the caller's grantor",
  headers: { Location: { schema: { type: 'string' } } },
};
const grantorQuery = (name: string) => ({
  name,
  in: 'query',
  description: 'Matched case-insensitively by name',
  schema: { type: 'string' },
  example: 'acme',
});

type Named<W extends RouteOwner, O extends string> = { owner: W; operationId: O; path: string; summary: string };

/** A GET anyone may call, without credentials, answering JSON. */
const openRoute = <const W extends RouteOwner, const O extends string>(
  route: Named<W, O> & { tag: PublicRoute['tag']; responses: Responses },
) => ({ ...route, method: 'GET', caller: 'none', bearer: null, json: true }) as const;

/** A route only admin clients may call, with their Basic credentials (docs/operations.md). */
const adminRoute = <const W extends Exclude<RouteOwner, 'subscriptions'>, const O extends string>(
  route: Named<W, O> & { tag: PublicRoute['tag']; method: RouteMethod } & Pick<
      PublicRoute,
      'json' | 'ifMatch' | 'body' | 'query' | 'responses'
    >,
) => ({ ...route, caller: 'admin', bearer: null }) as const;

/** An admin's list, a page at a time in key order; `cursor` names its cursor parameter. */
const adminList = <const W extends Exclude<RouteOwner, 'subscriptions'>, const O extends string>(
  route: Named<W, O> & { tag: PublicRoute['tag']; cursor: string; page: [description: string, schema: string] },
) => {
  const {
    cursor,
    page: [description, schema],
    ...named
  } = route;
  return adminRoute({
    ...named,
    method: 'GET',
    json: true,
    query: [param('limit'), param(cursor)],
    responses: { '200': page(`${description}; \`Link: <…>; rel="next"\` when more exist`, schema) },
  });
};

/** A route under a user's rights or subscriptions (docs/api.md): any client may call it, Bearer only with a scope (docs/api.md). */
const userRoute = <const W extends 'rights' | 'subscriptions', const O extends string>(
  route: Named<W, O> & { method: RouteMethod } & Pick<
      PublicRoute,
      'list' | 'ifMatch' | 'body' | 'query' | 'responses'
    > & {
      bearer?: Scope;
      json?: boolean;
    },
) =>
  ({
    ...route,
    caller: 'client',
    bearer: route.bearer ?? null,
    json: route.json ?? route.owner === 'subscriptions',
    tag: route.owner,
  }) as const;

/** A change of a user's right or subscription, guarded by If-Match and answering 204 (docs/api.md). */
const change = <const W extends 'rights' | 'subscriptions', const O extends string>(
  route: Named<W, O> & { method: 'POST' | 'DELETE'; conflict?: boolean; bearer?: Scope } & Pick<PublicRoute, 'body'>,
) => {
  const { conflict, bearer, ...named } = route;
  return userRoute({
    ...named,
    ifMatch: true,
    ...(bearer ? { bearer } : {}),
    responses: { '204': { description: 'Done' }, ...(conflict ? { '409': ref('Conflict') } : {}) },
  });
};

/**
 * docs/api.md "Webhooks": Basic only; a client manages the endpoints of its own grantor, an
 * admin any (the webhooks service decides; another grantor's endpoint is 404).
 */
const webhookRoute = <const O extends string>(
  route: Omit<Named<'webhooks', O>, 'owner'> & { method: RouteMethod } & Pick<
      PublicRoute,
      'body' | 'query' | 'responses'
    > & { json?: boolean },
) =>
  ({
    ...route,
    owner: 'webhooks',
    caller: 'client',
    bearer: null,
    json: route.json ?? true,
    tag: 'webhooks',
  }) as const;
/**
 * docs/decisions/0048 "Test clocks": Basic only; a client works with the clocks of its own
 * grantor, an admin with any (the scheduler decides; another grantor's clock is 404).
 */
const clockRoute = <const O extends string>(
  route: Omit<Named<'scheduler', O>, 'owner'> & { method: RouteMethod } & Pick<PublicRoute, 'body' | 'responses'>,
) => ({ ...route, owner: 'scheduler', caller: 'client', bearer: null, json: true, tag: 'clocks' }) as const;
const CLOCK = '/clocks/{clockId}';

const ENDPOINTS = '/webhooks/endpoints';
const ENDPOINT = `${ENDPOINTS}/{endpointId}`;

const SUBSCRIPTIONS = '/id/users/{connectId}/subs';
const SUBSCRIPTION = `${SUBSCRIPTIONS}/{subscriptionId}`;
const RIGHTS = '/id/users/{connectId}/rights';
const RIGHT = `${RIGHTS}/{rightId}`;
/**
 * docs/api.md "Find by id": a right or subscription by its id alone, whichever user's it is,
 * for a Basic client or a staff member who may see it (a user's app knows its user's paths).
 */
const findById = <const W extends 'rights' | 'subscriptions', const O extends string>(route: {
  owner: W;
  operationId: O;
  path: string;
}) => {
  const what = route.owner === 'rights' ? 'Right' : 'Subscription';
  return userRoute({
    ...route,
    method: 'GET',
    summary: `Find a ${what.toLowerCase()} by its id alone: answered as its own URL answers it, which Content-Location names`,
    json: true,
    responses: {
      '200': {
        description: `The ${what.toLowerCase()}`,
        headers: { ...etag, 'Content-Location': { description: 'Its own URL', schema: { type: 'string' } } },
        content: json(what),
      },
      '404': ref('NotFound'),
    },
  });
};
/** docs/api.md "History": for whoever may read the resource; kept after it is removed (for its grantor and admins). */
const history = <const W extends 'rights' | 'subscriptions', const O extends string>(route: {
  owner: W;
  operationId: O;
  path: string;
  what: string;
  bearer: Scope;
}) =>
  userRoute({
    owner: route.owner,
    operationId: route.operationId,
    method: 'GET',
    path: `${route.path}/history`,
    summary: `Every change of a ${route.what}, oldest first`,
    bearer: route.bearer,
    json: true,
    query: [param('limit'), param('historyCursor')],
    responses: { '200': page('The changes, with who made them', 'HistoryPage') },
  });
const ENTITLEMENT = '/id/users/{connectId}/entitlements/{sku}';
/** The answer of a consumption by SKU, and of a reservation's commit. */
const CONSUMED = { '200': { description: 'What was taken from which right', content: json('Consumption') } };
const RESERVATION = `${ENTITLEMENT}/reservations/{reservationId}`;
/**
 * `?clockId=`: a read on a test clock (docs/api.md "Test clocks"). Without it only real-time
 * rights count where a read judges "now": a rehearsal never entitles anyone in real time.
 */
const clockQuery = (description: string) => ({
  name: 'clockId',
  in: 'query',
  description: `A test clock: ${description}`,
  schema: { type: 'string', pattern: '^[0-9A-Za-z]{1,64}$' },
  example: '0d4c2e8a1f3b5c7d9e0f1a2b3c4d5e6f',
});
/**
 * A consumption of a user's metered rights of a SKU (docs/api.md "Consumption by SKU"): the
 * rights service answers; who may is as for usage (a Bearer token with id.user.right.use).
 */
const entitlementChange = <const O extends string>(
  route: Omit<Named<'rights', O>, 'owner'> & { method: 'POST' | 'DELETE' } & Pick<PublicRoute, 'body' | 'responses'>,
) =>
  ({
    ...route,
    owner: 'rights',
    caller: 'client',
    bearer: 'id.user.right.use',
    json: true,
    tag: 'entitlements',
    responses: { ...route.responses, '409': ref('Conflict') },
  }) as const;
/** A filter of the audit log (docs/audit.md). */
const auditQuery = (name: string, description: string, example: string, dateTime = false) => ({
  name,
  in: 'query',
  description,
  schema: { type: 'string', minLength: 1, maxLength: 512, ...(dateTime ? { pattern: DATE_TIME_PATTERN } : {}) },
  example,
});
const LIST_SUMMARY = (what: string, filter: string) =>
  `List a user's ${what}, newest first (${filter} required for non-admins: 307 otherwise)`;

export const ROUTES = [
  openRoute({
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getOpenApi',
    path: '/openapi.json',
    summary: 'This document',
    responses: {
      '200': { description: 'The OpenAPI document', content: { 'application/json': {} } },
    },
  }),
  // This document as a page, in a browser, every asset served by the gateway (no CDN).
  {
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getApiReference',
    method: 'GET',
    path: '/docs',
    caller: 'none',
    bearer: null,
    json: false,
    summary: 'This document as a page to read and try in a browser (Swagger UI)',
    responses: { '200': { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
  // A browser pointed at the gateway lands on the API page.
  {
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getRoot',
    method: 'GET',
    path: '/',
    caller: 'none',
    bearer: null,
    json: false,
    summary: 'The API page: a redirect to /docs',
    responses: {
      '302': { description: 'To the API page', headers: { Location: { schema: { type: 'string' } } } },
    },
  },
  {
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getApiReferenceAsset',
    method: 'GET',
    path: '/docs/{asset}',
    caller: 'none',
    bearer: null,
    json: false,
    summary: "A script or style sheet of the page (its renderer's, served by the gateway)",
    responses: {
      '200': {
        description: 'The asset',
        content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } },
      },
      '404': ref('NotFound'),
    },
  },
  // docs/console.md: the console, a single page for support staff and operators.
  {
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getConsole',
    method: 'GET',
    path: '/console',
    caller: 'none',
    bearer: null,
    json: false,
    summary: 'The console: sign-in for staff, then their users, the audit log and the catalog (a single page)',
    responses: {
      '200': { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } } },
      '404': ref('NotFound'),
    },
  },
  {
    owner: 'gateway',
    tag: 'meta',
    operationId: 'getConsoleAsset',
    method: 'GET',
    path: '/console/assets/{consoleAsset}',
    caller: 'none',
    bearer: null,
    json: false,
    summary: "The console's script or style sheet, named by its content (cached for good)",
    responses: {
      '200': {
        description: 'The asset',
        content: { 'text/javascript': { schema: { type: 'string' } }, 'text/css': { schema: { type: 'string' } } },
      },
      '404': ref('NotFound'),
    },
  },
  // docs/operations.md: API clients and revoked tokens.
  adminRoute({
    owner: 'gateway',
    tag: 'admin',
    operationId: 'listClients',
    method: 'GET',
    path: '/admin/clients',
    summary: 'List API clients (never their secrets)',
    json: true,
    responses: { '200': { description: 'The clients', content: json('ClientList') } },
  }),
  adminRoute({
    owner: 'gateway',
    tag: 'admin',
    operationId: 'putClient',
    method: 'PUT',
    path: '/admin/clients/{clientId}',
    summary: 'Create or replace an API client; its secret is stored as a scrypt hash',
    json: true,
    body: { schema: 'ClientBody', required: true },
    responses: createdOrNot({ description: 'Created', content: json('ClientCreated') }, 'Replaced'),
  }),
  adminRoute({
    owner: 'gateway',
    tag: 'admin',
    operationId: 'deleteClient',
    method: 'DELETE',
    path: '/admin/clients/{clientId}',
    summary: 'Delete an API client; its credentials stop working within seconds',
    json: false,
    responses: { '204': { description: 'Deleted (also when unknown)' } },
  }),
  adminRoute({
    owner: 'gateway',
    tag: 'admin',
    operationId: 'revokeToken',
    method: 'PUT',
    path: '/admin/revoked-tokens/{jti}',
    summary: 'Refuse access tokens with this jti from now on',
    json: false,
    body: { schema: 'RevocationBody', required: false },
    responses: createdOrNot({ description: 'Revoked' }, 'Was already revoked'),
  }),
  // docs/audit.md: who changed what, and why.
  {
    owner: 'gateway',
    tag: 'admin',
    operationId: 'listAudit',
    method: 'GET',
    path: '/admin/audit',
    caller: 'client',
    bearer: null,
    json: true,
    summary:
      "The audit log, newest first: every change of an admin client or a staff member (admins and admin staff: all; other staff: their grantors')",
    query: [
      auditQuery('actor', "The actor's id: an API client's, or a staff member's `sub`", 'acme-agent'),
      auditQuery('subject', 'A resource: the entries about it and everything under it', '/id/users/alice'),
      auditQuery('grantorId', 'The grantor whose resources were changed', 'acme'),
      auditQuery('after', 'Entries at or after this instant', '2026-01-01T00:00:00Z', true),
      auditQuery('before', 'Entries before this instant', '2027-01-01T00:00:00Z', true),
      param('limit'),
      param('cursor'),
    ],
    responses: { '200': page('One page of entries, newest first', 'AuditPage') },
  },
  // docs/api.md "Users".
  adminList({
    owner: 'gateway',
    tag: 'users',
    operationId: 'listUsers',
    path: '/id/users',
    summary: 'List the users of the directory in connectId order',
    cursor: 'userCursor',
    page: ['One page of users', 'UserList'],
  }),
  {
    operationId: 'getUser',
    method: 'GET',
    path: '/id/users/{connectId}',
    owner: 'gateway',
    caller: 'client',
    bearer: 'any',
    json: true,
    tag: 'users',
    summary: 'Read a user of the directory (any authenticated caller; a Bearer token only for its own user)',
    responses: { '200': { description: 'The user', content: json('User') } },
  },
  {
    operationId: 'getMe',
    method: 'GET',
    path: '/id/me',
    owner: 'gateway',
    caller: 'client',
    bearer: 'any',
    json: true,
    tag: 'users',
    summary: 'The caller as the gateway sees it: kind, id, client, provider, staff level and grantors, scopes',
    responses: { '200': { description: 'The caller', content: json('Me') } },
  },
  adminRoute({
    owner: 'gateway',
    tag: 'users',
    operationId: 'putUser',
    method: 'PUT',
    path: '/id/users/{connectId}',
    summary: 'Register a user',
    json: true,
    responses: createdOrNot({ description: 'Registered', content: json('User') }, 'Already registered'),
  }),
  adminRoute({
    owner: 'gateway',
    tag: 'users',
    operationId: 'deleteUser',
    method: 'DELETE',
    path: '/id/users/{connectId}',
    summary: 'Unregister a user (their rights and subscriptions stay)',
    json: false,
    responses: { '204': { description: 'Unregistered' } },
  }),
  // docs/api.md: subscriptions.
  userRoute({
    owner: 'subscriptions',
    operationId: 'listSubscriptions',
    method: 'GET',
    path: SUBSCRIPTIONS,
    summary: LIST_SUMMARY('subscriptions', 'grantorid'),
    bearer: 'id.user.sub.read',
    list: 'subscriptions',
    query: [grantorQuery('grantorid'), param('limit'), param('cursor')],
    responses: { '200': page('The subscriptions', 'SubscriptionList'), '307': redirect },
  }),
  userRoute({
    owner: 'subscriptions',
    operationId: 'createSubscription',
    method: 'POST',
    path: SUBSCRIPTIONS,
    summary: 'Create a subscription (no right is created now); emits subscription.created',
    body: { schema: 'SubscriptionCreateBody', required: true },
    responses: { '201': created('Subscription') },
  }),
  userRoute({
    owner: 'subscriptions',
    operationId: 'getSubscription',
    method: 'GET',
    path: SUBSCRIPTION,
    summary: 'Retrieve a subscription',
    bearer: 'id.user.sub.read',
    responses: { '200': one('The subscription', 'Subscription') },
  }),
  findById({ owner: 'subscriptions', operationId: 'findSubscription', path: '/id/subs/{subscriptionId}' }),
  change({
    owner: 'subscriptions',
    operationId: 'deleteSubscription',
    method: 'DELETE',
    path: SUBSCRIPTION,
    summary: 'Delete a subscription; its rights stay; 204 also when unknown',
  }),
  change({
    owner: 'subscriptions',
    operationId: 'activateSubscription',
    method: 'POST',
    path: `${SUBSCRIPTION}/activate`,
    summary: 'Activate a SUSPENDED subscription; its suspended rights whose interval has not ended are reactivated',
    conflict: true,
  }),
  change({
    owner: 'subscriptions',
    operationId: 'suspendSubscription',
    method: 'POST',
    path: `${SUBSCRIPTION}/suspend`,
    summary: 'Suspend an ACTIVE subscription; its ACTIVE rights are suspended',
    conflict: true,
  }),
  // docs/api.md "Plan changes".
  userRoute({
    owner: 'subscriptions',
    operationId: 'changeSubscriptionPlan',
    method: 'POST',
    path: `${SUBSCRIPTION}/change`,
    summary:
      "Change a subscription's templates now (the current period's rights end, the new ones run for its rest) or from the next period; emits subscription.changed",
    ifMatch: true,
    body: { schema: 'PlanChangeBody', required: true },
    responses: { '200': one('The subscription as changed', 'Subscription'), '409': ref('Conflict') },
  }),
  change({
    owner: 'subscriptions',
    operationId: 'withdrawSubscriptionChange',
    method: 'DELETE',
    path: `${SUBSCRIPTION}/change`,
    summary: 'Withdraw the plan change pending for the next period; 204 also when none is pending',
  }),
  history({
    owner: 'subscriptions',
    operationId: 'getSubscriptionHistory',
    path: SUBSCRIPTION,
    what: 'subscription',
    bearer: 'id.user.sub.read',
  }),
  // docs/api.md: rights.
  userRoute({
    owner: 'rights',
    operationId: 'listRights',
    method: 'GET',
    path: RIGHTS,
    summary: LIST_SUMMARY('rights', 'grantorId'),
    bearer: 'id.user.right.read',
    list: 'rights',
    json: true,
    query: [
      grantorQuery('grantorId'),
      {
        name: 'active',
        in: 'query',
        description:
          'A date-time with offset, `true` or `now`: rights ACTIVE at that instant, on real time unless `clockId` names a test clock',
        schema: { type: 'string', pattern: ACTIVE_FILTER_PATTERN },
        example: 'now',
      },
      clockQuery('only the rights living on this test clock; with `active=now`, those active at its time'),
      param('limit'),
      param('cursor'),
    ],
    responses: { '200': page('The rights', 'RightList'), '307': redirect },
  }),
  userRoute({
    owner: 'rights',
    operationId: 'createRight',
    method: 'POST',
    path: RIGHTS,
    summary: 'Create a right; emits right.created',
    json: true,
    body: { schema: 'RightCreateBody', required: true },
    responses: { '201': created('Right') },
  }),
  userRoute({
    owner: 'rights',
    operationId: 'getRight',
    method: 'GET',
    path: RIGHT,
    summary: 'Retrieve a right',
    bearer: 'id.user.right.read',
    json: true,
    responses: { '200': one('The right', 'Right') },
  }),
  findById({ owner: 'rights', operationId: 'findRight', path: '/id/rights/{rightId}' }),
  change({
    owner: 'rights',
    operationId: 'removeRight',
    method: 'DELETE',
    path: RIGHT,
    summary: 'Remove a right (its grantor or an admin); emits right.removed',
  }),
  change({
    owner: 'rights',
    operationId: 'activateRight',
    method: 'POST',
    path: `${RIGHT}/activate`,
    summary: 'Activate a right (from CREATED or SUSPENDED; ACTIVE is a no-op); emits right.activated',
    conflict: true,
  }),
  change({
    owner: 'rights',
    operationId: 'suspendRight',
    method: 'POST',
    path: `${RIGHT}/suspend`,
    summary: 'Suspend a right (from CREATED or ACTIVE; SUSPENDED is a no-op); emits right.suspended',
    conflict: true,
  }),
  change({
    owner: 'rights',
    operationId: 'usageRight',
    method: 'POST',
    path: `${RIGHT}/usage`,
    summary:
      'Record usage (only while active): a plain right is used once (a repeat is a no-op), a metered right gives `amount` units (default 1; 409 when it has fewer); emits right.used at the first use and, per the catalog, service.announce, and right.consumed for each consumption',
    conflict: true,
    bearer: 'id.user.right.use',
    body: { schema: 'UsageBody', required: false },
  }),
  userRoute({
    owner: 'rights',
    operationId: 'adjustRight',
    method: 'POST',
    path: `${RIGHT}/adjustments`,
    summary:
      "Add units to a metered right's `remaining` (negative: take them away, never below what is held), raising `quantity` when it goes above; its grantor, its grantor's write staff or an admin; emits right.adjusted",
    json: true,
    body: { schema: 'AdjustmentBody', required: true },
    responses: { '200': one('The right after the adjustment', 'Right'), '409': ref('Conflict') },
  }),
  history({
    owner: 'rights',
    operationId: 'getRightHistory',
    path: RIGHT,
    what: 'right',
    bearer: 'id.user.right.read',
  }),
  // docs/api.md "Entitlement checks": answered by the gateway from its projection.
  {
    operationId: 'checkEntitlement',
    method: 'GET',
    path: '/id/users/{connectId}/entitlements/{sku}',
    owner: 'gateway',
    caller: 'client',
    bearer: 'id.user.right.read',
    json: true,
    tag: 'entitlements',
    summary:
      'May this user use this SKU now? The caller-visible rights of the user and SKU that are ACTIVE and whose interval contains checkedAt (an unknown SKU is not entitled); with metered rights, their balance',
    query: [
      {
        name: 'amount',
        in: 'query',
        description:
          'Units the caller would consume: entitled when a plain right is listed or the balance covers them (default 1)',
        schema: { type: 'integer', minimum: 1, maximum: 1_000_000_000 },
        example: 1,
      },
      clockQuery('ask on this test clock, at its time: only the rights living on it count (404 when there is none)'),
    ],
    responses: {
      '200': {
        description: 'The entitlement (`Cache-Control: no-store`)',
        headers: { 'Cache-Control': { schema: { type: 'string', enum: ['no-store'] } } },
        content: json('Entitlement'),
      },
    },
  },
  {
    operationId: 'listEntitlements',
    method: 'GET',
    path: '/id/users/{connectId}/entitlements',
    owner: 'gateway',
    caller: 'client',
    bearer: 'id.user.right.read',
    json: true,
    tag: 'entitlements',
    summary:
      'The check of every SKU of which the user holds a caller-visible right that is ACTIVE and not ended, in SKU order',
    query: [clockQuery('the SKUs of the rights living on it, at its time (404 when there is none)')],
    responses: {
      '200': {
        description: 'The entitlements (`Cache-Control: no-store`)',
        headers: { 'Cache-Control': { schema: { type: 'string', enum: ['no-store'] } } },
        content: json('EntitlementList'),
      },
    },
  },
  // docs/decisions/0048: test clocks, owned by the scheduler.
  clockRoute({
    operationId: 'createClock',
    method: 'POST',
    path: '/clocks',
    summary:
      "Create a test clock of the caller's grantor, at a time of its choosing (409 when the grantor has TEST_CLOCKS_MAX clocks already, 10 by default; 0 turns test clocks off)",
    body: { schema: 'ClockCreateBody', required: true },
    responses: { '201': created('Clock'), '409': ref('Conflict') },
  }),
  clockRoute({
    operationId: 'listClocks',
    method: 'GET',
    path: '/clocks',
    summary: "The test clocks of the caller's grantor (every grantor's for an admin)",
    responses: { '200': { description: 'The clocks', content: json('ClockList') } },
  }),
  clockRoute({
    operationId: 'getClock',
    method: 'GET',
    path: CLOCK,
    summary: 'Read a test clock',
    responses: { '200': one('The clock', 'Clock'), '404': ref('NotFound') },
  }),
  clockRoute({
    operationId: 'advanceClock',
    method: 'POST',
    path: `${CLOCK}/advance`,
    summary: 'Move a test clock forward; advancing until everything due up to then has happened, then ready',
    body: { schema: 'ClockAdvanceBody', required: true },
    responses: {
      '202': { description: 'Advancing', headers: etag, content: json('Clock') },
      '404': ref('NotFound'),
      '409': ref('Conflict'),
    },
  }),
  clockRoute({
    operationId: 'deleteClock',
    method: 'DELETE',
    path: CLOCK,
    summary: 'Delete a test clock and everything on it',
    responses: { '204': { description: 'Deleted' }, '404': ref('NotFound') },
  }),
  // docs/api.md "Consumption by SKU" and "Reservations": metered rights, by SKU (who may: as for usage).
  entitlementChange({
    operationId: 'consumeEntitlement',
    method: 'POST',
    path: `${ENTITLEMENT}/consumption`,
    summary:
      "Consume units from the user's caller-visible active metered rights of the SKU, those ending first first (then the oldest): all or nothing, applied once; emits right.consumed per right",
    body: { schema: 'ConsumptionBody', required: false },
    responses: CONSUMED,
  }),
  entitlementChange({
    operationId: 'createReservation',
    method: 'POST',
    path: `${ENTITLEMENT}/reservations`,
    summary:
      'Hold units for an act to come (counted as consumed by every other caller) until committed, released or lapsed (ttl, at most PT24H)',
    body: { schema: 'ReservationBody', required: false },
    responses: { '201': { description: 'Held', content: json('Reservation') } },
  }),
  entitlementChange({
    operationId: 'commitReservation',
    method: 'POST',
    path: `${RESERVATION}/commit`,
    summary:
      "Consume `amount` of the held units (default all, at most those held) and free the rest; a commit of 0 is a release. Only the principal that made the reservation, the rights' grantor or an admin settles it",
    body: { schema: 'CommitBody', required: false },
    responses: { ...CONSUMED, '204': { description: 'A commit of 0: released, nothing consumed' } },
  }),
  entitlementChange({
    operationId: 'releaseReservation',
    method: 'DELETE',
    path: RESERVATION,
    summary:
      "Free every held unit of a reservation (its maker, the rights' grantor or an admin; to anyone else it does not exist)",
    responses: { '204': { description: 'Released (or released before)' } },
  }),
  // docs/api.md: signed right tokens.
  userRoute({
    owner: 'rights',
    operationId: 'getRightToken',
    method: 'GET',
    path: `${RIGHT}/token`,
    summary: 'A signed token of an active right, for offline checks',
    bearer: 'id.user.right.read',
    json: false,
    responses: {
      '200': {
        description: 'A compact JWS (ES256, typ right+jwt) of the right; verify it with /.well-known/jwks.json',
        content: { 'application/jwt': { schema: { type: 'string' } } },
      },
      '409': ref('Conflict'),
    },
  }),
  openRoute({
    owner: 'rights',
    tag: 'rights',
    operationId: 'getJwks',
    path: '/.well-known/jwks.json',
    summary: 'The public keys of right tokens that may still be valid (cacheable)',
    responses: {
      '200': { description: 'A JWK set', content: json('Jwks') },
    },
  }),
  adminRoute({
    owner: 'rights',
    tag: 'admin',
    operationId: 'rotateRightTokenKey',
    method: 'POST',
    path: '/admin/right-token-keys',
    summary: 'Start a new signing key',
    json: true,
    responses: { '201': { description: 'The new key', content: json('NewSigningKey') } },
  }),
  // docs/api.md: webhooks.
  webhookRoute({
    operationId: 'createWebhookEndpoint',
    method: 'POST',
    path: ENDPOINTS,
    summary: 'Register an endpoint for events; its secret is shown only in this answer',
    body: { schema: 'EndpointCreateBody', required: true },
    responses: { '201': created('WebhookEndpointWithSecret') },
  }),
  webhookRoute({
    operationId: 'listWebhookEndpoints',
    method: 'GET',
    path: ENDPOINTS,
    summary: "The caller's endpoints (an admin's: all), without secrets",
    responses: { '200': { description: 'The endpoints', content: json('WebhookEndpointList') } },
  }),
  webhookRoute({
    operationId: 'getWebhookEndpoint',
    method: 'GET',
    path: ENDPOINT,
    summary: 'An endpoint, without its secret',
    responses: { '200': { description: 'The endpoint', content: json('WebhookEndpoint') }, '404': ref('NotFound') },
  }),
  webhookRoute({
    operationId: 'deleteWebhookEndpoint',
    method: 'DELETE',
    path: ENDPOINT,
    summary: 'Delete an endpoint; nothing more is sent to it',
    json: false,
    responses: { '204': { description: 'Deleted' }, '404': ref('NotFound') },
  }),
  webhookRoute({
    operationId: 'rotateWebhookSecret',
    method: 'POST',
    path: `${ENDPOINT}/secret`,
    summary: 'A new secret, shown only in this answer; the old one keeps signing beside it for 24 hours',
    responses: {
      '200': { description: 'The endpoint with its new secret', content: json('WebhookEndpointWithSecret') },
      '404': ref('NotFound'),
    },
  }),
  webhookRoute({
    operationId: 'listWebhookDeliveries',
    method: 'GET',
    path: `${ENDPOINT}/deliveries`,
    summary: "An endpoint's deliveries, newest first",
    query: [param('limit'), param('cursor')],
    responses: {
      '200': page('The deliveries, with every attempt counted', 'WebhookDeliveryList'),
      '404': ref('NotFound'),
    },
  }),
  webhookRoute({
    operationId: 'retryWebhookDelivery',
    method: 'POST',
    path: `${ENDPOINT}/deliveries/{deliveryId}/retry`,
    summary: 'Deliver again at once',
    json: false,
    responses: { '202': { description: 'Accepted: an attempt is under way' }, '404': ref('NotFound') },
  }),
  // docs/operations.md: the admin catalog API.
  adminList({
    owner: 'catalog',
    tag: 'catalog',
    operationId: 'listSkus',
    path: '/catalog/skus',
    summary: 'List catalog entries in name order',
    cursor: 'skuCursor',
    page: ['One page of entries', 'SkuList'],
  }),
  adminRoute({
    owner: 'catalog',
    tag: 'catalog',
    operationId: 'getSku',
    method: 'GET',
    path: '/catalog/skus/{sku}',
    summary: 'Read a catalog entry',
    json: true,
    responses: { '200': one('The entry', 'Sku'), '404': ref('NotFound') },
  }),
  adminRoute({
    owner: 'catalog',
    tag: 'catalog',
    operationId: 'putSku',
    method: 'PUT',
    path: '/catalog/skus/{sku}',
    summary: 'Create or replace a catalog entry; emits sku.upserted on catalog.events',
    json: true,
    ifMatch: true,
    body: { schema: 'SkuUpsertBody', required: false },
    responses: { '201': created('Sku'), '204': { description: 'Replaced, or already so', headers: etag } },
  }),
  adminRoute({
    owner: 'catalog',
    tag: 'catalog',
    operationId: 'deleteSku',
    method: 'DELETE',
    path: '/catalog/skus/{sku}',
    summary: 'Delete a catalog entry; emits sku.deleted on catalog.events',
    json: false,
    ifMatch: true,
    responses: { '204': { description: 'Deleted' }, '404': ref('NotFound') },
  }),
] as const satisfies readonly PublicRoute[];

export type OperationId<O extends RouteOwner = RouteOwner> = Extract<
  (typeof ROUTES)[number],
  { owner: O }
>['operationId'];

/** The path parameters of a template, in order: `/a/{x}/b/{y}` → `['x', 'y']`. */
export function pathParameters(template: string): string[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((match) => match[1]!);
}
