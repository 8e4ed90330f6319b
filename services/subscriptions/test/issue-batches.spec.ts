import {
  CommandTypes,
  createCloudEvent,
  itemsOf,
  parseEvent,
  RightsCommands,
  SubscriptionEventTypes,
  type RightsIssueData,
} from '@rs/contracts';
import { outboxEntry } from '@rs/store';
import { describe, expect, it } from 'vitest';
import { batchedIssues } from '../src/messaging/issue-batches';

const issue = (i: number, rights: number) =>
  outboxEntry(
    'commands',
    createCloudEvent<RightsIssueData>({
      source: '/subscriptions',
      type: CommandTypes.rightsIssue,
      subject: `S${i}`,
      data: {
        subscriptionId: `S${i}`,
        connectId: 'alice',
        grantorId: 'G',
        periodStart: '2026-12-01T00:00:00Z',
        dueAt: '2026-12-01T00:00:00Z',
        rights: Array.from({ length: rights }, (_, templateIndex) => ({
          templateIndex,
          sku: 'news',
          serviceProviderId: null,
          grantorContext: null,
          timeInterval: '2026-12-01T00:00:00Z/2027-01-01T00:00:00Z',
          state: 'ACTIVE' as const,
          quantity: null,
          grace: null,
        })),
      },
    }),
  );
const renewed = (i: number) =>
  outboxEntry(
    'subscriptions.events',
    createCloudEvent({ source: '/subscriptions', type: SubscriptionEventTypes.renewed, subject: `S${i}`, data: {} }),
  );

/** The periods each sent command carries, as the rights service parses it. */
const periodsOf = (entries: ReturnType<typeof batchedIssues>) =>
  entries
    .filter((entry) => entry.event.type === CommandTypes.rightsIssue)
    .map((entry) => itemsOf(parseEvent(RightsCommands, entry.event).data as RightsIssueData));

describe('rights.issue batches (docs/decisions/0020)', () => {
  it('when a renewal issues 1,200 periods of one right, then they travel as 3 commands of at most 500, every period once, events untouched', () => {
    const entries = [...Array.from({ length: 1_200 }, (_, i) => issue(i, 1)), renewed(1), renewed(2)];
    const sent = batchedIssues(entries);
    const periods = periodsOf(sent);
    expect(periods.map((batch) => batch.length)).toEqual([500, 500, 200]);
    expect(periods.flat().map((period) => period.subscriptionId)).toEqual(
      Array.from({ length: 1_200 }, (_, i) => `S${i}`),
    );
    expect(sent.filter((entry) => entry.event.type === SubscriptionEventTypes.renewed)).toEqual([
      entries[1_200],
      entries[1_201],
    ]);
    expect(new Set(sent.map((entry) => entry.event.id)).size).toBe(sent.length);
  });

  it('when periods carry many rights, then no command carries more than 1,000 rights', () => {
    const sent = batchedIssues(Array.from({ length: 25 }, (_, i) => issue(i, 100)));
    expect(periodsOf(sent).map((batch) => batch.reduce((sum, period) => sum + period.rights.length, 0))).toEqual([
      1_000, 1_000, 500,
    ]);
  });

  it('when one period is issued, then it is sent as it is, in the single shape', () => {
    const one = issue(7, 2);
    expect(batchedIssues([one])).toEqual([one]);
  });
});
