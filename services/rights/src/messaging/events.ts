import { createCloudEvent, eventIdOf, type CloudEvent, type RightEventData } from '@rs/contracts';
import { representation, type RightEntity } from '../domain/right';

export const EVENT_SOURCE = '/rights';

/**
 * The one place that builds the rights service's events (DESIGN.md 2): the right as the API
 * returns it, plus `connectId` and `sequence` (its generation). An event's id is derived from
 * (right, generation, type), so an event built again (a redelivered command) is the same event.
 */
export const rightEvents =
  (publicBaseUrl: string) =>
  (right: RightEntity, types: readonly string[]): CloudEvent[] =>
    types.map((type) =>
      createCloudEvent<RightEventData>({
        id: eventIdOf(right.rightId, right.generation, type),
        source: EVENT_SOURCE,
        type,
        subject: right.rightId,
        time: right.updatedAt,
        data: {
          ...representation(right, publicBaseUrl, right.updatedAt),
          connectId: right.userId,
          sequence: right.generation,
        },
      }),
    );
