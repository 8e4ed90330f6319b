import { createCloudEvent, eventIdOf, type Actor, type CloudEvent, type RightEventData } from '@rs/contracts';
import { representation, type RightEntity } from '../domain/right';

export const EVENT_SOURCE = '/rights';

/**
 * The one place that builds the rights service's events (DESIGN.md 2): the right as the API
 * returns it, plus `connectId` and `sequence` (its generation). An event's id is derived from
 * (right, generation, type), so an event built again (a redelivered command) is the same event.
 * `actor`: who made the change (DESIGN.md 8 "History").
 */
export const rightEvents =
  (publicBaseUrl: string) =>
  (right: RightEntity, types: readonly string[], actor: Actor): CloudEvent[] =>
    types.map((type) =>
      createCloudEvent<RightEventData>({
        id: eventIdOf(right.rightId, right.generation, type),
        source: EVENT_SOURCE,
        type,
        subject: right.rightId,
        time: right.updatedAt,
        actor,
        data: {
          ...representation(right, publicBaseUrl, right.updatedAt),
          connectId: right.userId,
          sequence: right.generation,
        },
      }),
    );

export type RightEventsOf = ReturnType<typeof rightEvents>;
