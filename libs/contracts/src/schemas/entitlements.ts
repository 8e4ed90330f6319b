import { z } from 'zod';
import { SkuName } from './catalog';
import { ClockId } from './clocks';
import { ConnectId } from './identity';
import { Quantity, RightEventData, RightId } from './rights';

/** `?amount=n` of a check: whether n units could be consumed now (an integer from 1 to 10^9). */
export const AmountParam = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be an integer from 1 to 1000000000')
  .transform(Number)
  .pipe(z.number().max(1_000_000_000, 'must be an integer from 1 to 1000000000'));

/** One right behind an entitlement (docs/api.md "Entitlement checks"). */
export const EntitlementRight = z.object({
  rightId: RightId,
  grantorId: z.string(),
  serviceProviderId: z.string().nullable(),
  /** The end of its interval. */
  until: z.string(),
  used: z.boolean(),
  /** A metered right's units, and those left (both null on a plain right). */
  quantity: z.number().int().nullable(),
  remaining: z.number().int().nullable(),
  /** Its interval has ended and its grace has not (docs/api.md "Grace"): `until` is the grace's end. */
  inGrace: z.boolean(),
});

/**
 * `GET /id/users/{connectId}/entitlements/{sku}` (docs/api.md "Entitlement checks"): the
 * caller-visible rights of the user and SKU that are ACTIVE and whose interval contains
 * `checkedAt`; `entitled` when there is one, `until` the latest end among them.
 */
export const Entitlement = z.object({
  connectId: ConnectId,
  sku: SkuName,
  /** The test clock the check was asked on (`?clockId=`), at its time; null on real time (docs/api.md "Test clocks"). */
  clockId: ClockId.nullable(),
  entitled: z.boolean(),
  until: z.string().nullable(),
  /** The units left over the listed metered rights; null when none of them is metered. */
  balance: z.number().int().nullable(),
  rights: z.array(EntitlementRight),
  checkedAt: z.string(),
});
export type Entitlement = z.infer<typeof Entitlement>;

/**
 * `GET /id/users/{connectId}/entitlements` (docs/api.md "Entitlements of a user"): the check of
 * every SKU of which the user holds a right the caller may read (ACTIVE, its interval or grace
 * not ended), in SKU order.
 */
export const EntitlementList = z.object({ entitlements: z.array(Entitlement) });
export type EntitlementList = z.infer<typeof EntitlementList>;

/**
 * What the gateway's entitlement projection knows of a right (internal, docs/decisions/0034):
 * a right event's `data` narrowed to what a check reads, `removed` once it is removed. The
 * rights service hands it out in pages (`/internal/entitlements`) and with every change it
 * answers (`PROJECTED_RIGHT_HEADER`).
 */
export const ProjectedRight = RightEventData.pick({
  rightId: true,
  connectId: true,
  sequence: true,
  state: true,
  timeInterval: true,
  grantorId: true,
  serviceProviderId: true,
  sku: true,
  used: true,
  quantity: true,
  remaining: true,
  graceEnds: true,
}).extend({
  /** Its test clock (docs/decisions/0048); absent or null: real time. */
  clockId: z.string().nullable().optional(),
  removed: z.boolean(),
});
export type ProjectedRight = z.infer<typeof ProjectedRight>;
export const ProjectedRightPage = z.object({ items: z.array(ProjectedRight), next: z.string().nullable() });

/**
 * The response header with which the rights service tells the gateway what a change it
 * answered made of the rights it touched (base64url of each `ProjectedRight`, comma-separated:
 * a consumption by SKU may touch several); the gateway never passes it on.
 */
export const PROJECTED_RIGHT_HEADER = 'x-rs-projected-right';

export function encodeProjectedRights(rights: readonly ProjectedRight[]): string {
  return rights.map((right) => Buffer.from(JSON.stringify(right)).toString('base64url')).join(',');
}

