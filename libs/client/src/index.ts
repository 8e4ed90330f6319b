import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { components, paths } from './api';

export type { components, operations, paths } from './api';
/** The bodies of the API (docs/api.md), by their OpenAPI names: `Schemas['Right']`, `Schemas['Entitlement']`. */
export type Schemas = components['schemas'];

/** Who calls (docs/api.md): an API client with Basic credentials, or a user's access token (Bearer). */
export type Credentials =
  { basic: { clientId: string; secret: string } } | { bearer: string | (() => string | Promise<string>) };

export interface PlatformClientOptions {
  /** The gateway's public base URL (`PUBLIC_BASE_URL`), e.g. `https://rights.example.com`. */
  baseUrl: string;
  credentials?: Credentials;
  /** Another fetch (a test's, a proxy's); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

/** Every path and method of the OpenAPI document, typed: `client.GET('/id/users/{connectId}', …)`. */
export type PlatformClient = Client<paths>;

/**
 * A client of the platform's API (the gateway), typed from `docs/openapi.json`: paths,
 * parameters, bodies and answers are checked by `tsc`. It sends the credentials with every
 * request, and follows the contract's 307 redirects (a non-admin's list without its grantor
 * filter, docs/api.md) as `fetch` does, method, body and credentials kept on the same origin. See
 * `pages` for `Link` pagination, `etagOf` for `If-Match`, and `newIdempotencyKey`.
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const client = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  client.use(askForProblems);
  if (options.credentials) client.use(sendCredentials(options.credentials));
  return client;
}

/**
 * Refusals as RFC 9457 problem documents (a `title` and a `detail`) rather than the contract's
 * text or HTML: JSON first, then problems, then anything (a right token is `application/jwt`).
 * A request that sets its own `Accept` keeps it.
 */
const askForProblems: Middleware = {
  onRequest({ request }) {
    if (!request.headers.has('accept'))
      request.headers.set('accept', 'application/json, application/problem+json;q=0.9, */*;q=0.1');
    return request;
  },
};

function sendCredentials(credentials: Credentials): Middleware {
  return {
    async onRequest({ request }) {
      if ('basic' in credentials) {
        const { clientId, secret } = credentials.basic;
        request.headers.set('authorization', `Basic ${base64(`${clientId}:${secret}`)}`);
      } else {
        const token = typeof credentials.bearer === 'string' ? credentials.bearer : await credentials.bearer();
        request.headers.set('authorization', `Bearer ${token}`);
      }
      return request;
    },
  };
}

/** UTF-8, then base64 (RFC 7617), in Node and in browsers alike. */
function base64(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/**
 * An answer the platform refused: its status, the problem's `title` (`Conflict`, `Not Found`…)
 * and `detail` (what was wrong, e.g. `timeInterval: the end must be after the start`), and
 * the body as it came.
 */
export class PlatformError extends Error {
  override readonly name = 'PlatformError';
  readonly title: string;
  readonly detail: string;

  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    const problem = typeof body === 'object' && body !== null ? (body as { title?: unknown; detail?: unknown }) : {};
    const detail = typeof problem.detail === 'string' ? problem.detail : typeof body === 'string' ? body : '';
    super(`the platform answered ${status}${detail ? `: ${detail}` : ''}`);
    this.title = typeof problem.title === 'string' ? problem.title : String(status);
    this.detail = detail;
  }
}

/** The data of a successful answer, or a `PlatformError`: `const right = ok(await client.GET(…))`. */
export function ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (!result.response.ok) throw new PlatformError(result.response.status, result.error);
  return result.data as T;
}

/**
 * Every page of a list (docs/api.md "Listing filters"), following the cursor of each
 * answer's `Link: <…>; rel="next"` until there is none: `for await (const page of pages((cursor)
 * => client.GET('/id/users/{connectId}/rights', { params: { path, query: { grantorId, cursor } } })))`.
 */
export async function* pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ data?: T; error?: unknown; response: Response }>,
): AsyncGenerator<T> {
  let cursor: string | undefined;
  do {
    const result = await fetchPage(cursor);
    yield ok(result);
    cursor = nextCursor(result.response.headers.get('link'));
  } while (cursor !== undefined);
}

/** The cursor of a `Link` header's `rel="next"` target, if it has one. */
export function nextCursor(link: string | null): string | undefined {
  for (const part of link?.split(',') ?? []) {
    const match = /<([^>]*)>\s*;\s*rel="?next"?/.exec(part);
    if (match) return new URL(match[1]!, 'http://link.invalid').searchParams.get('cursor') ?? undefined;
  }
  return undefined;
}

/**
 * The `ETag` of an answer (`"<generation>"`, docs/api.md), to send back as `If-Match` so that a
 * change applies only to the generation read (412 otherwise).
 */
export function etagOf(response: Response): string {
  const etag = response.headers.get('etag');
  if (!etag) throw new Error(`no ETag in the answer to ${response.url}`);
  return etag;
}

/** A new `Idempotency-Key` (docs/api.md): send the same one again when you retry the same request. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}
