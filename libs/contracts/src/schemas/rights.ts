import { storableText, TIME_INTERVAL_PATTERN } from './formats';
import { z } from 'zod';
import { eventFamily } from './cloud-event';
import { PartyId, SkuName } from './catalog';
import { ClockId } from './clocks';
import { ConnectId } from './identity';

/** docs/api.md */
export const RightState = z.enum(['CREATED', 'ACTIVE', 'SUSPENDED', 'EXPIRED']);
export type RightState = z.infer<typeof RightState>;

/** docs/api.md "Identifiers": alphanumeric only. */
export const RightId = z.string().regex(/^[0-9A-Za-z]{1,64}$/, 'must be 1-64 letters or digits');

/** docs/api.md */
export const Link = z.object({
  rel: z.string(),
  href: z.string(),
  type: z.string().nullable(),
  idref: z.string().nullable(),
});
export type Link = z.infer<typeof Link>;

export const MAX_PAYLOAD_BYTES = 16 * 1024;

/** A metered right's units (docs/api.md "Metered rights"): an integer from 1 to 10^9. */
export const Quantity = z
  .number({ error: 'must be an integer from 1 to 1000000000' })
  .int('must be an integer from 1 to 1000000000')
  .min(1, 'must be an integer from 1 to 1000000000')
  .max(1_000_000_000, 'must be an integer from 1 to 1000000000');

/**
 * docs/api.md "Grace": how long an ACTIVE right stays usable once its interval has ended, an ISO
 * 8601 duration of days (up to P90D) or of hours, minutes and seconds (`P7D`, `PT12H`, `PT30S`).
 */
export const Grace = z
  .string()
  .regex(
    /^P(?:(?:[1-8]?\d|90)D|T(?=\d)(?:\d{1,2}H)?(?:\d{1,2}M)?(?:\d{1,2}S)?)$/,
    'must be a duration of days up to P90D (P7D) or of hours, minutes and seconds (PT12H)',
  );

/** Body of `POST /id/users/{connectId}/rights` (docs/api.md "Rights"). */
export const RightCreateBody = z.strictObject({
  sku: SkuName,
  grantorId: PartyId,
  // The pattern documents the syntax; libs/time parses it, with a precise reason when it fails.
  timeInterval: z.string().min(3).max(200).meta({ pattern: TIME_INTERVAL_PATTERN }),
  grantorContext: storableText(1024).nullable().optional(),
  state: z.enum(['CREATED', 'ACTIVE', 'SUSPENDED'], { error: 'must be CREATED, ACTIVE or SUSPENDED' }).optional(),
  serviceProviderId: PartyId.nullable().optional(),
  /** Units of use the right grants within its interval; without it, a plain right. */
  quantity: Quantity.optional(),
  grace: Grace.nullable().optional(),
  /** docs/decisions/0048: a clock of the right's grantor, whose time it lives on. */
  clockId: ClockId.optional(),
  // Any JSON: the body was parsed from JSON, so every value here is JSON.
  payload: z
    .unknown()
    .refine((payload) => payload === undefined || Buffer.byteLength(JSON.stringify(payload)) <= MAX_PAYLOAD_BYTES, {
      message: `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON`,
    })
    .optional(),
});
export type RightCreateBody = z.infer<typeof RightCreateBody>;

/** Body of `POST …/rights/{rightId}/usage`, optional: the units a metered right gives (a plain right ignores it). */
export const UsageBody = z.strictObject({ amount: Quantity.optional() });
export type UsageBody = z.infer<typeof UsageBody>;

const ADJUSTMENT = 'must be a non-zero integer from -1000000000 to 1000000000';
/**
 * Body of `POST …/rights/{rightId}/adjustments` (docs/api.md "Adjustments"): units added to a
 * metered right's `remaining` (negative: taken away).
 */
export const AdjustmentBody = z.strictObject({
  amount: z
    .number({ error: ADJUSTMENT })
    .int(ADJUSTMENT)
    .min(-1_000_000_000, ADJUSTMENT)
    .max(1_000_000_000, ADJUSTMENT)
    .refine((amount) => amount !== 0, ADJUSTMENT),
});
export type AdjustmentBody = z.infer<typeof AdjustmentBody>;

/** A right as the API returns it (docs/api.md). */
export const Right = z.object({
  rightId: RightId,
  generation: z.string(),
  href: z.string(),
  state: RightState,
  userId: ConnectId,
  link: z.array(Link),
  grantorId: z.string(),
  grantorContext: z.string().nullable(),
  serviceProviderId: z.string().nullable(),
  timeInterval: z.string(),
  sku: z.string(),
  payload: z.unknown(),
  used: z.boolean(),
  active: z.boolean(),
  /** The units it grants, and those not yet consumed; both null on a plain right. */
  quantity: z.number().int().nullable(),
  remaining: z.number().int().nullable(),
  /** docs/api.md "Grace": how long it stays usable after its interval, whether it is so now, and until when. */
  grace: z.string().nullable(),
  inGrace: z.boolean(),
  graceEnds: z.string().nullable(),
  /** docs/decisions/0048: the test clock it lives on, or null for real time. */
  clockId: z.string().nullable(),
});
export type Right = z.infer<typeof Right>;

export const RightList = z.object({ right: z.array(Right) });

/** `data` of every right event: the right as the API returns it, its user and its generation. */
export const RightEventData = Right.extend({
  connectId: ConnectId,
  sequence: z.number().int().positive(),
  /**
   * `right.consumed`: the units this consumption took (`remaining` is what is left after it);
   * `right.adjusted`: the units added to `remaining` (negative: taken away).
   */
  amount: z.number().int().optional(),
  /**
   * A metered right's units held for reservations and consumptions under way: not consumed,
   * not available to anyone else either (docs/api.md "Reservations"). Absent on a plain right.
   */
  held: z.number().int().min(0).optional(),
});
export type RightEventData = z.infer<typeof RightEventData>;

export const RightEventTypes = {
  created: 'right.created',
  activated: 'right.activated',
  suspended: 'right.suspended',
  expired: 'right.expired',
  used: 'right.used',
  consumed: 'right.consumed',
  adjusted: 'right.adjusted',
  held: 'right.held',
  removed: 'right.removed',
  serviceAnnounce: 'service.announce',
} as const;
export type RightEventType = (typeof RightEventTypes)[keyof typeof RightEventTypes];

export const RightEvents = eventFamily(RightEventTypes, RightEventData);

/** What the scheduler needs of one right to rebuild its expiries (internal, service callers only). */
export const ExpiryEntry = RightEventData.pick({
  rightId: true,
  connectId: true,
  sequence: true,
  state: true,
  timeInterval: true,
  graceEnds: true,
}).extend({
  /** Its test clock (docs/decisions/0048); absent or null: real time. */
  clockId: z.string().nullable().optional(),
});
export type ExpiryEntry = z.infer<typeof ExpiryEntry>;
export const ExpiryPage = z.object({ items: z.array(ExpiryEntry), next: z.string().nullable() });
