import { systemActor, type SubscriptionsRenewData } from '@rs/contracts';
import {
  changeOne,
  eachItem,
  isTransient,
  reasonOf,
  UNCHANGED,
  WriteFailed,
  type ItemFailure,
  type OutboxEntry,
} from '@rs/store';
import { judgedInstant } from '@rs/time';
import { boundsViolation, SHORTEST_PERIOD } from '../domain/bounds';
import { planRenewal, renewedState } from '../domain/renewal';
import { fromSnapshot, timeSpecOf, type SubscriptionEntity } from '../domain/subscription';
import { SubscriptionMessages } from '../messages/events';
import type { RenewalChange, SubscriptionStore } from '../store/subscription-store';
import type { SubscriptionTime } from './time';

/** Rights of one subscription that renewal came too late to issue (docs/api.md "Renewal"). */
export interface MissedRights {
  subscriptionId: string;
  connectId: string;
  grantorId: string;
  rights: number;
}

/** What a renewal command did: the events and commands to publish, the rights it missed, and the items that failed alone. */
export interface RenewalOutcome {
  emitted: OutboxEntry[];
  missed: MissedRights[];
  failed: ItemFailure[];
}

interface PlannedRenewal extends RenewalChange {
  /** Its events and `rights.issue` commands. */
  outbox: OutboxEntry[];
  missedRights: number;
}

/** The outcome of one stored renewal. */
function renewedBy({ current, outbox, missedRights }: PlannedRenewal): Omit<RenewalOutcome, 'failed'> {
  const { subscriptionId, userId: connectId, grantorId } = current;
  return {
    emitted: outbox,
    missed: missedRights > 0 ? [{ subscriptionId, connectId, grantorId, rights: missedRights }] : [],
  };
}

/**
 * Renewal (docs/api.md "Renewal"): what the scheduler commands of the subscriptions, and the
 * listing its rebuild reads.
 */
export class Renewals {
  private readonly messages: SubscriptionMessages;

  constructor(private readonly options: { store: SubscriptionStore; publicBaseUrl: string; time: SubscriptionTime }) {
    this.messages = new SubscriptionMessages(options.publicBaseUrl);
  }

  /** A page of a bucket's live subscriptions, for the scheduler's rebuild. */
  schedulePage(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.options.store.ofBucket(bucket, page);
  }

  /**
   * `subscriptions.renew` from the scheduler, for a batch (docs/architecture.md "Scale"): bring each
   * subscription up to now (issue the rights of every due period, one `rights.issue` per
   * period with deterministic ids downstream; expire it at its end), planned together and
   * stored in one batch of compare-and-sets. A subscription another writer changed meanwhile
   * is renewed again on its own. Returns the events and commands of the renewals, which the
   * caller publishes before it acks the command (docs/decisions/0011); with `replay` (the
   * command was delivered before) also those of each subscription's last renewal, which may
   * not have gone out. And the rights these renewals came too late to issue, each counted
   * once: by the renewal that stored the subscription's move past them. Idempotent: a
   * repeated command changes nothing. `judgedAt` is when the scheduler found them due (its
   * clock may be ahead of ours).
   */
  async renew(items: readonly SubscriptionsRenewData[], judgedAt: Date, replay: boolean): Promise<RenewalOutcome> {
    // A command's subscriptions are all on one test clock, or all on real time (docs/decisions/0048).
    const now = judgedInstant(
      judgedAt,
      () => this.options.time.real(),
      items.some((item) => item.clockId),
    );
    const keys = items.map((item) => ({ userId: item.connectId, id: item.subscriptionId }));
    const earlier = replay ? await this.lastRenewals(keys) : [];
    const found = await this.subscriptionsOf(items);
    // docs/api.md: a subscription whose renewal fails (bad stored data, a bug) fails alone.
    const failed: ItemFailure[] = [];
    const planned = eachItem(found, (subscription) => subscription && this.renewal(subscription, now), failed).filter(
      (one): one is { index: number; value: PlannedRenewal } => one.value !== null,
    );
    const stored = await this.options.store.renewMany(planned.map(({ value }) => value));
    const renewed = await Promise.all(
      planned.map(async ({ index, value: change }, i) => {
        const outcome = stored[i]!;
        if (outcome instanceof WriteFailed) {
          failed.push({ index, error: outcome.error });
          return null;
        }
        if (outcome) return renewedBy(change);
        return this.advance(change.current.userId, change.current.subscriptionId, now).catch((error: unknown) => {
          if (isTransient(error)) throw error;
          failed.push({ index, error });
          return null;
        });
      }),
    );
    await this.setAside(failed.map(({ index, error }) => ({ subscription: found[index]!, error })));
    const done = renewed.filter((one) => one !== null);
    return {
      emitted: [...earlier, ...done.flatMap((one) => one.emitted)],
      missed: done.flatMap((one) => one.missed),
      failed,
    };
  }

