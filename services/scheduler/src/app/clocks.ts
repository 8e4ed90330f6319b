import {
  actorOf,
  DomainError,
  newId,
  type ClockAdvanceBody,
  type ClockCreateBody,
  type ClockCreation,
  type Principal,
} from '@rs/contracts';
import { changeOne, UNCHANGED } from '@rs/store';
import { instantAfter, isRepresentable, LATEST_INSTANT, parseDateTime, RANGE_REASON, type Clock } from '@rs/time';
import { advance, beyondLatest, canCreateClockFor, canUseClock, type ClockEntity } from '../domain/clock';
import { CLOCK_EVENTS, type ClockMessages } from '../messages/clock-events';
import type { ClockStore } from '../store/clock-store';

/** An instant of the API in whole seconds, within the years every date-time of the platform is (docs/api.md "Time"). */
function instantOf(field: string, text: string): Date {
  const parsed = parseDateTime(text);
  if (!parsed.ok) throw DomainError.invalid(`${field}: ${parsed.reason}`);
  const instant = parsed.value.startOf('second');
  if (!isRepresentable(instant)) throw DomainError.invalid(`${field}: ${RANGE_REASON}`);
  return instant.toJSDate();
}

/**
 * Test clocks (docs/decisions/0048): a client works with its own grantor's clocks, an admin
 * with any; another grantor's clock does not exist for it (404). At most `maxPerGrantor` per
 * grantor (TEST_CLOCKS_MAX; 0 turns test clocks off), `maxObjects` created on each
 * (TEST_CLOCK_MAX_OBJECTS), and no clock's time beyond `maxAdvance` past real time
 * (TEST_CLOCK_MAX_ADVANCE): a rehearsal's work is bounded (docs/api.md "Test clocks").
 */
export class ClockUseCases {
  constructor(
    private readonly store: ClockStore,
    private readonly messages: ClockMessages,
    private readonly options: {
      maxPerGrantor: number;
      maxObjects: number;
      /** An ISO 8601 duration above zero. */
      maxAdvance: string;
      clock: Clock;
      forget?: (clockId: string) => Promise<void>;
      /** Keeps the object a creation announces as expected on the clock (see `expectCreation`). */
      expect?: (clock: ClockEntity, creation: ClockCreation) => Promise<void>;
    },
  ) {}

  async create(principal: Principal, body: ClockCreateBody): Promise<ClockEntity> {
    if (this.options.maxPerGrantor === 0) throw DomainError.conflict('test clocks are turned off (TEST_CLOCKS_MAX=0)');
    if (!canCreateClockFor(principal, body.grantorId))
      throw DomainError.notPermitted('you may create clocks only for your own grantor');
    const owner = { grantorId: body.grantorId };
    const time = instantOf('time', body.time);
    const latest = this.latest();
    if (time > latest) throw DomainError.invalid(`time: ${beyondLatest(latest)}`);
    // Two creates at once may both pass the count: one over the limit, never more.
    if ((await this.store.countOfGrantor(owner.grantorId)) >= this.options.maxPerGrantor)
      throw DomainError.conflict(
        `grantor ${owner.grantorId} has ${this.options.maxPerGrantor} test clocks, the most it may`,
      );
    const now = this.options.clock();
    const clock: ClockEntity = {
      clockId: newId(now.getTime()),
      grantorId: owner.grantorId,
      time,
      advancingTo: time,
      status: 'ready',
      generation: 1,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.insert(clock, this.messages.of(clock, CLOCK_EVENTS.created, actorOf(principal)));
    return clock;
  }

  list(principal: Principal): Promise<ClockEntity[]> {
    if (!principal.admin && principal.grantorId === null) return Promise.resolve([]);
    return this.store.list(principal.admin ? null : principal.grantorId);
  }

  async get(principal: Principal, clockId: string): Promise<ClockEntity> {
    const clock = await this.store.find(clockId);
    if (!clock || !canUseClock(principal, clock)) throw DomainError.notFound(`no clock ${clockId}`);
    return clock;
  }

  /**
   * A creation on a clock, announced by the service about to make it (docs/decisions/0050): the
   * clock as it is now (404 unless the creating grantor's). While the clock is ready the object
   * is expected on it, as a right a renewal issued is: an advance asked right after the creation
   * waits until the object's own event is recorded (or `ADVANCE_PATIENCE.expectForMs`, if the
   * creation failed), instead of passing it by before its event arrives.
   */
  async expectCreation(clockId: string, creation: ClockCreation): Promise<ClockEntity> {
    const clock = await this.store.find(clockId);
    if (!clock || clock.grantorId !== creation.grantorId) throw DomainError.notFound(`no clock ${clockId}`);
    // While advancing, the service refuses the creation (409): it takes no place.
    if (clock.status !== 'ready') return clock;
    const { maxObjects } = this.options;
    if (!(await this.store.takePlace(clockId, creation.id, maxObjects, this.options.clock())))
      throw DomainError.conflict(
        `clock ${clockId} holds ${maxObjects} subscriptions and rights, the most one may (TEST_CLOCK_MAX_OBJECTS)`,
      );
    await this.options.expect?.(clock, creation);
    return clock;
  }

  /** A clock as it is now, for the platform's services (whoever's it is); unknown or deleted, 404. */
  async current(clockId: string): Promise<ClockEntity> {
    const clock = await this.store.find(clockId);
    if (!clock) throw DomainError.notFound(`no clock ${clockId}`);
    return clock;
  }

  async advance(principal: Principal, clockId: string, body: ClockAdvanceBody): Promise<ClockEntity> {
    const to = instantOf('to', body.to);
    const done = await changeOne<ClockEntity, { next: ClockEntity }>({
      what: `clock ${clockId}`,
      load: () => this.store.find(clockId),
      authorize: (clock) => {
        if (!canUseClock(principal, clock)) throw DomainError.notFound(`no clock ${clockId}`);
      },
      decide: (clock) => {
        const decision = advance(clock, to, this.options.clock(), this.latest());
        if (decision.kind === 'invalid') throw DomainError.invalid(`to: ${decision.reason}`);
        return decision.kind === 'unchanged' ? UNCHANGED : decision;
      },
      write: (current, { next }) =>
        this.store.update({ current, next, outbox: this.messages.of(next, CLOCK_EVENTS.advanced, actorOf(principal)) }),
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no clock ${clockId}`);
    return done.outcome === 'changed' ? done.change.next : done.current;
  }

  /** The furthest a clock's time may be now: TEST_CLOCK_MAX_ADVANCE past real time. */
  private latest(): Date {
    return instantAfter(this.options.clock(), this.options.maxAdvance) ?? new Date(LATEST_INSTANT);
  }

  /** An unknown clock is 404, as another grantor's is: which clocks exist is nobody else's to learn. */
  async remove(principal: Principal, clockId: string): Promise<void> {
    const done = await changeOne({
      what: `clock ${clockId}`,
      load: () => this.store.find(clockId),
      authorize: (clock) => {
        if (!canUseClock(principal, clock)) throw DomainError.notFound(`no clock ${clockId}`);
      },
      decide: (clock) => ({
        kind: 'change' as const,
        next: { ...clock, generation: clock.generation + 1, updatedAt: this.options.clock() },
      }),
      write: (current, { next }) =>
        this.store.update({
          current,
          next,
          outbox: this.messages.of(next, CLOCK_EVENTS.deleted, actorOf(principal)),
          removes: true,
        }),
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no clock ${clockId}`);
    await this.store.forgetPlaces(clockId);
    await this.options.forget?.(clockId);
  }
}
