import {
  CatalogEvents,
  CatalogEventTypes,
  DomainError,
  Exchanges,
  parseEvent,
  Sku,
  type ParsedEvent,
} from '@rs/contracts';
import { LRUCache } from 'lru-cache';
import { getResource, servicePrincipal, ServiceUnreachable, type InternalTokenSigner, type Principal } from '@rs/http';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';

/** The catalog could not be asked and the SKU is not known locally: the caller answers 503. */
export class CatalogUnavailable extends Error {
  override readonly name = 'CatalogUnavailable';
}

export interface SkuDirectoryOptions {
  broker: AmqpClient;
  /** The catalog's base URL, without a trailing slash, e.g. http://catalog:8083. */
  catalogUrl: string;
  signer: InternalTokenSigner;
  /** Service name, for the internal token and logs. */
  service: string;
  logger: Logger;
  /** How long "no such SKU" is believed without an event saying otherwise. */
  negativeTtlMs?: number;
  requestTimeoutMs?: number;
}

/** What a use case asks of the catalog: a SKU's entry, or null when there is none (SkuDirectory answers it). */
export interface SkuLookup {
  find(sku: string): Promise<Sku | null>;
}

/**
 * A SKU's entry for a use case, or null when there is none; a catalog that cannot be asked
 * is the use case's 503 with Retry-After, the same in every service.
 */
export async function skuForUseCase(skus: SkuLookup, sku: string): Promise<Sku | null> {
  try {
    return await skus.find(sku);
  } catch (error) {
    if (error instanceof CatalogUnavailable) throw DomainError.unavailable('the catalog is unavailable', 5);
    throw error;
  }
}

/** Starts a service's SKU directory with its runtime's broker, signer and logger, following catalog.events. */
export async function startSkuDirectory(
  runtime: Pick<SkuDirectoryOptions, 'broker' | 'signer' | 'service' | 'logger'>,
  catalogUrl: string,
): Promise<SkuDirectory> {
  const { broker, signer, service, logger } = runtime;
  const skus = new SkuDirectory({ broker, signer, service, logger, catalogUrl });
  await skus.start();
  return skus;
}

type CacheEntry = { sku: Sku | null; sequence: number; expiresAt: number };

/**
 * Answers "does this SKU exist, and how is it configured?" for the rights and
 * subscriptions services. A local cache is fed by `sku.upserted`/`sku.deleted` on
 * `catalog.events` through a private queue of this process; what the cache does not know
 * is asked of the catalog over HTTP. While the broker connection is down the cache may
 * miss events, so it is emptied on every reconnect.
 */
export class SkuDirectory implements SkuLookup {
  /** Bounded: SKU names come from requests, and unknown ones are remembered too. */
  private readonly cache = new LRUCache<string, CacheEntry>({ max: 100_000 });
  private readonly principal: Principal;

  constructor(private readonly options: SkuDirectoryOptions) {
    this.principal = servicePrincipal(options.service);
  }

  async start(): Promise<void> {
    this.options.broker.on('connected', () => this.cache.clear());
    await consume(
      this.options.broker,
      {
        queue: null,
        bindings: [
          { exchange: Exchanges.catalogEvents, routingKey: CatalogEventTypes.skuUpserted },
          { exchange: Exchanges.catalogEvents, routingKey: CatalogEventTypes.skuDeleted },
        ],
        parse: (body) => parseEvent(CatalogEvents, body),
        handle: async (event) => this.apply(event),
      },
      this.options.logger.child({ component: 'sku-directory' }),
    );
  }

  /** The SKU, or null when the catalog has no such entry. Throws CatalogUnavailable. */
  async find(sku: string): Promise<Sku | null> {
    const cached = this.cache.get(sku);
    if (cached && cached.expiresAt > Date.now()) return cached.sku;
    const fetched = await this.fetch(sku);
    const current = this.cache.get(sku);
    // An event that arrived during the request is newer than what the request saw.
    if (!current || current === cached || current.sequence <= fetched.sequence) this.cache.set(sku, fetched);
    return fetched.sku;
  }

  private apply(event: ParsedEvent<typeof CatalogEvents>): void {
    const sku = event.data.sku;
    const current = this.cache.get(sku);
    if (current && current.sequence >= event.data.sequence) return; // stale or repeated
    if (event.type === CatalogEventTypes.skuUpserted) {
      const { sequence, ...entry } = event.data as ParsedEvent<typeof CatalogEvents>['data'] & Sku;
      this.cache.set(sku, { sku: entry, sequence, expiresAt: Number.POSITIVE_INFINITY });
    } else {
      this.cache.set(sku, { sku: null, sequence: event.data.sequence, expiresAt: Date.now() + this.negativeTtl });
    }
  }

  private get negativeTtl(): number {
    return this.options.negativeTtlMs ?? 5_000;
  }

  private async fetch(sku: string): Promise<CacheEntry> {
    const url = new URL(`${this.options.catalogUrl}/catalog/skus/${encodeURIComponent(sku)}`);
    const { signer, requestTimeoutMs } = this.options;
    let entry: Sku | null;
    try {
      entry = await getResource(url, {
        signer,
        caller: this.principal,
        service: 'catalog',
        schema: Sku,
        ...(requestTimeoutMs ? { timeoutMs: requestTimeoutMs } : {}),
      });
    } catch (error) {
      if (error instanceof ServiceUnreachable) throw new CatalogUnavailable(error.message);
      throw error;
    }
    if (!entry) return { sku: null, sequence: 0, expiresAt: Date.now() + this.negativeTtl };
    return { sku: entry, sequence: Number(entry.generation), expiresAt: Number.POSITIVE_INFINITY };
  }
}
