import {
  CommandTypes,
  createCloudEvent,
  MAX_BATCH_ITEMS,
  MAX_ISSUE_BATCH_RIGHTS,
  type RightsIssueBatch,
  type RightsIssueData,
} from '@rs/contracts';
import { type OutboxEntry } from '@rs/store';
import { weighedChunks } from '@rs/batching';
import { EVENT_SOURCE as SOURCE } from '../messages/events';

/**
 * The `rights.issue` commands of one renewal command's subscriptions, one a period as renewal
 * plans and keeps them, sent as few batch commands (docs/decisions/0020): a bulk renewal
 * publishes, and the rights service receives, one message per 500 periods (or 1,000 rights)
 * instead of one per period. Events and other commands pass as they are. Each period keeps
 * its deterministic right ids, so a period sent again in another batch (a redelivered renewal
 * publishes its last commands again) creates nothing twice.
 */
export function batchedIssues(entries: readonly OutboxEntry[]): OutboxEntry[] {
  const others = entries.filter((entry) => entry.event.type !== CommandTypes.rightsIssue);
  const issues = entries.filter((entry) => entry.event.type === CommandTypes.rightsIssue);
  const batches = weighedChunks(issues, {
    maxItems: MAX_BATCH_ITEMS,
    maxWeight: MAX_ISSUE_BATCH_RIGHTS,
    weightOf: (entry) => (entry.event.data as RightsIssueData).rights.length,
  });
  return [...others, ...batches.map(asOneCommand)];
}

function asOneCommand(entries: OutboxEntry[]): OutboxEntry {
  if (entries.length === 1) return entries[0]!;
  const first = entries[0]!;
  const event = createCloudEvent<RightsIssueBatch>({
    source: SOURCE,
    type: CommandTypes.rightsIssue,
    subject: first.event.subject,
    data: { items: entries.map((entry) => entry.event.data as RightsIssueData) },
    time: new Date(first.event.time),
  });
  return { ...first, id: event.id, event };
}
