import { createCloudEvent, DomainError } from '@rs/contracts';
import { testDatabase, type TestDatabase } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  changeOne,
  ConcurrentChanges,
  MAX_RACES,
  OutboxCollection,
  outboxEntry,
  UNCHANGED,
  type ChangeSteps,
  type Decision,
} from '../src/index';

// The change pipeline (load, authorize, If-Match, decide, compare-and-set with the outbox,
// retry) on the real database, with the store's own compare-and-set: every service's API
// changes go through it.

interface Counter {
  id: string;
  generation: number;
  value: number;
}
type Step = { next: Counter };

let database: TestDatabase;
let counters: OutboxCollection;

beforeAll(async () => {
  database = await testDatabase('change_pipeline');
  counters = new OutboxCollection(database.db.db!, 'counters');
});
afterAll(() => database?.drop());

const stored = async (id: string) => {
  const doc = (await counters.collection.findOne({ _id: id } as never)) as unknown as
    (Counter & { _id: string; outbox: unknown[] }) | null;
  return doc && { generation: doc.generation, value: doc.value, events: doc.outbox.length };
};
const load = async (id: string): Promise<Counter | null> => {
  const doc = (await counters.collection.findOne({ _id: id } as never)) as unknown as Counter | null;
  return doc && { id, generation: doc.generation, value: doc.value };
};
const increment = (counter: Counter): Decision<Step> => ({
  kind: 'change',
  next: { ...counter, generation: counter.generation + 1, value: counter.value + 1 },
});
const write = (current: Counter, { next }: Step) =>
  counters.compareAndSet({
    id: current.id,
    generation: current.generation,
    set: { generation: next.generation, value: next.value },
    outbox: [
      outboxEntry(
        'counters.events',
        createCloudEvent({ source: '/test', type: 'counter.incremented', subject: next.id, data: next }),
      ),
    ],
  });
const steps = (id: string, more: Partial<ChangeSteps<Counter, Step>> = {}): ChangeSteps<Counter, Step> => ({
  what: `counter ${id}`,
  load: () => load(id),
  decide: increment,
  write,
  ...more,
});

async function counter(id: string, value = 0): Promise<void> {
  expect(await counters.insert({ _id: id, generation: 1, value } as never, [])).toBe(true);
}

describe('changeOne', () => {
  it('when a change is decided, then it is stored with its event at the next generation', async () => {
    await counter('c1');
    const done = await changeOne(steps('c1', { expectedGeneration: 1 }));
    expect(done).toMatchObject({ outcome: 'changed', change: { next: { generation: 2, value: 1 } } });
    expect(await stored('c1')).toEqual({ generation: 2, value: 1, events: 1 });
  });

  it('when the caller saw another generation (If-Match), then 412 and nothing changes', async () => {
    await counter('c2');
    const refused = changeOne(steps('c2', { expectedGeneration: 7 }));
    await expect(refused).rejects.toMatchObject({
      code: 'precondition_failed',
      message: 'If-Match does not match the generation of counter c2',
    });
    expect(await stored('c2')).toEqual({ generation: 1, value: 0, events: 0 });
  });

  it('when the caller may not, then its refusal is thrown before anything is decided', async () => {
    await counter('c3');
    let decided = false;
    const refused = changeOne(
      steps('c3', {
        authorize: () => {
          throw DomainError.notPermitted('not yours');
        },
        decide: (current) => {
          decided = true;
          return increment(current);
        },
      }),
    );
    await expect(refused).rejects.toMatchObject({ code: 'not_permitted' });
    expect(decided).toBe(false);
  });

  it('when the domain finds a conflict, then 409 with its reason; when nothing changes, then nothing is written', async () => {
    await counter('c4');
    await expect(
      changeOne(steps('c4', { decide: () => ({ kind: 'conflict', reason: 'counter c4 is frozen' }) })),
    ).rejects.toMatchObject({ code: 'conflict', message: 'counter c4 is frozen' });
    expect(await changeOne(steps('c4', { decide: () => UNCHANGED }))).toMatchObject({ outcome: 'unchanged' });
    expect(await stored('c4')).toEqual({ generation: 1, value: 0, events: 0 });
  });

  it('when there is no such entity, then it says so and writes nothing', async () => {
    expect(await changeOne(steps('absent'))).toEqual({ outcome: 'missing' });
    expect(await stored('absent')).toBeNull();
  });

  it('when another writer changes the entity between the read and the write, then the change is decided again on what it wrote', async () => {
    await counter('c5', 10);
    let reads = 0;
    const done = await changeOne(
      steps('c5', {
        load: async () => {
          const current = await load('c5');
          // The first time, a writer of another process stores its own change right after this
          // read (in this process, changes of one entity take turns: named apart, it does not wait).
          if (++reads === 1)
            expect(await changeOne(steps('c5', { what: 'counter c5, another process' }))).toMatchObject({
              outcome: 'changed',
            });
          return current;
        },
      }),
    );
    expect(reads).toBe(2);
    expect(done).toMatchObject({ outcome: 'changed', change: { next: { generation: 3, value: 12 } } });
    expect(await stored('c5')).toEqual({ generation: 3, value: 12, events: 2 });
  });

  it('when 16 changes of one entity are asked at once in this process, then they take turns: every one stored, no race lost', async () => {
    await counter('c7');
    let writes = 0;
    const counted = steps('c7', {
      write: (current, change) => {
        writes++;
        return write(current, change);
      },
    });
    const done = await Promise.all(Array.from({ length: 16 }, () => changeOne(counted)));
    expect(done.map(({ outcome }) => outcome)).toEqual(Array.from({ length: 16 }, () => 'changed'));
    expect(writes).toBe(16);
    expect(await stored('c7')).toEqual({ generation: 17, value: 16, events: 16 });
  });

  it('when it loses every race, then it gives up as ConcurrentChanges (503) after MAX_RACES attempts', async () => {
    await counter('c6');
    let attempts = 0;
    const lost = changeOne(
      steps('c6', {
        write: async (current, change) => {
          attempts++;
          await counters.compareAndSet({
            id: 'c6',
            generation: current.generation,
            set: { generation: current.generation + 1 },
            outbox: [],
          });
          return write(current, change);
        },
      }),
    );
    await expect(lost).rejects.toBeInstanceOf(ConcurrentChanges);
    expect(attempts).toBe(MAX_RACES);
    expect((await stored('c6'))!.value).toBe(0);
  });
});
