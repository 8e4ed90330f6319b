import { z } from 'zod';
import { IF_MATCH_PATTERN, KEYSET_CURSOR_PATTERN } from '../schemas/formats';
import { IdempotencyKey, takesIdempotencyKey } from '../schemas/idempotency';
import { Sku, SkuList, SkuName, SkuUpsertBody } from '../schemas/catalog';
import {
  ClientBody,
  ClientId,
  ClientList,
  ClientView,
  ConnectId,
  Jti,
  RevocationBody,
  UserList,
  UserView,
  Me,
} from '../schemas/identity';
import { pathParameters, ROUTES, type PublicRoute } from '../routes/routes';
import { HISTORY_CURSOR_PATTERN, HistoryPage } from '../schemas/history';
import {
  DeliveryId,
  EndpointCreateBody,
  EndpointId,
  WebhookDeliveryList,
  WebhookEndpoint,
  WebhookEndpointList,
  WebhookEndpointWithSecret,
} from '../schemas/webhooks';
import { AdjustmentBody, Right, RightCreateBody, RightId, RightList, UsageBody } from '../schemas/rights';
import { AuditPage } from '../schemas/audit';
import {
  CommitBody,
  Consumption,
  ConsumptionBody,
  Entitlement,
  EntitlementList,
  Reservation,
  ReservationBody,
  ReservationId,
} from '../schemas/entitlements';
import { API_REFERENCE_ASSETS } from '../routes/routes';
import { BODY_EXAMPLES, PARAMETER_EXAMPLES } from './examples';
import { Clock, ClockAdvanceBody, ClockCreateBody, ClockId, ClockList } from '../schemas/clocks';
import {
  PlanChangeBody,
  Subscription,
  SubscriptionCreateBody,
  SubscriptionId,
  SubscriptionList,
} from '../schemas/subscriptions';

/** JSON Schema 2020-12 (OpenAPI 3.1's own dialect) of a zod contract. */
const schemaOf = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
};

/** An error answer in the contract's `type`, or as a problem to a client that asks for one. */
const errorIn = (type: 'text/plain' | 'text/html') => (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: {
    [type]: { schema: { type: 'string' } },
    'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
  },
});
const text = errorIn('text/plain');
const html = errorIn('text/html');
const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });

/**
 * The public HTTP interface of the gateway as OpenAPI 3.1, built from the same zod
 * contracts the services validate with. `npm run docs` writes it to docs/openapi.json,
 * and a test fails when the committed file is out of date.
 */
