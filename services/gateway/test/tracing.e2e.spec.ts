import { randomBytes } from 'node:crypto';
import { systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

const fx = systemFixture({
  processes: true,
  name: 'tracing',
  backends: ['catalog', 'rights'],
  traces: true,
  collect: { 'catalog.events': 'sku.upserted' },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe('one trace end to end', () => {
  it('when a SKU is written through the gateway, then the gateway, the catalog and the event consumer in the rights service share one trace', async () => {
    const response = await fetch(`${fx.system.gatewayUrl}/catalog/skus/traced-sku`, {
      method: 'PUT',
      headers: fx.system.adminHeaders({ 'content-type': 'application/json' }),
      body: '{}',
    });
    expect(response.status).toBe(201);

    let traceId: string | undefined;
    let services = new Set<string>();
    await vi.waitFor(
      () => {
        const gatewaySpan = fx.receiver.spans.find(
          (s) => s.service === 'gateway' && s.kind === SERVER && s.name.startsWith('PUT'),
        );
        traceId = gatewaySpan?.traceId;
        const inTrace = fx.receiver.spans.filter((s) => s.traceId === traceId);
        services = new Set(inTrace.map((s) => `${s.service}:${s.kind}`));
        if (!services.has('catalog:2') || !services.has('rights:5')) throw new Error('the trace is not whole yet');
      },
      { timeout: 15_000, interval: 100 },
    );
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(services).toContain(`gateway:${SERVER}`);
    expect(services).toContain(`catalog:${SERVER}`);
    expect(services).toContain(`rights:${CONSUMER}`);
    // Tracing costs little: no span per Express middleware or router layer, and
    // one span per database command (the driver's), none from mongoose around it.
    const names = fx.receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.name);
    expect(names.filter((name) => /^(middleware|router) - /.test(name))).toEqual([]);
    expect(names.filter((name) => /^mongoose\./.test(name))).toEqual([]);
    // Spans are named by the route that matched; the gateway's call to the catalog is the
    // catalog's parent.
    const catalogServer = fx.receiver.spans.find(
      (s) => s.traceId === traceId && s.service === 'catalog' && s.kind === SERVER,
    );
    expect(catalogServer?.name).toBe('PUT /catalog/skus/:sku');
    const gatewayClient = fx.receiver.spans.find(
      (s) => s.traceId === traceId && s.service === 'gateway' && s.kind === CLIENT && s.name === 'PUT',
    );
    expect(catalogServer?.parentSpanId).toBe(gatewayClient?.spanId);
    // The event the write published carries the trace to its consumers (docs/operations.md).
    const [event] = await fx.events('catalog.events').waitFor((m) => m.some((e) => e.body.subject === 'traced-sku'));
    expect(String(event!.properties.headers?.traceparent)).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
    // The catalog's MongoDB write is in the trace too.
    expect(
      fx.receiver.spans.some((s) => s.traceId === traceId && s.service === 'catalog' && /mongo|skus/i.test(s.name)),
    ).toBe(true);
  });
});

// Sampling by the standard variables: with a ratio of 0 nothing starts a trace here, while a
// caller's sampled traceparent is honoured across the gateway, the owning service and the
// broker's consumers (parent-based sampling).
describe('OTEL_TRACES_SAMPLER', () => {
  const sampled = systemFixture({
    processes: true,
    name: 'sampling',
    backends: ['catalog', 'rights'],
    traces: true,
    env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
  });
  beforeAll(sampled.start);
  afterAll(sampled.stop);

  const putSku = (sku: string, headers: Record<string, string> = {}) =>
    fetch(`${sampled.system.gatewayUrl}/catalog/skus/${sku}`, {
      method: 'PUT',
      headers: sampled.system.adminHeaders({ 'content-type': 'application/json', ...headers }),
      body: '{}',
    });

  it('when the ratio is 0, then requests start no trace, but a sampled traceparent from the caller is kept end to end', async () => {
    expect((await putSku('unsampled-sku')).status).toBe(201);

    const traceId = randomBytes(16).toString('hex');
    const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    expect((await putSku('sampled-sku', { traceparent })).status).toBe(201);

    // Each service exports on its own schedule: the rights consumer's span may come before the
    // gateway's, so wait for the whole set rather than for the last hop.
    const services = () => [
      ...new Set(sampled.receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.service)),
    ];
    // Each service exports its spans in the order they end, and the unsampled request ended
    // before this one everywhere: with this one's spans in from every service, any of its would be.
    await expect.poll(() => services().sort()).toEqual(['catalog', 'gateway', 'rights']);
    expect(sampled.receiver.spans.filter((s) => s.traceId !== traceId)).toEqual([]);
  });
});
