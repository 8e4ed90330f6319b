import { z } from 'zod';
import { SkuName } from './catalog';
import { ConnectId } from './identity';
import { RightEventData, RightId } from './rights';

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
});

/**
 * `GET /id/users/{connectId}/entitlements/{sku}` (docs/api.md "Entitlement checks"): the
 * caller-visible rights of the user and SKU that are ACTIVE and whose interval contains
 * `checkedAt`; `entitled` when there is one, `until` the latest end among them.
 */
export const Entitlement = z.object({
  connectId: ConnectId,
  sku: SkuName,
  entitled: z.boolean(),
  until: z.string().nullable(),
  /** The units left over the listed metered rights; null when none of them is metered. */
  balance: z.number().int().nullable(),
  rights: z.array(EntitlementRight),
  checkedAt: z.string(),
});
export type Entitlement = z.infer<typeof Entitlement>;

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
}).extend({ removed: z.boolean() });
export type ProjectedRight = z.infer<typeof ProjectedRight>;
export const ProjectedRightPage = z.object({ items: z.array(ProjectedRight), next: z.string().nullable() });

/**
 * The response header with which the rights service tells the gateway what a change it
 * answered made of the right (base64url of a `ProjectedRight`); the gateway never passes it on.
 */
export const PROJECTED_RIGHT_HEADER = 'x-rs-projected-right';

export function encodeProjectedRight(right: ProjectedRight): string {
  return Buffer.from(JSON.stringify(right)).toString('base64url');
}

/** The header's right, or null when it is absent or not one. */
export function decodeProjectedRight(header: string | undefined): ProjectedRight | null {
  if (header === undefined) return null;
  try {
    const parsed = ProjectedRight.safeParse(JSON.parse(Buffer.from(header, 'base64url').toString('utf8')));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** What a right event's `data` tells the projection (the event type says whether it was removed). */
export function projectedFromEvent(data: RightEventData, removed: boolean): ProjectedRight {
  const { rightId, connectId, sequence, state, timeInterval, grantorId, serviceProviderId, sku, used } = data;
  const { quantity, remaining } = data;
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
    remaining,
    removed,
  };
}
