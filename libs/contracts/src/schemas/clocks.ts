import { z } from 'zod';
import { PartyId } from './catalog';
import { eventFamily, typesOf } from './cloud-event';

/**
 * Test clocks (docs/decisions/0048): a grantor's own time, moved forward only by advances, on
 * which the scheduler decides when for what lives on it.
 */
export const ClockId = z.string().regex(/^[0-9A-Za-z]{1,64}$/, 'must be 1-64 letters or digits');

const Instant = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with an offset' });

/** Body of `POST /clocks`: the grantor it is for (a client's own; any for an admin), where it starts. */
export const ClockCreateBody = z.strictObject({
  grantorId: PartyId,
  time: Instant,
});
export type ClockCreateBody = z.infer<typeof ClockCreateBody>;

/** Body of `POST /clocks/{clockId}/advance`: forward only. */
export const ClockAdvanceBody = z.strictObject({ to: Instant });
export type ClockAdvanceBody = z.infer<typeof ClockAdvanceBody>;

/** `ready`, or `advancing` until everything due up to the advance's target has happened. */
export const ClockStatus = z.enum(['ready', 'advancing']);
export type ClockStatus = z.infer<typeof ClockStatus>;

/** A clock as the API returns it. */
export const Clock = z.object({
  clockId: ClockId,
  href: z.string(),
  generation: z.string(),
  grantorId: z.string(),
  /** The clock's now. */
  time: z.iso.datetime({ offset: true }),
  /** Where the last advance goes (its `time` once `ready`). */
  advancingTo: z.iso.datetime({ offset: true }),
  status: ClockStatus,
});
export type Clock = z.infer<typeof Clock>;

export const ClockList = z.object({ clocks: z.array(Clock) });

/**
 * Internal (docs/decisions/0050): a creation on a test clock, announced to the scheduler by the
 * service about to make it, so that an advance asked right after it waits for the object.
 */
export const ClockCreation = z.object({
  /** The grantor creating: another grantor's clock is not found. */
  grantorId: z.string().min(1),
  kind: z.enum(['subscription', 'right']),
  id: z.string().min(1).max(128),
  connectId: z.string().min(1),
});
export type ClockCreation = z.infer<typeof ClockCreation>;

/**
 * docs/decisions/0048: every change of a clock, for the services that judge by its time; `data`
 * is the clock as the API returns it, and its generation.
 */
export const ClockEventTypes = typesOf('clock', ['created', 'advanced', 'ready', 'deleted']);
export type ClockEventType = (typeof ClockEventTypes)[keyof typeof ClockEventTypes];
export const ClockEventData = Clock.extend({ sequence: z.number().int().positive() });
export type ClockEventData = z.infer<typeof ClockEventData>;
export const ClockEvents = eventFamily(ClockEventTypes, ClockEventData);
