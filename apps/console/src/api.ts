import { createPlatformClient, nextCursor, type PlatformClient } from '@rs/client';
import type { Session } from './session';

/** A refusal of the API, as its problem document says it (docs/api.md "Error bodies"). */
export class Refused extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(`${status}: ${detail}`);
  }
}

/** What a call answered: its data, and the cursor of the next page when its `Link` names one. */
export interface Answered<T> {
  data: T;
  next: string | undefined;
}

/**
 * The console's one way to the platform: the typed client of the public API (`@rs/client`),
 * with the staff member's token, refusals turned into `Refused` with the API's own words, and
 * `X-Audit-Reason` on every change (docs/audit.md).
 */
export class Api {
  readonly client: PlatformClient;

  constructor(baseUrl: string, session: Session) {
    this.client = createPlatformClient({ baseUrl, credentials: { bearer: () => session.token() } });
  }

  /** Runs a call of the typed client; its data, or `Refused`. */
  async read<T>(call: (client: PlatformClient) => Promise<{ data?: T; error?: unknown; response: Response }>) {
    const { data, error, response } = await call(this.client);
    if (!response.ok) throw new Refused(response.status, problemDetail(error, response));
    return { data: data as T, next: nextCursor(response.headers.get('link')) } satisfies Answered<T>;
  }

  /** The caller as the gateway sees it: a staff member's level and grantors (docs/api.md "Who is calling"). */
  async me() {
    return (await this.read((client) => client.GET('/id/me'))).data;
  }

  /** A change, said why: the reason travels percent-encoded (a header carries bytes, not text). */
  headersFor(reason: string): Record<string, string> {
    return { 'x-audit-reason': encodeURIComponent(reason) };
  }
}

function problemDetail(error: unknown, response: Response): string {
  if (error && typeof error === 'object') {
    const { detail, title } = error as { detail?: unknown; title?: unknown };
    if (typeof detail === 'string') return detail;
    if (typeof title === 'string') return title;
  }
  if (typeof error === 'string' && error.length > 0) return error;
  return response.statusText || 'refused';
}
