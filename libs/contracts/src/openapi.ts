import { z } from 'zod';
import { IF_MATCH_PATTERN, KEYSET_CURSOR_PATTERN } from './formats';
import { Sku, SkuList, SkuName, SkuUpsertBody } from './catalog';
import { ClientBody, ClientId, ClientList, ClientView, ConnectId, RevocationBody, UserView } from './identity';
import { Right, RightCreateBody, RightId, RightList } from './rights';
import { Subscription, SubscriptionCreateBody, SubscriptionId, SubscriptionList } from './subscriptions';

/** JSON Schema 2020-12 (OpenAPI 3.1's own dialect) of a zod contract. */
const schemaOf = (schema: z.ZodType) => {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema) as Record<string, unknown>;
  return rest;
};

const text = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: {
    'text/plain': { schema: { type: 'string' } },
    'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
  },
});
const html = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: {
    'text/html': { schema: { type: 'string' } },
    'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
  },
});
const ref = (name: string) => ({ $ref: `#/components/responses/${name}` });
const json = (schema: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } });
const etag = { ETag: { description: 'The generation of the resource, quoted', schema: { type: 'string' } } };

const param = (name: string) => ({ $ref: `#/components/parameters/${name}` });
/** The path parameters of a user's resource: its connectId, and the resource's id. */
const inUserPath = (id?: 'subscriptionId' | 'rightId') => (id ? [param('connectId'), param(id)] : [param('connectId')]);

/**
 * A change of one resource, guarded by If-Match, answering 204 (spec 4; spec 5: Basic only
 * unless a Bearer scope may call it). The statuses every operation shares are added by
 * `withGatewayResponses`.
 */
function change(
  tag: 'rights' | 'subscriptions',
  operationId: string,
  summary: string,
  done: string,
  options: { conflict?: boolean; bearerScope?: string } = {},
) {
  return {
    tags: [tag],
    operationId,
    summary,
    security: options.bearerScope ? [{ basicAuth: [] }, { bearerAuth: [options.bearerScope] }] : [{ basicAuth: [] }],
    parameters: [param('ifMatch')],
    responses: { '204': { description: done }, ...(options.conflict ? { '409': ref('Conflict') } : {}) },
  };
}

/**
 * The public HTTP interface of the gateway as OpenAPI 3.1, built from the same zod
 * contracts the services validate with. `npm run docs` writes it to docs/openapi.json,
 * and a test fails when the committed file is out of date.
 */
