import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Sampling by the standard variables: with a ratio of 0 nothing starts a
// trace here, while a caller's sampled traceparent is honoured across the gateway, the
// owning service and the broker's consumers (parent-based sampling).

const fx = systemFixture({
  name: 'sampling',
  backends: ['catalog', 'rights'],
  traces: true,
  env: { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' },
});
beforeAll(fx.start);
afterAll(fx.stop);

const putSku = (sku: string, headers: Record<string, string> = {}) =>
  fetch(`${fx.system.gatewayUrl}/catalog/skus/${sku}`, {
    method: 'PUT',
    headers: fx.system.adminHeaders({ 'content-type': 'application/json', ...headers }),
    body: '{}',
  });

describe('OTEL_TRACES_SAMPLER', () => {
  it('when the ratio is 0, then requests start no trace, but a sampled traceparent from the caller is kept end to end', async () => {
    expect((await putSku('unsampled-sku')).status).toBe(201);

    const traceId = randomBytes(16).toString('hex');
    const traceparent = `00-${traceId}-${randomBytes(8).toString('hex')}-01`;
    expect((await putSku('sampled-sku', { traceparent })).status).toBe(201);

    // Each service exports on its own schedule: the rights consumer's span may come before the
    // gateway's, so wait for the whole set rather than for the last hop.
    const services = () => [...new Set(fx.receiver.spans.filter((s) => s.traceId === traceId).map((s) => s.service))];
    await expect.poll(() => services().sort(), { timeout: 15_000 }).toEqual(['catalog', 'gateway', 'rights']);
    await sleep(500); // the export interval is 100 ms: the other request's spans would be here by now
    expect(fx.receiver.spans.filter((s) => s.traceId !== traceId)).toEqual([]);
  });
});
