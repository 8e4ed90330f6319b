import { z } from 'zod';
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

/** Body of `PUT /catalog/skus/{sku}` (DESIGN.md 6). Unknown fields are refused. */
export const SkuUpsertBody = z.strictObject({
  name: z.string().trim().min(1).max(200).optional(),
  serviceProviderId: PartyId.nullable().optional(),
  announceOnUsage: z.boolean().optional(),
});
export type SkuUpsertBody = z.infer<typeof SkuUpsertBody>;

/** A catalog entry as the admin API returns it. */
export const Sku = z.object({
  sku: SkuName,
  name: z.string().nullable(),
  serviceProviderId: z.string().nullable(),
  announceOnUsage: z.boolean(),
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
