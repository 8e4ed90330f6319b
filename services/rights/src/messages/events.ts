import { Exchanges, RightEventTypes, type Actor, type RightEventData, type RightEventType } from '@rs/contracts';
import { changeMessage, type OutboxEntry } from '@rs/store';
import { heldUnits, representation, type RightEntity } from '../domain/right';

export const EVENT_SOURCE = '/rights';

/** The events that say how many units their change moved. */
const CARRIES_AMOUNT = new Set<RightEventType>([RightEventTypes.consumed, RightEventTypes.adjusted]);

/**
 * The one place that turns a change of a right into its messages (docs/architecture.md, "From
 * a change to its messages"): each event on `rights.events` is the right as the API returns
 * it, plus `connectId` and `sequence` (its generation). An event's id is derived from (right,
 * generation, type), so messages built again (a redelivered command) are the same messages.
 * `actor`: who made the change (its history entry names it). Use cases call it and hand what it
 * returns to the store with the change, or, for a batch command, to `recordAndPublish`.
 */
export class RightMessages {
  constructor(private readonly publicBaseUrl: string) {}

  /**
   * `amount`: the units a consumption took, or an adjustment added, which its `right.consumed`
   * or `right.adjusted` carries.
   */
  of(right: RightEntity, types: readonly RightEventType[], actor: Actor, amount?: number): OutboxEntry[] {
    const data: RightEventData = {
      ...representation(right, this.publicBaseUrl, right.updatedAt),
      connectId: right.userId,
      sequence: right.generation,
      ...(right.quantity === null ? {} : { held: heldUnits(right.holds) }),
    };
    return types.map((type) =>
      changeMessage(Exchanges.rightsEvents, {
        source: EVENT_SOURCE,
        type,
        subject: right.rightId,
        sequence: right.generation,
        time: right.updatedAt,
        actor,
        data: amount !== undefined && CARRIES_AMOUNT.has(type) ? { ...data, amount } : data,
      }),
    );
  }
}
