import { Clock as ClockView, DomainError, type ClockCreation, type Principal } from '@rs/contracts';
import type { InternalTokenSigner } from './internal-token';
import { getResource, servicePrincipal, ServiceUnreachable } from './service-client';

/** A test clock as the services need it (docs/decisions/0048): whose it is, its time now, and whether it is advancing. */
export interface ClockTime {
  clockId: string;
  grantorId: string;
  time: Date;
  advancing: boolean;
}

/**
 * While a clock advances, what lives on it goes through its instants each at its own pace
 * (docs/decisions/0048): a change judged at the clock's time then could meet an object already
 * further on. Changes wait for `ready`, as they do on the platforms that offer test clocks.
 */
const advancingConflict = (clockId: string) =>
  DomainError.conflict(`clock ${clockId} is advancing: what lives on it can change once it is ready`);

/** Something that may live on a test clock: null or absent, real time. */
export interface OnClock {
  clockId?: string | null;
}

export interface ClockTimesOptions {
  /** The scheduler's base URL, without a trailing slash: it owns the clocks. */
  schedulerUrl: string;
  signer: InternalTokenSigner;
  /** The asking service's name, for its internal token. */
  service: string;
  requestTimeoutMs?: number;
}

/**
 * The time of the test clocks things live on, asked of the scheduler when needed (docs/decisions/0048).
 * Nothing is cached: the answer after an advance's `ready` must be the new time, and only what
 * lives on a clock (rehearsals) pays the request; what lives on real time asks nothing.
 */
export class ClockTimes {
  private readonly principal;

  constructor(private readonly options: ClockTimesOptions) {
    this.principal = servicePrincipal(options.service);
  }

  /** The clock now, or null when there is none (never was, or deleted). The scheduler unreachable: 503. */
  find(clockId: string): Promise<ClockTime | null> {
    return this.ask(`/internal/clocks/${encodeURIComponent(clockId)}`);
  }

  /**
   * The clock a creation for `creation.grantorId` names (404 unless that grantor's), announced
   * to the scheduler: while the clock is ready, the object is expected on it, so that an advance
   * asked right after the creation waits for it (docs/decisions/0050).
   */
  async forCreation(clockId: string, creation: ClockCreation): Promise<ClockTime> {
    const clock = await this.ask(`/internal/clocks/${encodeURIComponent(clockId)}/creations`, creation);
    if (!clock) throw DomainError.notFound(`no clock ${clockId}`);
    return clock;
  }

  private async ask(path: string, body?: ClockCreation): Promise<ClockTime | null> {
    const url = new URL(`${this.options.schedulerUrl}${path}`);
    const { signer, requestTimeoutMs } = this.options;
    const read = { signer, caller: this.principal, service: 'scheduler', schema: ClockView, body };
    try {
      const clock = await getResource(url, { ...read, ...(requestTimeoutMs ? { timeoutMs: requestTimeoutMs } : {}) });
      return (
        clock && {
          clockId: clock.clockId,
          grantorId: clock.grantorId,
          time: new Date(clock.time),
          advancing: clock.status === 'advancing',
        }
      );
    } catch (error) {
      if (error instanceof ServiceUnreachable) throw DomainError.unavailable('the test clocks cannot be read now', 5);
      throw error;
    }
  }

  /**
   * `nowFor` these entities: each one's clock's time (every clock asked once), or `now()` for
   * what lives on real time. What is on a deleted clock, and being removed, reads as real time.
   * `forChange`: 409 when one of the clocks is advancing.
   */
  async nowFor(entities: Iterable<OnClock>, now: () => Date, forChange = false): Promise<(entity: OnClock) => Date> {
    const ids = new Set<string>();
    for (const entity of entities) if (entity.clockId) ids.add(entity.clockId);
    const times = new Map<string, Date>();
    await Promise.all(
      [...ids].map(async (id) => {
        const clock = await this.find(id);
        if (clock && forChange && clock.advancing) throw advancingConflict(id);
        if (clock) times.set(id, clock.time);
      }),
    );
    const real = now();
    return (entity) => (entity.clockId ? (times.get(entity.clockId) ?? real) : real);
  }
}

/** What a use case asks of the test clocks (ClockTimes answers it). */
export type ClockLookup = Pick<ClockTimes, 'find' | 'forCreation' | 'nowFor'>;

/**
 * "Now" for what lives on a test clock or not (docs/decisions/0048): every use case asks it of
 * the entities it judges, never its own clock, so that nothing on a clock is judged by real time.
 */
export class NowFor {
  constructor(
    private readonly clock: () => Date,
    /** Without it, everything lives on real time (and a creation naming a clock is 404). */
    private readonly clocks?: ClockLookup,
  ) {}

  /**
   * Real time: what lives on no clock (a function of its own, to be handed on as a clock).
   * @public (a time port of the services' use cases, answered structurally)
   */
  readonly real = (): Date => this.clock();

  /** Each entity's now: its clock's time, or real time. */
  async of(entities: Iterable<OnClock>): Promise<(entity: OnClock) => Date> {
    if (!this.clocks) return () => this.clock();
    return this.clocks.nowFor(entities, this.clock);
  }

  /** @public (a time port of the services' use cases, answered structurally) */
  async one(entity: OnClock): Promise<Date> {
    return (await this.of([entity]))(entity);
  }

  /**
   * The time of the test clock a caller names to read on it (docs/api.md "Test clocks": a
   * rehearsal counts only where its clock is named); 404 when there is no such clock.
   * @public (a time port of the services' use cases, answered structurally)
   */
  async ofNamedClock(clockId: string): Promise<Date> {
    const clock = this.clocks && (await this.clocks.find(clockId));
    if (!clock) throw DomainError.notFound(`no clock ${clockId}`);
    return clock.time;
  }

  /** `of`, for a change a caller asks of these entities: 409 while a clock of theirs is advancing. */
  async forChangeOf(entities: Iterable<OnClock>): Promise<(entity: OnClock) => Date> {
    if (!this.clocks) return () => this.clock();
    return this.clocks.nowFor(entities, this.clock, true);
  }

  /**
   * `one`, for a change a caller asks: 409 while the entity's clock is advancing.
   * @public (a time port of the services' use cases, answered structurally)
   */
  async forChange(entity: OnClock): Promise<Date> {
    return (await this.forChangeOf([entity]))(entity);
  }

  /**
   * The time of the clock a creation names (404 unless it is the creating grantor's; 409 while
   * it is advancing), or real time. The scheduler is told of the creation on the clock before it
   * is made (docs/decisions/0050).
   * @public (a time port of the services' use cases, answered structurally)
   */
  async forCreation(
    { clockId, grantorId }: { clockId?: string | undefined; grantorId: string },
    object: Omit<ClockCreation, 'grantorId'>,
  ): Promise<Date> {
    if (clockId === undefined) return this.clock();
    if (!this.clocks) throw DomainError.notFound(`no clock ${clockId}`);
    const clock = await this.clocks.forCreation(clockId, { grantorId, ...object });
    if (clock.advancing) throw advancingConflict(clockId);
    return clock.time;
  }
}

/**
 * The platform removing what lived on a deleted test clock (docs/decisions/0048): as an admin
 * would, recorded as the scheduler's doing.
 */
export const CLOCK_DELETION: Principal = { ...servicePrincipal('scheduler'), admin: true };

/**
 * Removals of a deleted clock's objects under way at once in one service: a thousand objects go
 * within a minute (each removal a few writes), without taking the database from real time's work.
 */
export const CLOCK_REMOVALS_AT_ONCE = 8;
