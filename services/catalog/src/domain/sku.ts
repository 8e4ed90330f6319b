import type { Sku, SkuUpsertBody } from '@rs/contracts';

/** The stored state of a catalog entry, free of storage details. */
export interface SkuEntry {
  sku: string;
  name: string | null;
  serviceProviderId: string | null;
  announceOnUsage: boolean;
  /** Who may grant it besides its provider (null: see `grantOf` in @rs/contracts). */
  grantorIds: string[] | null;
  generation: number;
  createdAt: Date;
  updatedAt: Date;
  deleted: boolean;
}

export const EVENT_SOURCE = '/catalog';

/** PUT replaces the entry: fields left out take their defaults. */
export function settingsFrom(
  body: SkuUpsertBody,
): Pick<SkuEntry, 'name' | 'serviceProviderId' | 'announceOnUsage' | 'grantorIds'> {
  return {
    name: body.name ?? null,
    serviceProviderId: body.serviceProviderId ?? null,
    announceOnUsage: body.announceOnUsage ?? false,
    // Kept in a stable order, without repeats: the same list PUT twice changes nothing.
    grantorIds: body.grantorIds == null ? null : [...new Set(body.grantorIds)].sort(),
  };
}

/** True when applying `body` to `entry` would change nothing a client can see. */
export function isUnchanged(entry: SkuEntry, body: SkuUpsertBody): boolean {
  const next = settingsFrom(body);
  return (
    !entry.deleted &&
    entry.name === next.name &&
    entry.serviceProviderId === next.serviceProviderId &&
    entry.announceOnUsage === next.announceOnUsage &&
    JSON.stringify(entry.grantorIds) === JSON.stringify(next.grantorIds)
  );
}

/**
 * A SKU never catalogued, as the change pipeline sees it: deleted at generation 0, so a PUT
 * decides from it as from a tombstone, and the store inserts what follows it.
 */
export function neverCatalogued(sku: string): SkuEntry {
  const epoch = new Date(0);
  return {
    sku,
    ...settingsFrom({}),
    generation: 0,
    createdAt: epoch,
    updatedAt: epoch,
    deleted: true,
  };
}

/**
 * The next state after a PUT. A deleted entry is kept as a tombstone so its generation
 * keeps growing: consumers order catalog events by it, and it must never start over.
 */
export function upserted(current: SkuEntry, body: SkuUpsertBody, now: Date): SkuEntry {
  const revived = current.deleted;
  return {
    sku: current.sku,
    ...settingsFrom(body),
    generation: current.generation + 1,
    createdAt: revived ? now : current.createdAt,
    updatedAt: now,
    deleted: false,
  };
}

export function deleted(current: SkuEntry, now: Date): SkuEntry {
  return { ...current, generation: current.generation + 1, updatedAt: now, deleted: true };
}

export function representation(entry: SkuEntry): Sku {
  return {
    sku: entry.sku,
    name: entry.name,
    serviceProviderId: entry.serviceProviderId,
    announceOnUsage: entry.announceOnUsage,
    grantorIds: entry.grantorIds,
    generation: String(entry.generation),
    createdAt: entry.createdAt.toISOString(),
    updatedAt: entry.updatedAt.toISOString(),
  };
}