/** The header's rights; none when it is absent, and any part that is not one is left out. */
export function decodeProjectedRights(header: string | undefined): ProjectedRight[] {
  if (header === undefined) return [];
  return header.split(',').flatMap((part) => {
    try {
      const parsed = ProjectedRight.safeParse(JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
      return parsed.success ? [parsed.data] : [];
    } catch {
      return [];
    }
  });
}

/** docs/api.md "Reservations": a reservation's id (alphanumeric, as a right's). */
export const ReservationId = RightId;

/** Body of `POST …/entitlements/{sku}/consumption` (docs/api.md "Consumption by SKU"): the units to consume, default 1. */
/**
 * Where a consumption or reservation by SKU takes its units: the rights on real time, or with
 * `clockId` those living on that test clock alone (docs/api.md "Test clocks").
 */
const OnClock = { clockId: ClockId.optional() };

export const ConsumptionBody = z.strictObject({ amount: Quantity.optional(), ...OnClock });
export type ConsumptionBody = z.infer<typeof ConsumptionBody>;

/** The longest a reservation holds units without being settled. */
export const MAX_RESERVATION_TTL = 'PT24H';
export const DEFAULT_RESERVATION_TTL = 'PT5M';

/**
 * A reservation's `ttl`: an ISO 8601 duration in hours, minutes and seconds, above zero and at
 * most PT24H (`PT30S`, `PT5M`, `PT1H30M`).
 */
export const ReservationTtl = z
  .string()
  .regex(
    /^PT(?=[^1-9]*[1-9])(?:24H|(?:(?:[01]?\d|2[0-3])H)?(?:[0-5]?\dM)?(?:[0-5]?\dS)?)$/,
    'must be a duration above zero and at most PT24H, in hours, minutes and seconds (PT5M)',
  );

/** Body of `POST …/entitlements/{sku}/reservations`: the units to hold (default 1) and for how long (default PT5M). */
export const ReservationBody = z.strictObject({
  amount: Quantity.optional(),
  ttl: ReservationTtl.optional(),
  ...OnClock,
});
export type ReservationBody = z.infer<typeof ReservationBody>;

/** Body of `POST …/reservations/{reservationId}/commit`: the units consumed, at most those held (default all). */
export const CommitBody = z.strictObject({
  amount: z
    .number({ error: 'must be an integer from 0 to 1000000000' })
    .int('must be an integer from 0 to 1000000000')
    .min(0, 'must be an integer from 0 to 1000000000')
    .max(1_000_000_000, 'must be an integer from 0 to 1000000000')
    .optional(),
});
export type CommitBody = z.infer<typeof CommitBody>;

/** What a consumption took from one right, and what that right has left. */
export const ConsumedPortion = z.object({
  rightId: RightId,
  amount: z.number().int(),
  remaining: z.number().int(),
});

/** The answer of a consumption by SKU or of a reservation's commit (docs/api.md "Consumption by SKU"). */
export const Consumption = z.object({
  connectId: ConnectId,
  sku: SkuName,
  amount: z.number().int(),
  consumed: z.array(ConsumedPortion),
  /** The units left over the caller-visible active metered rights of the user and SKU. */
  remaining: z.number().int(),
});
export type Consumption = z.infer<typeof Consumption>;

/** A reservation as created (docs/api.md "Reservations"). */
export const Reservation = z.object({
  reservationId: ReservationId,
  amount: z.number().int(),
  expiresAt: z.string(),
  /** The units left to everyone else over the caller-visible active metered rights, the reservation's held. */
  remaining: z.number().int(),
});
export type Reservation = z.infer<typeof Reservation>;

/** What a right event's `data` tells the projection (the event type says whether it was removed). */
export function projectedFromEvent(data: RightEventData, removed: boolean): ProjectedRight {
  const { rightId, connectId, sequence, state, timeInterval, grantorId, serviceProviderId, sku, used } = data;
  const { quantity, remaining, held, graceEnds, clockId } = data;
  return {
    rightId,
    connectId,
    sequence,
    state,
    timeInterval,
    grantorId,
    serviceProviderId,
    sku,
    used,
    quantity,
    // A check asks what may be consumed now: the units left less those held (docs/api.md).
    remaining: remaining === null ? null : Math.max(0, remaining - (held ?? 0)),
    graceEnds,
    clockId,
    removed,
  };
}
