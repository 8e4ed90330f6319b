import { createCloudEvent, historyOf } from '@rs/contracts';
import { monitoredConnection, testDatabase, type TestDatabase } from '@rs/testing';
import mongoose, { type mongo } from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HISTORY_SPAN, HistoryLog } from '../src/index';

// docs/decisions/0040: a page of a long history reads that page (and
// at most a span or two beside it), whatever the history's length. What a read costs is
// counted as the documents the server sends back, seen by the driver's command monitoring.

const LONG = 10_000;
let database: TestDatabase;
let monitored: mongoose.Connection;
let history: HistoryLog;
let returned = 0;

const changed = (subject: string, sequence: number, state: string) =>
  createCloudEvent({
    source: '/test',
    type: 'thing.changed',
    subject,
    data: { sequence, state, sequenceTimesTwo: sequence * 2 },
  });

beforeAll(async () => {
  database = await testDatabase('history_pages');
  const writer = new HistoryLog(database.db.db!, 'history', new Set(['thing.changed']), { kind: 'system', id: 'test' });
  await writer.ensureIndexes();
  const events = Array.from({ length: LONG }, (_, i) => changed('long', i + 1, i % 2 === 0 ? 'ACTIVE' : 'SUSPENDED'));
  for (let at = 0; at < events.length; at += 1_000) await writer.record(events.slice(at, at + 1_000));
  await writer.record([changed('short', 1, 'ACTIVE')]);
  // The same database through a connection that counts what the server returns.
  monitored = await monitoredConnection(database);
  monitored.getClient().on('commandSucceeded', (event: mongo.CommandSucceededEvent) => {
    const cursor = (event.reply as { cursor?: { firstBatch?: unknown[]; nextBatch?: unknown[] } }).cursor;
    returned += (cursor?.firstBatch ?? cursor?.nextBatch ?? []).length;
  });
  history = new HistoryLog(monitored.db!, 'history', new Set(['thing.changed']), { kind: 'system', id: 'test' });
}, 180_000);
afterAll(async () => {
  await monitored?.close();
  await database?.drop();
});

/** A page, and how many documents the server returned for it. */
async function read(subject: string, after: { generation: number; order: number } | null, limit: number) {
  returned = 0;
  const page = await history.page(subject, { after, limit, lastGeneration: subject === 'long' ? LONG : 1 });
  return { ...page, returned };
}

describe('a page of history reads that page', () => {
  it('when the first entry of a 10,000-entry history is read, then about one span is read, as for a history of one entry', async () => {
    const short = await read('short', null, 1);
    expect(short.records.map((record) => record.generation)).toEqual([1]);
    const first = await read('long', null, 1);
    expect(first.records.map((record) => record.generation)).toEqual([1]);
    expect(first.before).toBeNull();
    expect(first.returned).toBeLessThanOrEqual(HISTORY_SPAN);
  });

  it('when a page starts deep in the history, at a span boundary, then it reads its own spans and the one before, and its changes are counted from the entry before', async () => {
    const deep = await read('long', { generation: 8_191, order: 0 }, 1);
    expect(deep.records.map((record) => record.generation)).toEqual([8_192]);
    expect(deep.before?.generation).toBe(8_191);
    expect(deep.returned).toBeLessThanOrEqual(2 * HISTORY_SPAN);
    expect(historyOf(deep.records, deep.before)[0]).toMatchObject({
      generation: '8192',
      changes: { state: ['ACTIVE', 'SUSPENDED'], sequenceTimesTwo: [16_382, 16_384] },
    });
  });

  it('when pages of 1,000 are read one after the other, then together they are the whole history once, in order, each reading about its own size', async () => {
    const generations: number[] = [];
    let after: { generation: number; order: number } | null = null;
    for (;;) {
      const page = await read('long', after, 1_000);
      if (page.records.length === 0) break;
      expect(page.returned).toBeLessThanOrEqual(1_000 + 2 * HISTORY_SPAN);
      generations.push(...page.records.map((record) => record.generation));
      const last = page.records.at(-1)!;
      after = { generation: last.generation, order: last.order };
    }
    expect(generations).toEqual(Array.from({ length: LONG }, (_, i) => i + 1));
  });
});
