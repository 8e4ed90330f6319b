import { z } from 'zod';
import { DomainError } from '../errors';
import { CatalogEventTypes } from './topology';

/** A SKU name is a simple token: letters, digits, dot, dash, underscore; 1-64 characters. */
export const SkuName = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
    'must be 1-64 letters, digits, ".", "-" or "_", starting with a letter or digit',
  );
export type SkuName = z.infer<typeof SkuName>;

/** Identifiers of grantors and service providers: the same simple tokens. */
export const PartyId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'must be 1-128 letters, digits, ".", ":", "-" or "_"');

/** Body of `PUT /catalog/skus/{sku}` (docs/operations.md). Unknown fields are refused. */
export const SkuUpsertBody = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  serviceProviderId: PartyId.nullable().optional(),
  announceOnUsage: z.boolean().optional(),
  /**
   * The grantors allowed to grant the SKU besides its provider (docs/security.md "Who may grant
   * what"): absent or null, none when a provider is named and any grantor when none is.
   */
  grantorIds: z.array(PartyId).max(1_000).nullable().optional(),
});
export type SkuUpsertBody = z.infer<typeof SkuUpsertBody>;

/** A catalog entry as the admin API returns it. */
export const Sku = z.object({
  sku: SkuName,
  name: z.string().nullable(),
  serviceProviderId: z.string().nullable(),
  announceOnUsage: z.boolean(),
  grantorIds: z.array(z.string()).nullable(),
  generation: z.string().regex(/^[1-9][0-9]*$/),
  createdAt: z.iso.datetime({ offset: true }),
  updatedAt: z.iso.datetime({ offset: true }),
});
export type Sku = z.infer<typeof Sku>;

export const SkuList = z.object({ skus: z.array(Sku) });
export type SkuList = z.infer<typeof SkuList>;

/** `data` of `sku.upserted`: the entry, plus `sequence` (its generation) for ordering. */
export const SkuUpsertedData = Sku.extend({ sequence: z.number().int().positive() });
export type SkuUpsertedData = z.infer<typeof SkuUpsertedData>;

/** `data` of `sku.deleted`. */
export const SkuDeletedData = z.object({ sku: SkuName, sequence: z.number().int().positive() });
export type SkuDeletedData = z.infer<typeof SkuDeletedData>;

export const CatalogEvents = {
  [CatalogEventTypes.skuUpserted]: SkuUpsertedData,
  [CatalogEventTypes.skuDeleted]: SkuDeletedData,
};

/** Why a grant of a SKU is refused: a provider it may not name (400), or a grantor that may not grant it (401). */
export type GrantRefusal = { kind: 'provider'; reason: string } | { kind: 'grantor'; reason: string };

/**
 * Service providers agree to what they serve (docs/security.md "Who may grant what"). A right or a
 * template of grantor `grantorId` may name as its provider only its own grantor or the
 * provider the SKU's catalog entry names; naming none, it gets the catalog's. When the catalog
 * names a provider, only that provider and the grantors in `grantorIds` may grant the SKU;
 * when it names none, any grantor may unless `grantorIds` lists who. The provider the grant
 * gets (null when it is its grantor), or why not. Pure.
 */
export function grantOf(
  entry: Pick<Sku, 'sku' | 'serviceProviderId' | 'grantorIds'>,
  grantorId: string,
  named: string | null | undefined,
): { ok: true; serviceProviderId: string | null } | { ok: false; refusal: GrantRefusal } {
  const provider = entry.serviceProviderId;
  if (named != null && named !== grantorId && named !== provider)
    return {
      ok: false,
      refusal: {
        kind: 'provider',
        reason: `serviceProviderId: ${named} does not serve ${entry.sku}; name ${provider ?? 'none'} or leave it out`,
      },
    };
  const allowed =
    grantorId === provider ||
    (entry.grantorIds ?? []).includes(grantorId) ||
    (provider === null && entry.grantorIds == null);
  if (!allowed)
    return { ok: false, refusal: { kind: 'grantor', reason: `grantor ${grantorId} may not grant ${entry.sku}` } };
  const chosen = named ?? provider;
  return { ok: true, serviceProviderId: chosen === grantorId ? null : chosen };
}

/**
 * A refused grant as the contract answers it: a provider the catalog does not name is 400
 * (the field named, `field` for a template's), a grantor not allowed 401.
 */
export function refusedGrant(refusal: GrantRefusal, field = 'serviceProviderId'): DomainError {
  return refusal.kind === 'provider'
    ? DomainError.invalid(refusal.reason.replace(/^serviceProviderId/, field))
    : DomainError.notPermitted(refusal.reason);
}