export function buildOpenApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Rights and subscriptions platform',
      version: '0.1.0',
      description:
        'Public API of the gateway. The rules a client relies on (states, visibility, 307, errors, ' +
        'pagination, idempotency, limits) are in docs/api.md of the repository; how the platform is built, in ' +
        'docs/architecture.md. ' +
        'Errors are text/plain (400, 405, 409, 412, 413, 415, 429, 5xx) or text/html (401, 404), or RFC 9457 ' +
        'problem documents when the client sends Accept: application/problem+json.',
    },
    servers: [{ url: 'http://localhost:8080', description: 'npm start' }],
    // In the order a newcomer needs them: who the users are, what they hold, what providers ask.
    tags: [
      { name: 'users', description: 'The user directory (docs/api.md "Users")' },
      { name: 'rights', description: 'Rights: create, read, change, use (docs/api.md "Rights")' },
      { name: 'subscriptions', description: 'Subscriptions and their renewal (docs/api.md "Subscriptions")' },
      { name: 'entitlements', description: 'May this user use this SKU now? (docs/entitlements.md)' },
      { name: 'webhooks', description: 'Webhook endpoints and their deliveries, Basic only (docs/webhooks.md)' },
      { name: 'clocks', description: 'Test clocks: rehearse months of renewals in seconds (docs/decisions/0048)' },
      { name: 'catalog', description: 'The SKUs, who serves them and who may grant them (admin)' },
      { name: 'admin', description: 'API clients, revoked tokens, right-token keys (admin Basic only)' },
      { name: 'meta' },
    ],
    paths: pathsOf(ROUTES),
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'An API client: client id and secret (RFC 7617). The only scheme for changes (docs/api.md).',
        },
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description:
            'An RFC 9068 access token for one user (`sub`), issued to a registered client (`client_id`). ' +
            'Scopes (in `scope` or `scp`): id.user.sub.read (list and retrieve subscriptions), ' +
            'id.user.right.read (list and retrieve rights), id.user.right.use (record usage). ' +
            'Failures: 401 with `WWW-Authenticate: Bearer realm="<REALM>", error="invalid_token" | "insufficient_scope"`.',
        },
      },
      parameters: withExamples({
        sku: { name: 'sku', in: 'path', required: true, schema: schemaOf(SkuName) },
        asset: {
          name: 'asset',
          in: 'path',
          required: true,
          schema: { type: 'string', enum: [...API_REFERENCE_ASSETS] },
        },
        consoleAsset: {
          name: 'consoleAsset',
          in: 'path',
          required: true,
          description: 'A name the console page gives (it changes with every build of the console)',
          schema: { type: 'string', pattern: '^console-[A-Z0-9]{1,32}\\.(js|css)$' },
        },
        clientId: { name: 'clientId', in: 'path', required: true, schema: schemaOf(ClientId) },
        jti: { name: 'jti', in: 'path', required: true, schema: schemaOf(Jti) },
        connectId: { name: 'connectId', in: 'path', required: true, schema: schemaOf(ConnectId) },
        rightId: { name: 'rightId', in: 'path', required: true, schema: schemaOf(RightId) },
        reservationId: { name: 'reservationId', in: 'path', required: true, schema: schemaOf(ReservationId) },
        subscriptionId: { name: 'subscriptionId', in: 'path', required: true, schema: schemaOf(SubscriptionId) },
        endpointId: { name: 'endpointId', in: 'path', required: true, schema: schemaOf(EndpointId) },
        clockId: { name: 'clockId', in: 'path', required: true, schema: schemaOf(ClockId) },
        deliveryId: { name: 'deliveryId', in: 'path', required: true, schema: schemaOf(DeliveryId) },
        limit: {
          name: 'limit',
          in: 'query',
          description: 'Page size (docs/api.md "Listing filters")',
          schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        },
        cursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: { type: 'string', pattern: KEYSET_CURSOR_PATTERN },
        },
        historyCursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: { type: 'string', pattern: HISTORY_CURSOR_PATTERN },
        },
        skuCursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: schemaOf(SkuName),
        },
        userCursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: schemaOf(ConnectId),
        },
        idempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          description:
            'Makes a retry safe (docs/api.md): the first request with a key runs, the same request again gets its ' +
            'kept answer with `Idempotent-Replayed: true`; keys belong to the API client and are kept IDEMPOTENCY_TTL_S',
          schema: schemaOf(IdempotencyKey),
        },
        auditReason: {
          name: 'X-Audit-Reason',
          in: 'header',
          description:
            'Why the change is made, recorded in the audit log (docs/audit.md): required of staff members, optional ' +
            'for admin clients; UTF-8 text may be percent-encoded',
          // As sent: 500 characters at most, some of them not a space (percent-encoded text decodes shorter).
          schema: { type: 'string', minLength: 1, maxLength: 500, pattern: '\\S' },
        },
        ifMatch: {
          name: 'If-Match',
          in: 'header',
          description: 'The generation the change expects, quoted (an ETag), e.g. "3"',
          schema: { type: 'string', pattern: IF_MATCH_PATTERN },
        },
      }),
      schemas: {
        Sku: schemaOf(Sku),
        SkuList: schemaOf(SkuList),
        SkuUpsertBody: schemaOf(SkuUpsertBody),
        ClientBody: schemaOf(ClientBody),
        ClientView: schemaOf(ClientView),
        ClientList: schemaOf(ClientList),
        ClientCreated: schemaOf(ClientView.pick({ clientId: true, grantorId: true, admin: true })),
        RevocationBody: schemaOf(RevocationBody),
        User: schemaOf(UserView),
        Me: schemaOf(Me),
        UserList: schemaOf(UserList),
        Right: schemaOf(Right),
        RightList: schemaOf(RightList),
        UsageBody: schemaOf(UsageBody),
        AdjustmentBody: schemaOf(AdjustmentBody),
        Entitlement: schemaOf(Entitlement),
        EntitlementList: schemaOf(EntitlementList),
        AuditPage: schemaOf(AuditPage),
        ConsumptionBody: schemaOf(ConsumptionBody),
        Consumption: schemaOf(Consumption),
        ReservationBody: schemaOf(ReservationBody),
        Reservation: schemaOf(Reservation),
        CommitBody: schemaOf(CommitBody),
        HistoryPage: schemaOf(HistoryPage),
        EndpointCreateBody: schemaOf(EndpointCreateBody),
        WebhookEndpoint: schemaOf(WebhookEndpoint),
        WebhookEndpointWithSecret: schemaOf(WebhookEndpointWithSecret),
        WebhookEndpointList: schemaOf(WebhookEndpointList),
        WebhookDeliveryList: schemaOf(WebhookDeliveryList),
        RightCreateBody: schemaOf(RightCreateBody),
        Subscription: schemaOf(Subscription),
        SubscriptionList: schemaOf(SubscriptionList),
        SubscriptionCreateBody: schemaOf(SubscriptionCreateBody),
        PlanChangeBody: schemaOf(PlanChangeBody),
        Clock: schemaOf(Clock),
        ClockList: schemaOf(ClockList),
        ClockCreateBody: schemaOf(ClockCreateBody),
        ClockAdvanceBody: schemaOf(ClockAdvanceBody),
        Jwks: {
          type: 'object',
          required: ['keys'],
          properties: {
            keys: {
              type: 'array',
              items: {
                type: 'object',
                required: ['kty', 'crv', 'x', 'y', 'kid', 'use', 'alg'],
                properties: {
                  kty: { const: 'EC' },
                  crv: { const: 'P-256' },
                  x: { type: 'string' },
                  y: { type: 'string' },
                  kid: { type: 'string' },
                  use: { const: 'sig' },
                  alg: { const: 'ES256' },
                },
              },
            },
          },
        },
        NewSigningKey: { type: 'object', required: ['kid'], properties: { kid: { type: 'string' } } },
        Problem: {
          type: 'object',
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: {
              type: 'string',
              description:
                'Machine-readable: invalid, not_permitted, not_found, conflict, precondition_failed, unavailable, ' +
                'or the name of the status (unauthenticated, not_acceptable, too_many_requests, …)',
            },
          },
        },
      },
      responses: {
        BadRequest: text('A field or parameter is invalid; the message names it and says why'),
        Unauthorized: html('Missing or invalid credentials, or not permitted (docs/api.md)', {
          'WWW-Authenticate': {
            schema: { type: 'string' },
            description: 'Basic realm="<REALM>", charset="UTF-8", or a Bearer challenge (see bearerAuth)',
          },
        }),
        TooManyRequests: text('Rate limit exceeded, or too many failed logins for this client', {
          'Retry-After': { schema: { type: 'integer' } },
          RateLimit: { schema: { type: 'string' } },
          'RateLimit-Policy': { schema: { type: 'string' } },
        }),
        NotFound: html('No such resource'),
        PreconditionFailed: text('If-Match does not match the current generation'),
        Conflict: text(
          'The state does not allow it (docs/api.md), or a request with the same Idempotency-Key is still running',
          { 'Retry-After': { schema: { type: 'integer' } } },
        ),
        IdempotencyKeyReused: text('The Idempotency-Key was used for another request (method, path or body)'),
        PayloadTooLarge: text('The body exceeds the limit'),
        RequestTimeout: text('The body did not arrive in time (BODY_TIMEOUT_MS); the connection is closed'),
        UnsupportedMediaType: text('The body is not application/json, or comes in a Content-Encoding'),
        ServiceUnavailable: text('A service or dependency is unavailable, or busy; retry after the time given', {
          'Retry-After': { schema: { type: 'integer' } },
        }),
        NotAcceptable: text('The Accept header admits neither application/json nor application/problem+json'),
        GatewayTimeout: text('The service behind the gateway did not answer in time'),
      },
    },
  };
}

