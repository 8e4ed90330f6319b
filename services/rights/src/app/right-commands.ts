import pLimit from 'p-limit';
import { periodRightId } from '@rs/hashing';
import {
  actorOf,
  InvalidMessage,
  grantOf,
  RightEventTypes,
  systemActor,
  type RightsCascadeData,
  type RightsIssueData,
} from '@rs/contracts';
import { CLOCK_DELETION, CLOCK_REMOVALS_AT_ONCE } from '@rs/http';
import type { SkuLookup } from '@rs/catalog-client';
import { eachItem, reasonOf, UNCHANGED, type ItemFailure, type OutboxEntry } from '@rs/store';
import { judgedInstant, parseTimeInterval } from '@rs/time';
import {
  asOf,
  decide,
  endAt,
  hasEnded,
  newRight,
  removal,
  supersededBeforeIssue,
  type Decision,
  type ReadExpiry,
  type RightEntity,
} from '../domain/right';
import { UnreadableRight } from '../store/right-store';
import { RightChanges, type RightChangesOptions } from './right-changes';

/**
 * The right a template yields for a period (docs/api.md "Renewal"), with the provider its
 * grant gets as the catalog stands now; throws when its interval does not parse.
 */
function issuedRight(
  command: RightsIssueData,
  template: RightsIssueData['rights'][number],
  serviceProviderId: string | null,
  now: Date,
): RightEntity {
  const interval = parseTimeInterval(template.timeInterval);
  if (!interval.ok) throw new InvalidMessage(`rights[${template.templateIndex}].timeInterval: ${interval.reason}`);
  return newRight(
    {
      rightId: periodRightId(command.subscriptionId, command.periodStart, template.templateIndex, command.plan ?? 0),
      userId: command.connectId,
      state: template.state,
      grantorId: command.grantorId,
      grantorContext: template.grantorContext,
      serviceProviderId,
      sku: template.sku,
      payload: null,
      quantity: template.quantity,
      grace: template.grace,
      subscriptionId: command.subscriptionId,
      clockId: command.clockId ?? null,
      interval: interval.value,
    },
    now,
  );
}

/** A template of a period that issued no right: its grantor may no longer grant its SKU. */
export interface Withheld {
  command: RightsIssueData;
  templateIndex: number;
  reason: string;
}

/** What the rights commands work with. */
export interface RightCommandsOptions extends RightChangesOptions {
  skus: SkuLookup;
}

/**
 * What the other services ask of the rights (docs/architecture.md): issue, expiry and cascades
 * from the subscriptions service and the scheduler, the removal of what lived on a deleted test
 * clock, and the internal listings that rebuild the scheduler's expiries and the gateway's
 * projection. Batches where a batch is the command; each change of one right through the one
 * compare-and-set of a right (`RightChanges`).
 */
export class RightCommands {
  private readonly changes: RightChanges;

  constructor(private readonly options: RightCommandsOptions) {
    this.changes = new RightChanges(options);
  }

  /** A page of a bucket's rights as stored while they may expire, for the scheduler's rebuild. */
  expirable(bucket: number, page: { after: string | undefined; limit: number }) {
    return this.options.store.expirable(bucket, page);
  }

  /**
   * A page of a bucket's rights that may entitle now (stored ACTIVE, their interval not ended),
   * for the gateway's projection (docs/entitlements.md); `lastId` as the store read it.
   */
  async entitled(bucket: number, page: { after: string | undefined; limit: number }) {
    const read = await this.options.store.storedActive(bucket, page);
    const now = await this.options.time.of(read.items);
    return { items: read.items.filter((right) => !hasEnded(right, now(right))), lastId: read.lastId };
  }

  /**
   * A deleted test clock takes what lives on it along (docs/decisions/0048): each of its rights
   * is removed as an admin would remove it (`right.removed`). Idempotent; returns how many.
   */
  async removeClock(clockId: string): Promise<number> {
    const onClock = await this.options.store.onClock(clockId);
    await pLimit(CLOCK_REMOVALS_AT_ONCE).map(onClock, (target) =>
      this.changes.change(target, {
        actor: actorOf(CLOCK_DELETION),
        decide: async (right) => removal(right, await this.options.time.one(right)),
      }),
    );
    return onClock.length;
  }

