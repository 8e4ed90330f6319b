import type { AuditEntry, Principal } from '@rs/contracts';
import { createLogger } from '@rs/logging';
import { testDatabase, type TestDatabase } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/app/audit';
import { AUDIT_BEGUN, AUDIT_EVENTS, AuditStore } from '../src/store/audit-store';

// docs/decisions/0059 on the real database: entries begun together are stored as one group
// until each is completed; a gateway that stops leaves its group, and any replica's sweep
// closes what was never completed and stores the events of the rest again.

let database: TestDatabase;
beforeAll(async () => {
  database = await testDatabase('audit_store');
});
afterAll(() => database?.drop());

const BASE = 'https://rights.example';
const LEASE_MS = 60_000;
const T0 = new Date('2026-11-29T10:00:00Z');
const agent: Principal = {
  clientId: 'console',
  grantorId: null,
  admin: false,
  scheme: 'staff',
  scopes: [],
  subject: 'ann',
  staff: { grantors: ['acme'], write: true },
  person: { issuer: 'https://idp.example', subject: 'ann', name: 'Ann' },
};
const reader: Principal = { ...agent, admin: true, staff: { grantors: [], write: false } };

/** A gateway's log over the shared database, its clock at `now`. */
function gatewayAt(now: Date): AuditLog {
  return new AuditLog({
    store: new AuditStore(database.db.db!, 400),
    publicBaseUrl: BASE,
    clock: () => now,
    logger: createLogger('audit-store-test', 'silent'),
    leaseMs: LEASE_MS,
  });
}
const suspension = (rightId: string) => ({
  action: 'POST /id/users/{connectId}/rights/{rightId}/suspend',
  path: `/id/users/alice/rights/${rightId}/suspend`,
  reason: 'ticket 7',
  requestId: null,
  traceId: null,
  bodyGrantor: null,
});
const answered = (status: number) => ({ status, location: null, bodyGrantor: null, answerGrantor: 'acme' });

/** The `audit.recorded` events stored for the relay, by the entry they record. */
async function storedEvents(): Promise<Map<string, AuditEntry[]>> {
  const docs = await database.db.collection(AUDIT_EVENTS).find().toArray();
  const events = new Map<string, AuditEntry[]>();
  for (const stored of docs.flatMap((doc) => doc.outbox as Array<{ event: string }>)) {
    const event = JSON.parse(stored.event) as { subject: string; data: AuditEntry };
    events.set(event.subject, [...(events.get(event.subject) ?? []), event.data]);
  }
  return events;
}

describe('entries begun together (docs/decisions/0059)', () => {
  it('when a gateway stops with a group half completed, then the sweep of another closes the rest with status null, stores every event again at least once, and removes the group', async () => {
    const first = gatewayAt(T0);
    // Begun at once: the first is stored alone, the two that arrive meanwhile as one group.
    const [lone, done, lost] = await Promise.all(['R1', 'R2', 'R3'].map((id) => first.begin(agent, suspension(id))));
    expect(await database.db.collection(AUDIT_BEGUN).countDocuments()).toBe(2);
    await first.complete(lone!, answered(204));
    await first.complete(done!, answered(204));
    // The lone entry's group is complete and gone; the other waits for its last entry.
    const left = await database.db.collection(AUDIT_BEGUN).find().toArray();
    expect(left.map((group) => (group.entries as AuditEntry[]).map(({ auditId }) => auditId))).toEqual([
      [done!.entry.auditId, lost!.entry.auditId],
    ]);

    // The first gateway stops. Another, before the lease has run out, closes nothing.
    expect(await gatewayAt(new Date(T0.getTime() + LEASE_MS - 1)).closeAbandoned()).toBe(0);
    const sweeper = gatewayAt(new Date(T0.getTime() + LEASE_MS + 1));
    expect(await sweeper.closeAbandoned()).toBe(1);
    expect(await database.db.collection(AUDIT_BEGUN).countDocuments()).toBe(0);
    expect(await sweeper.closeAbandoned()).toBe(0);

    const page = await sweeper.list(reader, {}, { after: null, limit: 10 });
    const statusOf = Object.fromEntries(page.items.map((entry) => [entry.auditId, entry.status]));
    expect(statusOf).toEqual({ [lone!.entry.auditId]: 204, [done!.entry.auditId]: 204, [lost!.entry.auditId]: null });
    const events = await storedEvents();
    expect(events.get(lone!.entry.auditId)).toHaveLength(1);
    // Its events may not have been stored before the stop: stored again, the same entry.
    expect(events.get(done!.entry.auditId)).toEqual([
      expect.objectContaining({ status: 204 }),
      expect.objectContaining({ status: 204 }),
    ]);
    expect(events.get(lost!.entry.auditId)).toEqual([expect.objectContaining({ status: null, reason: 'ticket 7' })]);
  });

  it('when an entry is completed twice (its request and a sweep), then it is stored once and the second finds it', async () => {
    const log = gatewayAt(T0);
    const begun = await log.begin(agent, suspension('R9'));
    await log.complete(begun, answered(204));
    await log.complete(begun, answered(500));
    const page = await log.list(reader, { subject: `/id/users/alice/rights/R9` }, { after: null, limit: 10 });
    expect(page.items.map(({ status }) => status)).toEqual([204]);
  });
});