/** Each parameter with its example (`PARAMETER_EXAMPLES`). */
function withExamples(parameters: Record<string, Record<string, unknown>>) {
  return Object.fromEntries(
    Object.entries(parameters).map(([name, parameter]) => [name, { ...parameter, example: PARAMETER_EXAMPLES[name] }]),
  );
}

/**
 * The paths of the route table (routes/routes.ts), each operation completed with every status the
 * gateway can answer on it: a caller past authentication may be rate limited or
 * throttled (429) and find a dependency unavailable (503); a forwarded operation may time out
 * (504); a JSON operation may be refused for its Accept header (406); a body may be
 * malformed, too large or not JSON (400, 413, 415); a parameter may be malformed (400); an
 * If-Match may not match (412); the user of a path may not exist (404).
 */
function pathsOf(routes: readonly PublicRoute[]) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const parameters = [
      ...pathParameters(route.path).map(param),
      ...(route.query ?? []),
      ...(route.ifMatch ? [param('ifMatch')] : []),
      ...(acceptsIdempotencyKey(route) ? [param('idempotencyKey')] : []),
      ...(isAudited(route) ? [param('auditReason')] : []),
    ];
    const responses: Record<string, unknown> = { ...route.responses };
    const add = (status: string, response: string) => {
      responses[status] ??= ref(response);
    };
    if (route.caller !== 'none') add('401', 'Unauthorized');
    // Every caller has a budget, an anonymous one its address's (docs/security.md "Budgets").
    add('429', 'TooManyRequests');
    if (route.caller !== 'none' || route.owner !== 'gateway') add('503', 'ServiceUnavailable');
    if (route.owner !== 'gateway') add('504', 'GatewayTimeout');
    if (route.json) add('406', 'NotAcceptable');
    if (route.body) {
      add('400', 'BadRequest');
      add('408', 'RequestTimeout');
      add('413', 'PayloadTooLarge');
      add('415', 'UnsupportedMediaType');
    }
    if (parameters.length > 0) add('400', 'BadRequest');
    if (route.ifMatch) add('412', 'PreconditionFailed');
    if (acceptsIdempotencyKey(route)) {
      add('409', 'Conflict');
      add('422', 'IdempotencyKeyReused');
    }
    const userMustExist =
      route.path.startsWith('/id/users/{connectId}') && (route.owner !== 'gateway' || route.method === 'GET');
    if (userMustExist) add('404', 'NotFound');
    (paths[route.path] ??= {})[route.method.toLowerCase()] = {
      tags: [route.tag],
      operationId: route.operationId,
      summary: route.summary,
      security: securityOf(route),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(route.body
        ? {
            requestBody: {
              required: route.body.required,
              content: {
                'application/json': {
                  schema: { $ref: `#/components/schemas/${route.body.schema}` },
                  example: BODY_EXAMPLES[route.body.schema],
                },
              },
            },
          }
        : {}),
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
    };
  }
  return paths;
}

/** A change an admin client or a staff member may make, and so one the audit log records (docs/audit.md). */
const isAudited = (route: PublicRoute) => route.method !== 'GET' && route.caller !== 'none';

const acceptsIdempotencyKey = (route: PublicRoute) =>
  route.owner !== 'gateway' && takesIdempotencyKey(route.method, route.path);

/** docs/api.md: Basic for every caller the route admits, Bearer with its scope where it may call. */
function securityOf(route: PublicRoute): unknown[] {
  if (route.caller === 'none') return [];
  if (route.bearer === null) return [{ basicAuth: [] }];
  return [{ basicAuth: [] }, { bearerAuth: route.bearer === 'any' ? [] : [route.bearer] }];
}