  /**
   * `rights.expire` from the scheduler, for a batch: every right of the batch whose interval
   * has ended by `judgedAt` (when the scheduler found it due; our clock may be behind) or by
   * now is EXPIRED: that follows from its interval (`asOf`, docs/decisions/0027), and nothing
   * is written here. Returns those rights, whose `right.expired` the caller publishes before
   * it acks the command (docs/decisions/0011; an event built again has the same id), and
   * those of them whose expiry is not stored yet, which the caller has written after. A right
   * not yet ended is left alone; idempotent.
   */
  async expireMany(
    items: ReadonlyArray<{ connectId: string; rightId: string; end?: string; clockId?: string }>,
    judgedAt: Date,
  ): Promise<{ expired: RightEntity[]; unwritten: RightEntity[]; failed: ItemFailure[]; outbox: OutboxEntry[] }> {
    // A command's rights are all on one test clock, or all on real time (docs/decisions/0048).
    const now = judgedInstant(
      judgedAt,
      () => this.options.time.real(),
      items.some((item) => item.clockId),
    );
    const found = await this.options.store.storedMany(
      items.map((item) => ({
        userId: item.connectId,
        id: item.rightId,
        ...(item.end ? { end: new Date(item.end) } : {}),
      })),
    );
    // docs/api.md: a right whose expiry fails (bad stored data, a bug) fails alone.
    const failed: ItemFailure[] = [];
    const read = eachItem(
      found,
      (stored) => {
        if (stored instanceof UnreadableRight) throw stored;
        const right = stored && asOf(stored, now);
        return right?.state === 'EXPIRED' ? { right, unwritten: stored!.state !== 'EXPIRED' } : null;
      },
      failed,
    ).flatMap(({ value }) => (value ? [value] : []));
    for (const { index, error } of failed) {
      const right = found[index];
      if (right)
        await this.options.store.setAside(right.rightId, right.generation, reasonOf(error)).catch(() => undefined);
    }
    const expired = read.map(({ right }) => right);
    return {
      expired,
      unwritten: read.filter(({ unwritten }) => unwritten).map(({ right }) => right),
      failed,
      outbox: expired.flatMap((right) =>
        this.options.messages.of(right, [RightEventTypes.expired], systemActor('scheduler')),
      ),
    };
  }

  /** Stores expiries that reads show already (see `expireMany`); for each, whether it was stored. */
  writeExpiries(expired: readonly ReadExpiry[]) {
    return this.options.store.writeExpiries(expired);
  }

