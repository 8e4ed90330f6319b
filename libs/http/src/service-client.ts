import { DomainError, type Principal } from '@rs/contracts';
import type { z } from 'zod';
import { INTERNAL_TOKEN_HEADER, type InternalTokenSigner } from './internal-token';
import { startClientSpan } from './tracing';

/**
 * The one way a service asks another (docs/api.md): a GET with the caller's internal token, a
 * timeout, and the trace context, so the called service's span joins the caller's trace; with
 * `body`, a POST of it as JSON (the one announcement a service makes this way: a creation on a
 * test clock, docs/decisions/0050).
 */
export async function getFromService(url: URL, token: string, timeoutMs: number, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { [INTERNAL_TOKEN_HEADER]: token, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const method = body === undefined ? 'GET' : 'POST';
  const span = startClientSpan(method, url, headers);
  try {
    const response = await fetch(url, {
      method,
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    span.end(response.status);
    return response;
  } catch (error) {
    span.end();
    throw error;
  }
}

/** Another service could not be asked, or answered neither the resource nor 404. */
export class ServiceUnreachable extends Error {
  override readonly name = 'ServiceUnreachable';
}

/**
 * One resource of another service, read as `caller` with a token for `service`: its body as
 * `schema` reads it, or null when the service answers 404. Throws `ServiceUnreachable` when
 * it cannot be asked or answers anything else.
 */
export async function getResource<T>(
  url: URL,
  options: {
    signer: InternalTokenSigner;
    caller: Principal;
    service: string;
    schema: z.ZodType<T>;
    timeoutMs?: number;
    /** Sent as a POST (see `getFromService`). */
    body?: unknown;
  },
): Promise<T | null> {
  let response: Response;
  try {
    const token = await options.signer.tokenFor(options.caller, options.service);
    response = await getFromService(url, token, options.timeoutMs ?? 2_000, options.body);
  } catch (error) {
    throw new ServiceUnreachable(`${options.service} unreachable: ${(error as Error).message}`);
  }
  if (response.status === 200) return options.schema.parse(await response.json());
  // A refusal the other service states (a limit it keeps: docs/api.md "Test clocks") is the caller's to hear.
  if (response.status === 409) throw DomainError.conflict(await response.text());
  await response.body?.cancel();
  if (response.status === 404) return null;
  throw new ServiceUnreachable(`${options.service} answered ${response.status}`);
}

/** Who a service is when it calls another service on its own behalf (docs/api.md). */
export function servicePrincipal(service: string): Principal {
  return {
    clientId: `service:${service}`,
    grantorId: null,
    admin: false,
    scheme: 'service',
    scopes: [],
    subject: null,
  };
}

/**
 * Reads every page of one bucket of another service's internal listing (`bucketListing`,
 * docs/decisions/0011): `<bucket>`, then `<bucket>.<last id>` until the bucket ends, each
 * page handed to `eachPage` before the next is asked for, so the reader holds one page.
 * Returns how many entries it read.
 */
export async function readBucket<T>(
  url: string,
  bucket: number,
  options: {
    signer: InternalTokenSigner;
    caller: Principal;
    /** The service that answers `url`: the audience of the caller's token. */
    service: string;
    pageSize: number;
    schema: z.ZodType<{ items: T[]; next: string | null }>;
    timeoutMs?: number;
  },
  eachPage: (items: T[]) => Promise<void> | void,
): Promise<number> {
  let cursor: string | null = String(bucket);
  let read = 0;
  while (cursor !== null) {
    const target = new URL(url);
    target.searchParams.set('limit', String(options.pageSize));
    target.searchParams.set('cursor', cursor);
    const response = await getFromService(
      target,
      await options.signer.tokenFor(options.caller, options.service),
      options.timeoutMs ?? 10_000,
    );
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new Error(`${target.origin} answered ${response.status}`);
    }
    const page = options.schema.parse(await response.json());
    await eachPage(page.items);
    read += page.items.length;
    // A service of a release before docs/operations.md answers a whole bucket and names the next one.
    cursor = page.next?.startsWith(`${bucket}.`) ? page.next : null;
  }
  return read;
}
