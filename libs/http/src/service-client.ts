import { INTERNAL_TOKEN_HEADER } from './internal-token';
import { startClientSpan } from './tracing';

/**
 * The one way a service reads from another (DESIGN.md 4): a GET with the caller's internal
 * token, a timeout, and the trace context, so the called service's span joins the caller's
 * trace.
 */
export async function getFromService(url: URL, token: string, timeoutMs: number): Promise<Response> {
  const headers: Record<string, string> = { [INTERNAL_TOKEN_HEADER]: token, accept: 'application/json' };
  const span = startClientSpan('GET', url, headers);
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    span.end(response.status);
    return response;
  } catch (error) {
    span.end();
    throw error;
  }
}
