import {
  DomainError,
  type Entitlement,
  type EntitlementList,
  type Principal,
  type ProjectedRight,
} from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { systemClock, type Clock } from '@rs/time';
import type { ClockTimes } from '@rs/http';
import { EntitlementProjection } from '../domain/entitlements';
import type { UserDirectory } from '../store/user-store';

/** Every right that may entitle now, a page at a time (the rights service's `/internal/entitlements`). */
export type RightsSnapshot = (eachPage: (rights: ProjectedRight[]) => void) => Promise<number>;

export interface EntitlementsOptions {
  snapshot: RightsSnapshot;
  users: UserDirectory;
  logger: Logger;
  clock?: Clock;
  /** The times of test clocks (docs/decisions/0048); without it, a check naming a clock is 404. */
  clocks?: Pick<ClockTimes, 'find'>;
}

/** Why the projection is not following `rights.events`: never did, or since when it stopped. */
type Following = { since: number } | { stoppedAt: number };

/**
 * docs/api.md "Entitlement checks", the gateway's side (docs/decisions/0034): answers checks
 * from the in-memory projection, feeds it from right events and from the answers of the
 * changes this replica forwards, and rebuilds it from the rights service whenever it may
 * have missed events (at start, and after every new broker connection). Events that arrive
 * while a rebuild reads its pages are applied to the projection being served and replayed
 * onto the new one, which then takes its place.
 */
export class Entitlements {
  private projection = new EntitlementProjection();
  private loadedOnce = false;
  /** Events and answers seen while a rebuild runs, to replay onto its result. */
  private replay: ProjectedRight[] | null = null;
  private rebuilding: Promise<void> | null = null;
  private rebuildAgain = false;
  private following: Following;
  /** Counts broker connections lost: a rebuild that began before the last loss does not follow events. */
  private losses = 0;
  /** How long the last event applied took from its change to this replica, in ms. */
  private lastEventDelayMs = 0;
  private readonly clock: Clock;

  constructor(private readonly options: EntitlementsOptions) {
    this.clock = options.clock ?? systemClock;
    this.following = { stoppedAt: this.clock().getTime() };
  }

  /** Whether the projection has been loaded (readiness: docs/api.md). */
  get loaded(): boolean {
    return this.loadedOnce;
  }

  get size(): number {
    return this.projection.size;
  }

  /**
   * How far behind `rights.events` the projection may be, in seconds: the delay of the last
   * event while it follows them; the time since it stopped following while it does not (the
   * broker is cut, or a rebuild has not finished since it came back).
   */
  lagSeconds(): number {
    if ('since' in this.following) return this.lastEventDelayMs / 1000;
    return (this.clock().getTime() - this.following.stoppedAt) / 1000;
  }

  /**
   * docs/api.md: the check; 404 for an unknown user, 503 until the projection is loaded. On
   * real time, unless the caller names a test clock (`clockId`): then on that clock, at its
   * time (docs/api.md "Test clocks"), 404 when there is no such clock.
   */
  async check(
    principal: Principal,
    connectId: string,
    sku: string,
    asked: { amount?: number; clockId?: string } = {},
  ): Promise<Entitlement> {
    const { on, checkedAt } = await this.checkedOn(connectId, asked.clockId);
    return { ...this.projection.check(principal, connectId, sku, on, asked.amount), checkedAt };
  }

  /**
   * docs/api.md "Entitlements of a user": the check of every SKU of which the user holds a
   * right the caller may read (ACTIVE, not ended), each answered as `check` answers it.
   */
  async list(principal: Principal, connectId: string, asked: { clockId?: string } = {}): Promise<EntitlementList> {
    const { on, checkedAt } = await this.checkedOn(connectId, asked.clockId);
    return {
      entitlements: this.projection.checkAll(principal, connectId, on).map((answer) => ({ ...answer, checkedAt })),
    };
  }

  /** Where and when a check of the user is answered: 404 for an unknown user or clock, 503 until loaded. */
  private async checkedOn(connectId: string, clockId: string | undefined) {
    if (!(await this.options.users.find(connectId))) throw DomainError.notFound(`no user ${connectId}`);
    if (!this.loadedOnce) throw DomainError.unavailable('entitlements are loading; try again shortly', 1);
    const clock = clockId === undefined ? null : await this.clockNamed(clockId);
    // Whole seconds, like every date-time of the platform; a right's instants are whole seconds
    // too, so the answer is the same at the instant shown as at the instant checked.
    const now = Math.floor((clock?.time ?? this.clock()).getTime() / 1000) * 1000;
    return {
      on: { clockId: clock?.clockId ?? null, now },
      checkedAt: new Date(now).toISOString().replace('.000Z', 'Z'),
    };
  }

  private async clockNamed(clockId: string) {
    const clock = this.options.clocks && (await this.options.clocks.find(clockId));
    if (!clock) throw DomainError.notFound(`no clock ${clockId}`);
    return clock;
  }

  /** A right event (docs/architecture.md): `time` is when the change was made. */
  applyEvent(right: ProjectedRight, time: Date): void {
    const now = this.clock().getTime();
    this.lastEventDelayMs = Math.max(0, now - time.getTime());
    this.apply(right, now);
  }

  /** What a change this replica forwarded made of a right (its answer's header). */
  applyAnswer(right: ProjectedRight): void {
    this.apply(right, this.clock().getTime());
  }

  /** The broker connection went down: events may be missed from now on. */
  stoppedFollowing(): void {
    this.losses += 1;
    if ('since' in this.following) this.following = { stoppedAt: this.clock().getTime() };
  }

  /**
   * Reads the whole projection again, once its event queue is bound (`following`) or without
   * (at start, with the broker away: better the rights as they are now than none). One at a
   * time: asked again while one runs, it runs once more after it.
   */
  rebuild(following: boolean): Promise<void> {
    if (this.rebuilding) {
      this.rebuildAgain ||= following;
      return this.rebuilding;
    }
    this.rebuilding = this.rebuildOnce(following).finally(() => {
      this.rebuilding = null;
      if (this.rebuildAgain) {
        this.rebuildAgain = false;
        void this.rebuild(true);
      }
    });
    return this.rebuilding;
  }

  /** Lets go of the rights that have ended (memory), and forgets old generations. */
  sweep(): void {
    this.projection.sweep(this.clock().getTime());
  }

  private apply(right: ProjectedRight, now: number): void {
    this.projection.apply(right, now);
    this.replay?.push(right);
  }

  private async rebuildOnce(following: boolean): Promise<void> {
    const started = this.clock().getTime();
    const losses = this.losses;
    const next = this.projection.emptyCopy();
    this.replay = [];
    try {
      const read = await this.options.snapshot((rights) => {
        const now = this.clock().getTime();
        for (const right of rights) next.apply(right, now);
      });
      const now = this.clock().getTime();
      for (const right of this.replay) next.apply(right, now);
      this.projection = next;
      this.loadedOnce = true;
      if (following && losses === this.losses) this.following = { since: started };
      this.options.logger.info(
        { read, held: next.size, replayed: this.replay.length, duration_ms: now - started, following },
        'entitlement projection rebuilt',
      );
    } finally {
      this.replay = null;
    }
  }
}
