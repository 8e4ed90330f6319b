import { ClockEventTypes, Exchanges, type Actor, type ClockEventData, type ClockEventType } from '@rs/contracts';
import { changeMessage, type OutboxEntry } from '@rs/store';
import { representation, type ClockEntity } from '../domain/clock';

export const CLOCK_EVENT_SOURCE = '/scheduler';

/**
 * The one place that turns a change of a test clock into its events on `clocks.events`
 * (docs/decisions/0048): the clock as the API returns it, and its generation. Ids derive from
 * (clock, generation, type): built again, they are the same messages.
 */
export class ClockMessages {
  constructor(private readonly publicBaseUrl: string) {}

  of(clock: ClockEntity, types: readonly ClockEventType[], actor: Actor): OutboxEntry[] {
    const data: ClockEventData = { ...representation(clock, this.publicBaseUrl), sequence: clock.generation };
    return types.map((type) =>
      changeMessage(Exchanges.clocksEvents, {
        source: CLOCK_EVENT_SOURCE,
        type,
        subject: clock.clockId,
        sequence: clock.generation,
        time: clock.updatedAt,
        actor,
        data,
      }),
    );
  }
}

/** What each change of a clock announces. */
export const CLOCK_EVENTS = {
  created: [ClockEventTypes.created],
  /** An advance asked for, and each step of it (the clock's new time). */
  advanced: [ClockEventTypes.advanced],
  /** Everything due up to the advance's target has happened. */
  ready: [ClockEventTypes.ready],
  deleted: [ClockEventTypes.deleted],
} as const satisfies Record<string, readonly ClockEventType[]>;
