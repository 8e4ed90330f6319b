import type { EventCollector } from './event-collector';
import { passExpiryMarker } from './markers';
import { PARTIES } from './fixture';
import type { TestSystem } from './system';

/** The user the marker of `passed` is created for (registered by `seed`). */
const MARKER_USER = 'marker';

/** A right as the gateway lists it, with what these tests read of it. */
export interface ListedRight {
  rightId: string;
  state: string;
  timeInterval: string;
  link: Array<{ href: string }>;
}

export interface PeriodicSubscriptionsOptions {
  count: number;
  users: number;
  periodS: number;
  periods: number;
  /** Prefix of the users' ids (`<prefix>-<n>`). */
  userPrefix: string;
  /** Milliseconds from the start of `create` to the first period start, more than creating them takes. */
  leadMs: number;
  /** Creations in flight. */
  creators: number;
}

/** Whose they are: grantor A's, through its client `grantor-a` (`PARTIES.A`), of the SKU `news`. */
const OWNER = { clientId: 'grantor-a', grantorId: 'A', authorization: PARTIES.A, sku: 'news' };

/**
 * Subscriptions on short periods, their starts spread over one period, created through the
 * gateway, for the tests of renewal through faults (docs/api.md): afterwards, every period of
 * every one must have exactly its right.
 */
export class PeriodicSubscriptions {
  /** subscriptionId -> its index. */
  readonly indexOf = new Map<string, number>();
  private firstStart: number | undefined;

  private constructor(
    private readonly system: TestSystem,
    private readonly options: PeriodicSubscriptionsOptions,
  ) {}

  /** The first period start, a whole second: `leadMs` after `create` began. */
  get base(): number {
    if (this.firstStart === undefined) throw new Error('the subscriptions are not created yet');
    return this.firstStart;
  }

  /** Registers what they need (`seed`); `create` plans their periods from when it begins. */
  static async seeded(system: TestSystem, options: PeriodicSubscriptionsOptions): Promise<PeriodicSubscriptions> {
    const load = new PeriodicSubscriptions(system, options);
    await load.seed();
    return load;
  }

  userOf = (i: number): string => `${this.options.userPrefix}-${i % this.options.users}`;
  startOf = (i: number): number => this.base + (i % this.options.periodS) * 1000;
  get users(): string[] {
    return Array.from({ length: this.options.users }, (_, i) => this.userOf(i));
  }

  /** Registers what they need through the gateway: the grantor's client, their users, the SKU. */
  private seed(): Promise<void> {
    const { clientId, grantorId, sku } = OWNER;
    return this.system.seed({
      clients: [{ clientId, grantorId }],
      users: [...this.users, MARKER_USER],
      skus: { [sku]: {} },
    });
  }

  /**
   * Every command sent before now has been handled (`passExpiryMarker`, for a user of its own);
   * resolves the marker right's id, whose events are in `events` too.
   */
  passed(events: EventCollector): Promise<string> {
    const { authorization, grantorId, sku } = OWNER;
    return passExpiryMarker(this.system, { authorization, user: MARKER_USER, grantorId, sku, events });
  }

  /**
   * Creates them all, as a well-behaved client (`TestSystem.json`: a 5xx is sent again under its
   * Idempotency-Key); throws if one is refused or creating took past the first start.
   */
  async create(): Promise<void> {
    const { count, creators, periods, periodS, leadMs } = this.options;
    const { authorization, grantorId, sku } = OWNER;
    this.firstStart = Math.ceil(Date.now() / 1000) * 1000 + leadMs;
    let next = 0;
    await Promise.all(
      Array.from({ length: creators }, async () => {
        while (next < count) {
          const i = next++;
          const { subscriptionId } = await this.system.json<{ subscriptionId: string }>(
            'POST',
            `/id/users/${this.userOf(i)}/subs`,
            authorization,
            { grantorId, timeSpec: `R${periods}/${isoSecond(this.startOf(i))}/PT${periodS}S`, rightsSpec: [{ sku }] },
          );
          this.indexOf.set(subscriptionId, i);
        }
      }),
    );
    if (Date.now() >= this.base) throw new Error('creating the subscriptions took longer than the lead time');
  }