export function buildOpenApiDocument(): Record<string, unknown> {
  const admin = [{ basicAuth: [] }];
  return {
    openapi: '3.1.0',
    info: {
      title: 'Rights and subscriptions platform',
      version: '0.1.0',
      description:
        'Public API of the gateway. The contract is spec/rights-and-subscriptions.md; DESIGN.md settles its gaps. ' +
        'Errors are text/plain (400, 405, 409, 412, 413, 415, 429, 5xx) or text/html (401, 404), or RFC 9457 ' +
        'problem documents when the client sends Accept: application/problem+json.',
    },
    servers: [{ url: 'http://localhost:8080', description: 'npm start' }],
    tags: [
      { name: 'catalog', description: 'Admin catalog API (DESIGN.md 6)' },
      { name: 'clients', description: 'API clients and revoked tokens (DESIGN.md 6)' },
      { name: 'users', description: 'The user directory (DESIGN.md 3 "Users")' },
      { name: 'rights', description: 'Rights (spec 4.2)' },
      { name: 'subscriptions', description: 'Subscriptions (spec 4.1)' },
      { name: 'meta' },
    ],
    paths: withGatewayResponses({
      '/openapi.json': {
        get: {
          tags: ['meta'],
          summary: 'This document',
          security: [],
          responses: { '200': { description: 'The OpenAPI document', content: { 'application/json': {} } } },
        },
      },
      '/admin/clients': {
        get: {
          tags: ['clients'],
          operationId: 'listClients',
          summary: 'List API clients (never their secrets)',
          security: admin,
          responses: { '200': { description: 'The clients', content: json('ClientList') }, '401': ref('Unauthorized') },
        },
      },
      '/admin/clients/{clientId}': {
        parameters: [{ name: 'clientId', in: 'path', required: true, schema: schemaOf(ClientId) }],
        put: {
          tags: ['clients'],
          operationId: 'putClient',
          summary: 'Create or replace an API client; its secret is stored as a scrypt hash',
          security: admin,
          requestBody: { required: true, content: json('ClientBody') },
          responses: {
            '201': { description: 'Created', content: json('ClientCreated') },
            '204': { description: 'Replaced' },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '415': ref('UnsupportedMediaType'),
          },
        },
        delete: {
          tags: ['clients'],
          operationId: 'deleteClient',
          summary: 'Delete an API client; its credentials stop working within seconds',
          security: admin,
          responses: { '204': { description: 'Deleted (also when unknown)' }, '401': ref('Unauthorized') },
        },
      },
      '/admin/revoked-tokens/{jti}': {
        parameters: [{ name: 'jti', in: 'path', required: true, schema: { type: 'string', maxLength: 256 } }],
        put: {
          tags: ['clients'],
          operationId: 'revokeToken',
          summary: 'Refuse access tokens with this jti from now on',
          security: admin,
          requestBody: { required: false, content: json('RevocationBody') },
          responses: {
            '201': { description: 'Revoked' },
            '204': { description: 'Was already revoked' },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
          },
        },
      },
      '/id/users/{connectId}': {
        parameters: inUserPath(),
        get: {
          tags: ['users'],
          operationId: 'getUser',
          summary: 'Read a user of the directory (any authenticated caller; a Bearer token only for its own user)',
          security: [{ basicAuth: [] }, { bearerAuth: [] }],
          responses: {
            '200': { description: 'The user', content: json('User') },
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
          },
        },
        put: {
          tags: ['users'],
          operationId: 'putUser',
          summary: 'Register a user',
          security: admin,
          responses: {
            '201': { description: 'Registered', content: json('User') },
            '204': { description: 'Already registered' },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
          },
        },
        delete: {
          tags: ['users'],
          operationId: 'deleteUser',
          summary: 'Unregister a user (their rights and subscriptions stay)',
          security: admin,
          responses: { '204': { description: 'Unregistered' }, '401': ref('Unauthorized') },
        },
      },
      '/id/users/{connectId}/subs': {
        parameters: inUserPath(),
        get: {
          tags: ['subscriptions'],
          operationId: 'listSubscriptions',
          summary: "List a user's subscriptions, newest first (grantorid required for non-admins: 307 otherwise)",
          security: [{ basicAuth: [] }, { bearerAuth: ['id.user.sub.read'] }],
          parameters: [
            {
              name: 'grantorid',
              in: 'query',
              description: 'Matched case-insensitively by name',
              schema: { type: 'string' },
            },
            { $ref: '#/components/parameters/limit' },
            { $ref: '#/components/parameters/cursor' },
          ],
          responses: {
            '200': {
              description: 'The subscriptions',
              headers: { Link: { schema: { type: 'string' } } },
              content: json('SubscriptionList'),
            },
            '307': {
              description: "Redirect to the same list with the caller's grantor",
              headers: { Location: { schema: { type: 'string' } } },
            },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
          },
        },
        post: {
          tags: ['subscriptions'],
          operationId: 'createSubscription',
          summary: 'Create a subscription (no right is created now); emits subscription.created',
          security: [{ basicAuth: [] }],
          requestBody: { required: true, content: json('SubscriptionCreateBody') },
          responses: {
            '201': {
              description: 'Created',
              headers: { ...etag, Location: { schema: { type: 'string' } } },
              content: json('Subscription'),
            },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
            '415': ref('UnsupportedMediaType'),
            '503': ref('ServiceUnavailable'),
          },
        },
      },
      '/id/users/{connectId}/subs/{subscriptionId}': {
        parameters: inUserPath('subscriptionId'),
        get: {
          tags: ['subscriptions'],
          operationId: 'getSubscription',
          summary: 'Retrieve a subscription',
          security: [{ basicAuth: [] }, { bearerAuth: ['id.user.sub.read'] }],
          responses: {
            '200': { description: 'The subscription', headers: etag, content: json('Subscription') },
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
          },
        },
        delete: change(
          'subscriptions',
          'deleteSubscription',
          'Delete a subscription; its rights stay; 204 also when unknown',
          'Deleted',
        ),
      },
      '/id/users/{connectId}/subs/{subscriptionId}/activate': {
        parameters: inUserPath('subscriptionId'),
        post: change(
          'subscriptions',
          'activateSubscription',
          'Activate a SUSPENDED subscription; its suspended rights whose interval has not ended are reactivated',
          'Done',
          { conflict: true },
        ),
      },
      '/id/users/{connectId}/subs/{subscriptionId}/suspend': {
        parameters: inUserPath('subscriptionId'),
        post: change(
          'subscriptions',
          'suspendSubscription',
          'Suspend an ACTIVE subscription; its ACTIVE rights are suspended',
          'Done',
          { conflict: true },
        ),
      },
      '/id/users/{connectId}/rights': {
        parameters: inUserPath(),
        get: {
          tags: ['rights'],
          operationId: 'listRights',
          summary: "List a user's rights, newest first (spec 4.2; grantorId required for non-admins: 307 otherwise)",
          security: [{ basicAuth: [] }, { bearerAuth: ['id.user.right.read'] }],
          parameters: [
            {
              name: 'grantorId',
              in: 'query',
              description: 'Matched case-insensitively by name',
              schema: { type: 'string' },
            },
            {
              name: 'active',
              in: 'query',
              description: 'A date-time with offset, `true` or `now`: rights ACTIVE at that instant',
              schema: { type: 'string' },
            },
            { $ref: '#/components/parameters/limit' },
            { $ref: '#/components/parameters/cursor' },
          ],
          responses: {
            '200': {
              description: 'The rights',
              headers: { Link: { schema: { type: 'string' } } },
              content: json('RightList'),
            },
            '307': {
              description: "Redirect to the same list with the caller's grantor",
              headers: { Location: { schema: { type: 'string' } } },
            },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
          },
        },
        post: {
          tags: ['rights'],
          operationId: 'createRight',
          summary: 'Create a right; emits right.created',
          security: [{ basicAuth: [] }],
          requestBody: { required: true, content: json('RightCreateBody') },
          responses: {
            '201': {
              description: 'Created',
              headers: { ...etag, Location: { schema: { type: 'string' } } },
              content: json('Right'),
            },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
            '413': ref('PayloadTooLarge'),
            '415': ref('UnsupportedMediaType'),
            '503': ref('ServiceUnavailable'),
          },
        },
      },
      '/id/users/{connectId}/rights/{rightId}': {
        parameters: inUserPath('rightId'),
        get: {
          tags: ['rights'],
          operationId: 'getRight',
          summary: 'Retrieve a right',
          security: [{ basicAuth: [] }, { bearerAuth: ['id.user.right.read'] }],
          responses: {
            '200': { description: 'The right', headers: etag, content: json('Right') },
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
          },
        },
        delete: change(
          'rights',
          'removeRight',
          'Remove a right (its grantor or an admin); emits right.removed',
          'Removed',
        ),
      },
      '/id/users/{connectId}/rights/{rightId}/activate': {
        parameters: inUserPath('rightId'),
        post: change(
          'rights',
          'activateRight',
          'Activate a right (from CREATED or SUSPENDED; ACTIVE is a no-op); emits right.activated',
          'Done',
          { conflict: true },
        ),
      },
      '/id/users/{connectId}/rights/{rightId}/suspend': {
        parameters: inUserPath('rightId'),
        post: change(
          'rights',
          'suspendRight',
          'Suspend a right (from CREATED or ACTIVE; SUSPENDED is a no-op); emits right.suspended',
          'Done',
          { conflict: true },
        ),
      },
      '/id/users/{connectId}/rights/{rightId}/usage': {
        parameters: inUserPath('rightId'),
        post: change(
          'rights',
          'usageRight',
          'Record usage (only while active; a repeat is a no-op); emits right.used and, per the catalog, service.announce',
          'Done',
          { conflict: true, bearerScope: 'id.user.right.use' },
        ),
      },
      '/catalog/skus': {
        get: {
          tags: ['catalog'],
          operationId: 'listSkus',
          summary: 'List catalog entries in name order',
          security: admin,
          parameters: [{ $ref: '#/components/parameters/limit' }, { $ref: '#/components/parameters/skuCursor' }],
          responses: {
            '200': {
              description: 'One page of entries; `Link: <…>; rel="next"` when more exist',
              headers: { Link: { schema: { type: 'string' } } },
              content: json('SkuList'),
            },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '503': ref('ServiceUnavailable'),
          },
        },
      },
      '/catalog/skus/{sku}': {
        parameters: [{ $ref: '#/components/parameters/sku' }],
        get: {
          tags: ['catalog'],
          operationId: 'getSku',
          summary: 'Read a catalog entry',
          security: admin,
          responses: {
            '200': { description: 'The entry', headers: etag, content: json('Sku') },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
            '503': ref('ServiceUnavailable'),
          },
        },
        put: {
          tags: ['catalog'],
          operationId: 'putSku',
          summary: 'Create or replace a catalog entry; emits sku.upserted on catalog.events',
          security: admin,
          parameters: [{ $ref: '#/components/parameters/ifMatch' }],
          requestBody: { required: false, content: json('SkuUpsertBody') },
          responses: {
            '201': {
              description: 'Created',
              headers: { ...etag, Location: { schema: { type: 'string' } } },
              content: json('Sku'),
            },
            '204': { description: 'Replaced, or already so', headers: etag },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '412': ref('PreconditionFailed'),
            '413': ref('PayloadTooLarge'),
            '415': ref('UnsupportedMediaType'),
            '503': ref('ServiceUnavailable'),
          },
        },
        delete: {
          tags: ['catalog'],
          operationId: 'deleteSku',
          summary: 'Delete a catalog entry; emits sku.deleted on catalog.events',
          security: admin,
          parameters: [{ $ref: '#/components/parameters/ifMatch' }],
          responses: {
            '204': { description: 'Deleted' },
            '400': ref('BadRequest'),
            '401': ref('Unauthorized'),
            '404': ref('NotFound'),
            '412': ref('PreconditionFailed'),
            '503': ref('ServiceUnavailable'),
          },
        },
      },
    }),
    components: {
      securitySchemes: {
        basicAuth: {
          type: 'http',
          scheme: 'basic',
          description: 'An API client: client id and secret (RFC 7617). The only scheme for changes (spec 5).',
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
      parameters: {
        sku: { name: 'sku', in: 'path', required: true, schema: schemaOf(SkuName) },
        connectId: { name: 'connectId', in: 'path', required: true, schema: schemaOf(ConnectId) },
        rightId: { name: 'rightId', in: 'path', required: true, schema: schemaOf(RightId) },
        subscriptionId: { name: 'subscriptionId', in: 'path', required: true, schema: schemaOf(SubscriptionId) },
        limit: {
          name: 'limit',
          in: 'query',
          description: 'Page size (DESIGN.md 3 "Listing filters")',
          schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        },
        cursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: { type: 'string', pattern: KEYSET_CURSOR_PATTERN },
        },
        skuCursor: {
          name: 'cursor',
          in: 'query',
          description: 'Opaque: take it from the Link header of the previous page',
          schema: schemaOf(SkuName),
        },
        ifMatch: {
          name: 'If-Match',
          in: 'header',
          description: 'The generation the change expects, quoted (an ETag), e.g. "3"',
          schema: { type: 'string', pattern: IF_MATCH_PATTERN },
        },
      },
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
        Right: schemaOf(Right),
        RightList: schemaOf(RightList),
        RightCreateBody: schemaOf(RightCreateBody),
        Subscription: schemaOf(Subscription),
        SubscriptionList: schemaOf(SubscriptionList),
        SubscriptionCreateBody: schemaOf(SubscriptionCreateBody),
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
        Unauthorized: html('Missing or invalid credentials, or not permitted (spec 5)', {
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
        Conflict: text('The state does not allow it (spec 3, DESIGN.md 3)'),
        PayloadTooLarge: text('The body exceeds the limit'),
        UnsupportedMediaType: text('The body is not application/json'),
        ServiceUnavailable: text('A service or dependency is unavailable, or busy; retry after the time given', {
          'Retry-After': { schema: { type: 'integer' } },
        }),
        NotAcceptable: text('The Accept header admits neither application/json nor application/problem+json'),
        GatewayTimeout: text('The service behind the gateway did not answer in time'),
      },
    },
  };
}

type Operation = {
  security?: unknown[];
  parameters?: Array<{ $ref?: string }>;
  requestBody?: unknown;
  responses: Record<string, unknown>;
};
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * Every status the gateway can answer, on every operation that can get it (issue 9): a
 * caller past authentication may be rate limited or throttled (429) and find a dependency
 * unavailable (503); a forwarded operation may time out (504); a JSON operation may be
 * refused for its Accept header (406); a body may be malformed, too large or not JSON (400,
 * 413, 415); a parameter may be malformed (400); an If-Match may not match (412); the user of
 * a path may not exist (404). The operations themselves list what is theirs.
 */
function withGatewayResponses(paths: Record<string, Record<string, unknown>>) {
  for (const [path, item] of Object.entries(paths)) {
    const shared = (item.parameters as Operation['parameters']) ?? [];
    for (const method of METHODS) {
      const operation = item[method] as Operation | undefined;
      if (!operation) continue;
      const parameters = [...shared, ...(operation.parameters ?? [])].map((parameter) => parameter.$ref ?? '');
      const add = (status: string, response: string) => {
        operation.responses[status] ??= ref(response);
      };
      const authenticated = operation.security === undefined || operation.security.length > 0;
      if (authenticated) {
        add('401', 'Unauthorized');
        add('429', 'TooManyRequests');
        add('503', 'ServiceUnavailable');
      }
      if (path.startsWith('/catalog') || /^\/id\/users\/\{connectId\}\/(subs|rights)/.test(path))
        add('504', 'GatewayTimeout');
      const answersJson =
        Object.entries(operation.responses).some(
          ([status, response]) => status.startsWith('2') && JSON.stringify(response).includes('application/json'),
        ) || path.includes('/subs');
      if (answersJson) add('406', 'NotAcceptable');
      if (operation.requestBody) {
        add('400', 'BadRequest');
        add('413', 'PayloadTooLarge');
        add('415', 'UnsupportedMediaType');
      }
      if (parameters.length > 0 || path.includes('{')) add('400', 'BadRequest');
      if (parameters.some((name) => name.endsWith('/ifMatch'))) add('412', 'PreconditionFailed');
      if (path.startsWith('/id/users/{connectId}') && !(method === 'put' && path === '/id/users/{connectId}'))
        add('404', 'NotFound');
      operation.responses = Object.fromEntries(
        Object.entries(operation.responses).sort(([a], [b]) => a.localeCompare(b)),
      );
    }
  }
  return paths;
}