  /**
   * The events and commands of each subscription's last renewal, built again from where it
   * started (the same ids and data: docs/decisions/0036).
   * One that cannot be built again (its stored subscription broke since) is left out: its
   * renewal now fails alone as well.
   */
  private async lastRenewals(keys: ReadonlyArray<{ userId: string; id: string }>): Promise<OutboxEntry[]> {
    return (await this.options.store.lastRenewalsOf(keys)).flatMap((last) => {
      if (!last) return [];
      try {
        const planned = this.renewal(last.before, last.at);
        return planned ? planned.outbox : [];
      } catch {
        return [];
      }
    });
  }

  /**
   * The subscriptions to renew: as the scheduler's snapshot describes them where it sent one
   * (nothing read: a stale one loses its claim when stored, and the subscription is then read
   * and renewed on its own; docs/decisions/0026), read where it did not.
   */
  private async subscriptionsOf(items: readonly SubscriptionsRenewData[]): Promise<Array<SubscriptionEntity | null>> {
    const unknown = items.filter((item) => !item.snapshot);
    const read = await this.options.store.findMany(
      unknown.map((item) => ({ userId: item.connectId, id: item.subscriptionId })),
    );
    const readById = new Map(unknown.map((item, i) => [item.subscriptionId, read[i] ?? null]));
    return items.map((item) =>
      item.snapshot
        ? fromSnapshot(item.subscriptionId, item.connectId, item.snapshot)
        : (readById.get(item.subscriptionId) ?? null),
    );
  }

  /**
   * Subscriptions whose renewal failed on their own are set aside at their generation: the
   * scheduler's rebuild leaves them out, so they never join a batch with others again, until
   * a change (or a renewal replayed by an operator) moves them past it (docs/api.md).
   */
  private async setAside(failures: ReadonlyArray<{ subscription: SubscriptionEntity | null; error: unknown }>) {
    for (const { subscription, error } of failures) {
      if (!subscription) continue;
      await this.options.store
        .setAside(subscription.subscriptionId, subscription.generation, reasonOf(error))
        .catch(() => undefined); // the dead-lettered command is what matters; this only spares the rebuild
    }
  }

  /** Brings one subscription up to `now` through the change pipeline, again while other writers win the race. */
  private async advance(userId: string, subscriptionId: string, now: Date): Promise<Omit<RenewalOutcome, 'failed'>> {
    const done = await changeOne<SubscriptionEntity, PlannedRenewal>({
      what: `subscription ${subscriptionId}`,
      load: () => this.options.store.find(userId, subscriptionId),
      decide: (subscription) => {
        const planned = this.renewal(subscription, now);
        return planned ? { kind: 'change', ...planned } : UNCHANGED;
      },
      write: async (_, change) => {
        const [outcome] = await this.options.store.renewMany([change]);
        if (outcome instanceof WriteFailed) throw outcome.error;
        return outcome!;
      },
    });
    return done.outcome === 'changed' ? renewedBy(done.change) : { emitted: [], missed: [] };
  }

  /** What renewing `subscription` at `now` changes, or null when it is up to date. */
  private renewal(subscription: SubscriptionEntity, now: Date): PlannedRenewal | null {
    if (subscription.state === 'EXPIRED') return null;
    // Stored data is held to the bounds again at every renewal (docs/security.md, "Bounds").
    const spec = timeSpecOf(subscription);
    const violation = boundsViolation(spec, subscription.rightsSpec, SHORTEST_PERIOD);
    if (violation) throw new Error(`stored subscription exceeds the bounds: ${violation}`);
    const plan = planRenewal(subscription, spec, now);
    const renewed = renewedState(subscription, spec, plan, now);
    if (!renewed) return null;
    const { next, events } = renewed;
    // The platform renews, as the scheduler commanded (docs/api.md "History").
    const outbox = [
      ...this.messages.of(next, events, null, systemActor('scheduler'), plan.issues),
      ...plan.issues.map((issue) => this.messages.issueOf(subscription, issue, now)),
    ];
    return { current: subscription, next, outbox, missedRights: plan.missed };
  }
}
