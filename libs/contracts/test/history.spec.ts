import { describe, expect, it } from 'vitest';
import { actorOf, historyOf, type HistoryRecord } from '../src/schemas/history';
import type { Principal } from '../src/schemas/principal';

// docs/api.md "History": the entries a resource's records make, and who the actor of a call is.

const client = { kind: 'client', id: 'acme' } as const;
const system = { kind: 'system', id: 'scheduler' } as const;
const at = (second: number) => new Date(Date.UTC(2026, 2, 1, 0, 0, second));
const record = (generation: number, type: string, data: Record<string, unknown>, order = 0): HistoryRecord => ({
  subject: 'S1',
  generation,
  order,
  type,
  time: at(generation),
  actor: generation === 1 ? client : system,
  data: { ...data, sequence: generation, connectId: 'alice', generation: String(generation) },
});

describe('historyOf', () => {
  it('when records come in any order, then entries are oldest first, each with the fields that differ from the generation before', () => {
    const entries = historyOf([
      record(3, 'subscription.renewed', { state: 'ACTIVE', nextPeriod: 2, rightsSpec: [{ sku: 'news' }] }),
      record(1, 'subscription.created', { state: 'ACTIVE', nextPeriod: 0, rightsSpec: [{ sku: 'news' }] }),
      record(2, 'subscription.renewed', { state: 'ACTIVE', nextPeriod: 1, rightsSpec: [{ sku: 'news' }] }),
    ]);
    expect(entries.map((e) => [e.generation, e.type, e.cursor])).toEqual([
      ['1', 'subscription.created', '1.0'],
      ['2', 'subscription.renewed', '2.0'],
      ['3', 'subscription.renewed', '3.0'],
    ]);
    // The creation: every field of the resource (not its user, sequence or generation) as [null, value].
    expect(entries[0]!.changes).toEqual({
      state: [null, 'ACTIVE'],
      nextPeriod: [null, 0],
      rightsSpec: [null, [{ sku: 'news' }]],
    });
    expect(entries[1]!.changes).toEqual({ nextPeriod: [0, 1] });
    expect(entries[2]).toMatchObject({ time: at(3).toISOString(), actor: system, changes: { nextPeriod: [1, 2] } });
  });

  it('when one change emits two events, then both show its changes, in the order emitted', () => {
    const entries = historyOf([
      record(2, 'subscription.expired', { state: 'EXPIRED', nextPeriod: null }, 1),
      record(1, 'subscription.created', { state: 'ACTIVE', nextPeriod: 0 }),
      record(2, 'subscription.renewed', { state: 'EXPIRED', nextPeriod: null }, 0),
    ]);
    expect(entries.map((e) => e.type)).toEqual([
      'subscription.created',
      'subscription.renewed',
      'subscription.expired',
    ]);
    const ended = { state: ['ACTIVE', 'EXPIRED'], nextPeriod: [0, null] };
    expect(entries[1]!.changes).toEqual(ended);
    expect(entries[2]!.changes).toEqual(ended);
  });

  it('when nested values are equal but differently ordered objects, then they are not changes', () => {
    const entries = historyOf([
      record(1, 'right.created', { payload: { a: 1, b: [1, 2] }, used: false }),
      record(2, 'right.used', { payload: { b: [1, 2], a: 1 }, used: true }),
    ]);
    expect(entries[1]!.changes).toEqual({ used: [false, true] });
  });
});

describe('actorOf', () => {
  const principal = (fields: Partial<Principal>): Principal => ({
    clientId: 'acme',
    grantorId: 'A',
    admin: false,
    scheme: 'basic',
    scopes: [],
    subject: null,
    ...fields,
  });
  it('names the API client for Basic, the user for Bearer, and the service for a service call', () => {
    expect(actorOf(principal({}))).toEqual({ kind: 'client', id: 'acme' });
    expect(actorOf(principal({ scheme: 'bearer', subject: 'alice' }))).toEqual({ kind: 'user', id: 'alice' });
    expect(actorOf(principal({ scheme: 'service', clientId: 'scheduler' }))).toEqual({
      kind: 'system',
      id: 'scheduler',
    });
  });
});
