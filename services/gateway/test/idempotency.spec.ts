import { takesIdempotencyKey } from '@rs/contracts';
import { describe, expect, it } from 'vitest';
import {
  fingerprintOf,
  isValidIdempotencyKey,
  keepsResponse,
  onRetry,
  resourceIdOf,
  type KeptRequest,
} from '../src/domain/idempotency';

const NOW = new Date('2026-03-01T00:00:00Z');
const later = (ms: number) => new Date(NOW.getTime() + ms);
const kept = (fields: Partial<KeptRequest>): KeptRequest => ({
  fingerprint: 'F',
  state: 'done',
  leaseUntil: later(5_000),
  expiresAt: later(86_400_000),
  ...fields,
});

describe('docs/api.md "Idempotency-Key"', () => {
  it('a key is 1 to 255 visible ASCII characters, on POST and DELETE under /id/users/', () => {
    expect(isValidIdempotencyKey('order-17:retry/1')).toBe(true);
    expect(isValidIdempotencyKey('x'.repeat(255))).toBe(true);
    for (const bad of ['', 'x'.repeat(256), 'with space', 'tab\t', 'é']) expect(isValidIdempotencyKey(bad)).toBe(false);
    expect(takesIdempotencyKey('POST', '/id/users/a/rights')).toBe(true);
    expect(takesIdempotencyKey('DELETE', '/id/users/a/subs/S1')).toBe(true);
    expect(takesIdempotencyKey('GET', '/id/users/a/rights')).toBe(false);
    expect(takesIdempotencyKey('PUT', '/catalog/skus/x')).toBe(false);
  });

  it('the same method, path, query and body make the same request; any difference another', () => {
    const body = Buffer.from('{"a":1}');
    expect(fingerprintOf('POST', '/id/users/a/rights', body)).toBe(fingerprintOf('POST', '/id/users/a/rights', body));
    expect(fingerprintOf('POST', '/id/users/b/rights', body)).not.toBe(
      fingerprintOf('POST', '/id/users/a/rights', body),
    );
    expect(fingerprintOf('POST', '/id/users/a/rights', Buffer.from('{"a":2}'))).not.toBe(
      fingerprintOf('POST', '/id/users/a/rights', body),
    );
  });

  it('a kept answer is replayed to the same request, refused to another, and waited for while the first runs', () => {
    expect(onRetry(kept({}), 'F', NOW)).toBe('replay');
    expect(onRetry(kept({}), 'G', NOW)).toBe('mismatch');
    expect(onRetry(kept({ state: 'running' }), 'F', NOW)).toBe('running');
    expect(onRetry(kept({ state: 'running' }), 'G', NOW)).toBe('mismatch');
  });

  it('a released key, or a first attempt past its lease (it crashed), runs the same request again; another is still refused', () => {
    expect(onRetry(kept({ state: 'released' }), 'F', NOW)).toBe('take-over');
    expect(onRetry(kept({ state: 'running', leaseUntil: NOW }), 'F', NOW)).toBe('take-over');
    expect(onRetry(kept({ state: 'released' }), 'G', NOW)).toBe('mismatch');
    expect(onRetry(kept({ state: 'running', leaseUntil: NOW }), 'G', NOW)).toBe('mismatch');
  });

  it('once IDEMPOTENCY_TTL_S has passed, the key is forgotten: any request with it starts afresh', () => {
    for (const state of ['done', 'released', 'running'] as const) {
      expect(onRetry(kept({ state, expiresAt: NOW }), 'G', NOW)).toBe('new');
      expect(onRetry(kept({ state, expiresAt: NOW }), 'F', NOW)).toBe('new');
    }
  });

  it('5xx and 429 are not kept (a retry runs again); everything else is', () => {
    for (const status of [200, 201, 204, 400, 401, 404, 409, 412]) expect(keepsResponse(status)).toBe(true);
    for (const status of [429, 500, 503, 504]) expect(keepsResponse(status)).toBe(false);
  });

  it('a create gets an id derived from the client, the key and its nonce: alphanumeric, the same on every retry', () => {
    expect(resourceIdOf('app', 'order-1', 'n1')).toMatch(/^[0-9a-f]{32}$/);
    expect(resourceIdOf('app', 'order-1', 'n1')).toBe(resourceIdOf('app', 'order-1', 'n1'));
    expect(resourceIdOf('app', 'order-1', 'n1')).not.toBe(resourceIdOf('other', 'order-1', 'n1'));
    // The key used again after it was forgotten has a new nonce: a new resource.
    expect(resourceIdOf('app', 'order-1', 'n2')).not.toBe(resourceIdOf('app', 'order-1', 'n1'));
  });
});