  /** Every right of their users, as the gateway lists them. */
  async listedRights(): Promise<ListedRight[]> {
    const listed: ListedRight[] = [];
    for (const user of this.users) {
      const response = await fetch(`${this.system.gatewayUrl}/id/users/${user}/rights?limit=1000`, {
        headers: { authorization: OWNER.authorization },
      });
      if (response.status !== 200) throw new Error(`list: ${response.status} ${await response.text()}`);
      listed.push(...((await response.json()) as { right: ListedRight[] }).right);
    }
    return listed;
  }

  /** The subscription a right belongs to (its link), and which of its periods it is for. */
  periodOf(right: ListedRight): { subscriptionId: string; period: number } {
    const subscriptionId = subscriptionOf(right);
    const index = subscriptionId === undefined ? undefined : this.indexOf.get(subscriptionId);
    if (index === undefined) throw new Error(`right ${right.rightId} of an unknown subscription`);
    const start = Date.parse(right.timeInterval.split('/')[0]!);
    return { subscriptionId: subscriptionId!, period: (start - this.startOf(index)) / (this.options.periodS * 1000) };
  }

  /** The periods each subscription has a right for, sorted. */
  periodsBySubscription(rights: readonly ListedRight[]): Map<string, number[]> {
    const periods = new Map<string, number[]>();
    for (const right of rights) {
      const { subscriptionId, period } = this.periodOf(right);
      periods.set(subscriptionId, [...(periods.get(subscriptionId) ?? []), period]);
    }
    for (const list of periods.values()) list.sort((a, b) => a - b);
    return periods;
  }

  /**
   * How late each period's rights were issued (a `right.created` event's time after its period
   * began), for a failure to say: a period whose renewal came after its rights had ended has
   * fewer rights than subscriptions (docs/api.md).
   */
  lateness(events: EventCollector): string {
    const byPeriod = new Map<number, { rights: Set<string>; worstS: number }>();
    for (const { body } of events.messages) {
      if (body.type !== 'right.created') continue;
      const right = body.data as unknown as ListedRight;
      const subscriptionId = subscriptionOf(right);
      if (subscriptionId === undefined || !this.indexOf.has(subscriptionId)) continue;
      const { period } = this.periodOf(right);
      const lateS = (Date.parse(body.time as string) - Date.parse(right.timeInterval.split('/')[0]!)) / 1000;
      const seen = byPeriod.get(period) ?? { rights: new Set<string>(), worstS: 0 };
      byPeriod.set(period, { rights: seen.rights.add(right.rightId), worstS: Math.max(seen.worstS, lateS) });
    }
    return [...byPeriod.entries()]
      .sort(([a], [b]) => a - b)
      .map(
        ([period, { rights, worstS }]) =>
          `period ${period}: ${rights.size} rights issued, the latest ${worstS.toFixed(1)} s after it began`,
      )
      .join('; ');
  }

  /**
   * `waitFor` on `events`, failing with how late each period's rights were issued besides
   * what arrived.
   */
  async waitReporting(events: EventCollector, predicate: () => boolean, timeoutMs: number): Promise<void> {
    await events.waitFor(predicate, timeoutMs).catch((error: Error) => {
      throw new Error(`${error.message}\n${this.lateness(events)}`);
    });
  }
}

/** The id of the subscription a right links to, if any. */
const subscriptionOf = (right: ListedRight): string | undefined =>
  right.link.map((link) => /\/subs\/([^/]+)$/.exec(link.href)?.[1]).find(Boolean);

const isoSecond = (ms: number) => new Date(ms).toISOString().replace(/\.000Z$/, 'Z');
