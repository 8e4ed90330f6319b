import { periodRightId } from '@rs/hashing';
import { fixedCatalog, monitoredConnection, rightsIssue, testDatabase, type TestDatabase } from '@rs/testing';
import { NowFor } from '@rs/http';
import { manualClock } from '@rs/time';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RightCommands } from '../src/app/right-commands';
import { supersededBeforeIssue } from '../src/domain/right';
import { RightMessages } from '../src/messages/events';
import { RightStore } from '../src/store/right-store';

// A `rights.issue` delivered again (after a crash before its ack) finds its rights stored, and
// any a later plan change ended before they were issued kept as tombstones (docs/decisions/0052).
// It reads only those it finds taken, each by its id: what FerretDB serves from an index, where a
// read of many ids at once reads every right of the service. What the server was asked is seen
// by the driver's command monitoring.

const PERIODS = 120;
const clock = manualClock('2026-03-01T00:00:00Z');
let database: TestDatabase;
let monitored: mongoose.Connection;
let commands: RightCommands;
let store: RightStore;
/** The filters of the `find` commands sent for rights. */
let rightReads: Array<Record<string, unknown>> = [];

const period = (n: number) =>
  rightsIssue({
    subscriptionId: `S-again-${n}`,
    connectId: `user-${n % 10}`,
    periodStart: '2026-03-01T00:00:00Z',
    timeInterval: '2026-03-01T00:00:00Z/P1M',
  });

beforeAll(async () => {
  database = await testDatabase('rights_issue_again');
  monitored = await monitoredConnection(database);
  monitored.getClient().on('commandStarted', (started: mongo.CommandStartedEvent) => {
    if (started.commandName === 'find' && started.command.find === 'rights')
      rightReads.push(started.command.filter as Record<string, unknown>);
  });
  store = new RightStore(monitored);
  await store.ensureIndexes();
  commands = new RightCommands({
    store,
    skus: fixedCatalog({ news: { serviceProviderId: null, grantorIds: ['A'] } }),
    messages: new RightMessages('https://api.example.com'),
    time: new NowFor(clock),
  });
}, 60_000);
afterAll(async () => {
  await monitored?.close();
  await database?.drop();
});

describe('rights.issue again', () => {
  it('when a batch is issued again, then the rights it finds taken are read each by its id, and a superseded one stays ended', async () => {
    const batch = Array.from({ length: PERIODS }, (_, n) => period(n));
    const first = await commands.issueForPeriods(batch.slice(0, PERIODS - 1));
    expect(first.issued).toHaveLength(PERIODS - 1);
    // The last period's right was ended by a plan change before it was issued.
    const last = batch.at(-1)!;
    const supersededId = periodRightId(last.subscriptionId, last.periodStart, 0, 0);
    await store.supersede(
      supersededBeforeIssue(
        { rightId: supersededId, userId: last.connectId, subscriptionId: last.subscriptionId },
        new Date('2026-03-01T00:00:00Z'),
        clock(),
      ),
    );
    rightReads = [];

    const again = await commands.issueForPeriods(batch);

    // Issued again, as the first time (their events go out again); the superseded one not.
    expect(again.issued.map((right) => right.rightId).sort()).toEqual(first.issued.map((r) => r.rightId).sort());
    expect(again.outbox).toHaveLength(PERIODS - 1);
    expect(rightReads.length).toBeLessThanOrEqual(PERIODS);
    for (const filter of rightReads) expect(typeof filter._id, JSON.stringify(filter).slice(0, 120)).toBe('string');
  });

  it('when a batch is all new, then it reads no right', async () => {
    rightReads = [];
    const fresh = Array.from({ length: 20 }, (_, n) => period(PERIODS + n));

    const issued = await commands.issueForPeriods(fresh);

    expect(issued.issued).toHaveLength(20);
    expect(rightReads).toEqual([]);
  });
});