  /**
   * `rights.issue`, for a batch of periods (docs/api.md "Renewal"): every right of every
   * period in few `insertMany` calls. Each right's id is derived from (subscription, period
   * start, template), so a repeated or half-done batch creates nothing twice. Returns every
   * right of the batch, new or found, and their `right.created`, which the caller publishes
   * before it acks the commands (docs/decisions/0011).
   */
  async issueForPeriods(
    commands: readonly RightsIssueData[],
  ): Promise<{ issued: RightEntity[]; failed: ItemFailure[]; withheld: Withheld[]; outbox: OutboxEntry[] }> {
    // A right on a test clock is issued as of its period's due instant on that clock (docs/decisions/0048).
    const real = this.options.time.real();
    const nowOf = (command: RightsIssueData) => (command.clockId ? new Date(command.dueAt) : real);
    // The catalog as it stands at this renewal decides who may grant what: a template whose
    // grantor may no longer grant its SKU issues no right this period, and only it.
    const withheld: Withheld[] = [];
    const grants = await Promise.all(
      commands.map((command) =>
        Promise.all(
          command.rights.map(async (template) => {
            const entry = await this.options.skus.find(template.sku);
            const grant = entry
              ? grantOf(entry, command.grantorId, template.serviceProviderId)
              : {
                  ok: false as const,
                  refusal: { kind: 'grantor' as const, reason: `${template.sku} is not in the catalog` },
                };
            if (grant.ok) return { template, serviceProviderId: grant.serviceProviderId };
            withheld.push({ command, templateIndex: template.templateIndex, reason: grant.refusal.reason });
            return null;
          }),
        ),
      ),
    );
    // docs/api.md: a period whose rights cannot be made fails alone.
    const failed: ItemFailure[] = [];
    const periods = eachItem(
      commands,
      (command, index) =>
        grants[index]!.flatMap((granted) =>
          granted ? [issuedRight(command, granted.template, granted.serviceProviderId, nowOf(command))] : [],
        ),
      failed,
    );
    const made = periods.flatMap(({ value }) => value);
    const taken = await this.options.store.insertManyWithoutEvents(made);
    // Some existed: a command again (its events go out again, as the first time), or rights a
    // later plan change or their grantor removed meanwhile, which nothing brings back
    // (docs/decisions/0052). Only those are read: a renewal's rights are all new.
    const gone = await this.options.store.tombstonesAmong([...taken]);
    const rights = made.filter((right) => !gone.has(right.rightId));
    const outbox = rights.flatMap((right) =>
      this.options.messages.of(right, [RightEventTypes.created], systemActor('subscriptions')),
    );
    return { issued: rights, failed, withheld, outbox };
  }

  /**
   * `rights.cascade` (docs/api.md "Suspend / activate"): suspend every ACTIVE right of the
   * subscription, or reactivate every SUSPENDED one whose interval has not ended; or end the
   * rights a plan change replaced, at its instant (docs/api.md "Plan changes"). Idempotent: a
   * right already changed is left as it is.
   */
  async cascade(command: RightsCascadeData): Promise<void> {
    const { connectId, subscriptionId } = command;
    // An end names its rights: read by id, what it reads is what it changes (docs/api.md
    // "Reads cost what they return"), however many periods the subscription has had.
    const rightIds =
      command.action === 'end'
        ? command.rightIds
        : (await this.options.store.ofSubscription(connectId, subscriptionId)).map((right) => right.rightId);
    const decideFor = (current: RightEntity, now: Date): Decision => {
      if (current.subscriptionId !== subscriptionId) return UNCHANGED;
      if (command.action === 'end') return endAt(current, { instant: new Date(command.at), text: command.at }, now);
      if (command.action === 'activate' && (current.state !== 'SUSPENDED' || hasEnded(current, now))) return UNCHANGED;
      if (command.action === 'suspend' && current.state !== 'ACTIVE') return UNCHANGED;
      return orUnchanged(decide(current, command.action, now));
    };
    for (const rightId of rightIds) {
      const done = await this.changes.change(
        { userId: connectId, rightId },
        {
          actor: systemActor('subscriptions'),
          decide: async (current) => decideFor(current, await this.options.time.one(current)),
        },
      );
      // docs/api.md "Plan changes": a later change supersedes an earlier one whose rights are
      // still on their way. Ended before it is issued, a right's id is kept so that its issue
      // creates nothing (docs/decisions/0052); issued meanwhile, it is ended as it is.
      if (done.outcome === 'missing' && command.action === 'end') {
        const at = new Date(command.at);
        const superseded = supersededBeforeIssue(
          { rightId, userId: connectId, subscriptionId },
          at,
          this.options.time.real(),
        );
        if (await this.options.store.supersede(superseded)) continue;
        // Its id exists: a tombstone (this end again, or a removal), or the right, issued meanwhile.
        if (!(await this.options.store.tombstonesAmong([rightId])).has(rightId))
          await this.cascade({ ...command, rightIds: [rightId] });
      }
    }
  }
}

/** Commands change only what they may: a transition that does not apply leaves the right as it is. */
const orUnchanged = (decision: Decision): Decision => (decision.kind === 'conflict' ? UNCHANGED : decision);
