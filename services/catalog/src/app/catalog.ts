import { systemClock, type Clock } from '@rs/time';
import { DomainError, type SkuUpsertBody } from '@rs/contracts';
import type { Principal } from '@rs/contracts';
import { changeOne, UNCHANGED, type Decision } from '@rs/store';
import { canReadCatalog, canWriteCatalog } from '../domain/access';
import { deleted, isUnchanged, neverCatalogued, upserted, type SkuEntry } from '../domain/sku';
import { outboxOf } from '../messages/events';
import type { SkuStore } from '../store/sku-store';

/**
 * The catalog's use cases (docs/operations.md): each checks who may do it (domain/access.ts), asks
 * the domain what the entry becomes (domain/sku.ts), and stores it with its event.
 */
export class CatalogUseCases {
  constructor(
    private readonly store: SkuStore,
    private readonly clock: Clock = systemClock,
  ) {}

  async list(principal: Principal, limit: number, after: string | undefined): Promise<SkuEntry[]> {
    requireReader(principal);
    return this.store.list(limit, after);
  }

  async get(principal: Principal, sku: string): Promise<SkuEntry> {
    requireReader(principal);
    const entry = await this.store.find(sku);
    if (!entry) throw DomainError.notFound(`no SKU ${sku}`);
    return entry;
  }

  /**
   * PUT: creates or replaces the entry, through the change pipeline as every change is; a
   * deleted or never catalogued entry is a tombstone the PUT brings back. `expectedGeneration`
   * is the If-Match value, of the entry as callers see it: one deleted has no generation.
   */
  async put(
    principal: Principal,
    sku: string,
    body: SkuUpsertBody,
    expectedGeneration?: number,
  ): Promise<{ created: boolean; entry: SkuEntry }> {
    requireWriter(principal);
    const done = await changeOne({
      what: `SKU ${sku}`,
      load: async () => (await this.store.findStored(sku)) ?? neverCatalogued(sku),
      decide: (current): Decision<{ next: SkuEntry }> => {
        const visible = current.deleted ? null : current;
        if (expectedGeneration !== undefined && visible?.generation !== expectedGeneration) throw mismatch(sku);
        if (visible && isUnchanged(visible, body)) return UNCHANGED;
        return { kind: 'change', next: upserted(current, body, this.clock()) };
      },
      write: (current, { next }) => this.store.update({ current, next, outbox: outboxOf(next) }),
    });
    if (done.outcome === 'missing') throw new Error(`SKU ${sku} cannot be missing: it loads as a tombstone`);
    if (done.outcome === 'unchanged') return { created: false, entry: done.current };
    return { created: done.current.deleted, entry: done.change.next };
  }

  async remove(principal: Principal, sku: string, expectedGeneration?: number): Promise<void> {
    requireWriter(principal);
    const done = await changeOne({
      what: `SKU ${sku}`,
      load: () => this.store.find(sku),
      expectedGeneration,
      decide: (current) => ({ kind: 'change', next: deleted(current, this.clock()) }),
      write: (current, { next }) => this.store.update({ current, next, outbox: outboxOf(next) }),
    });
    if (done.outcome === 'missing') throw DomainError.notFound(`no SKU ${sku}`);
  }
}

const NOT_PERMITTED = 'the catalog is administered by admin clients only';

function requireReader(principal: Principal): void {
  if (!canReadCatalog(principal)) throw DomainError.notPermitted(NOT_PERMITTED);
}

function requireWriter(principal: Principal): void {
  if (!canWriteCatalog(principal)) throw DomainError.notPermitted(NOT_PERMITTED);
}

const mismatch = (sku: string) =>
  DomainError.preconditionFailed(`If-Match does not match the generation of SKU ${sku}`);
