import { clientsOf, EVENTUALLY, TestSystem, ZipkinServer, type ZipkinSpan } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

/**
 * Traces on a machine without Docker. Zipkin's server (installed by the setup from
 * Maven Central, as `npm start -- --traces` runs it) receives the services' spans through the
 * OpenTelemetry SDK's standard Zipkin exporter, and one request's trace is found through
 * Zipkin's own HTTP API.
 */
const zipkin = new ZipkinServer();
let system: TestSystem;

beforeAll(async () => {
  await zipkin.start();
  system = await TestSystem.start({
    processes: true,
    name: 'zipkin',
    backends: ['catalog', 'rights', 'scheduler', 'webhooks'],
    env: zipkin.env,
  });
  await system.seed({ clients: clientsOf({ 'grantor-a': 'A' }), users: ['erin'], skus: { news: {} } });
}, 180_000);
afterAll(async () => {
  await system?.stop();
  await zipkin.close();
});

const serviceOf = (span: ZipkinSpan) => span.localEndpoint?.serviceName ?? '';

describe('a request traced in Zipkin', () => {
  it('when a right is created through the gateway, then its trace holds the gateway, the rights service, its database and the consumers of its event', async () => {
    const response = await fetch(`${system.gatewayUrl}/id/users/erin/rights`, {
      method: 'POST',
      headers: { authorization: TestSystem.clientAuthorization('grantor-a'), 'content-type': 'application/json' },
      body: JSON.stringify({ grantorId: 'A', sku: 'news', timeInterval: '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z' }),
    });
    expect(response.status).toBe(201);

    // As an operator would: the trace id of the gateway's log line for the request, looked up in Zipkin.
    type LogLine = { msg?: string; method?: string; path?: string; trace_id?: string; request_id?: string };
    const parsed = (line: string): LogLine => {
      try {
        return JSON.parse(line) as LogLine;
      } catch {
        return {}; // a line the pipe cut in two
      }
    };
    const requestLine = (service: string) =>
      vi.waitFor(() => {
        const line = system
          .service(service)
          .logs.map(parsed)
          .find(
            (entry) => entry.msg === 'request' && entry.method === 'POST' && entry.path === '/id/users/erin/rights',
          );
        if (!line) throw new Error(`the request is not logged by ${service} yet`);
        return line;
      }, EVENTUALLY);
    const logged = await requestLine('gateway');
    expect(logged?.trace_id).toMatch(/^[0-9a-f]{32}$/);
    // Its request id is the answer's, and the rights service's line for it carries both ids too.
    expect(logged?.request_id).toBe(response.headers.get('x-request-id'));
    const served = await requestLine('rights');
    expect({ request_id: served.request_id, trace_id: served.trace_id }).toEqual({
      request_id: logged.request_id,
      trace_id: logged.trace_id,
    });
    let trace: ZipkinSpan[] = [];
    const complete = (spans: ZipkinSpan[]) =>
      ['scheduler', 'webhooks'].every((service) =>
        spans.some((span) => serviceOf(span) === service && span.kind === 'CONSUMER'),
      );
    await vi.waitFor(
      async () => {
        trace = await zipkin.trace(logged!.trace_id!);
        if (!complete(trace)) throw new Error('the trace has not reached Zipkin whole yet');
      },
      { timeout: 30_000, interval: 500 },
    );
    // Zipkin lower-cases span names: the gateway's is the public route's template, the rights
    // service's the route it matched.
    const names = new Set(
      trace.filter((span) => span.kind === 'SERVER').map((span) => `${serviceOf(span)} ${span.name}`),
    );
    expect(names).toContain('gateway post /id/users/{connectid}/rights');
    expect(names).toContain('rights post /id/users/:connectid/rights');
    const kinds = new Set(trace.map((span) => `${serviceOf(span)} ${span.kind ?? 'INTERNAL'}`));
    expect(kinds).toContain('gateway SERVER');
    expect(kinds).toContain('gateway CLIENT');
    expect(kinds).toContain('rights SERVER');
    expect(kinds).toContain('rights PRODUCER');
    expect(kinds).toContain('scheduler CONSUMER');
    expect(kinds).toContain('webhooks CONSUMER');
    // The rights service's database commands, as the MongoDB driver's instrumentation names them.
    const database = trace.filter(
      (span) =>
        serviceOf(span) === 'rights' && span.kind === 'CLIENT' && /mongodb/.test(JSON.stringify(span.tags ?? {})),
    );
    expect(database.length).toBeGreaterThan(0);
    // One trace: every span but the root has its parent in it.
    const ids = new Set(trace.map((span) => span.id));
    expect(trace.filter((span) => span.parentId !== undefined && !ids.has(span.parentId))).toEqual([]);
  });
});
