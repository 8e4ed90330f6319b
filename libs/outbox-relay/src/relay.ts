import { randomUUID } from 'node:crypto';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import {
  compareAndSetWrite,
  isLostCompareAndSet,
  documentLock,
  isDuplicateKey,
  loadedEntries,
  whenPending,
  pendingKeyAt,
  PENDING_KEYS,
  type HistoryLog,
  type InsertedPending,
  type OutboxEntry,
  type PendingKey,
  type StoredOutboxEntry,
  serverLimits,
} from '@rs/store';
import { gauge, SCRAPE_QUERY_MAX_TIME_MS } from '@rs/telemetry/metrics';
import { repeat, type Repeating } from '@rs/time';
import { chunks } from '@rs/batching';
import { publishRecorded } from './publish';
import type { mongo } from 'mongoose';

// Registered on the process registry; their values are read at scrape time, both from one reading.
gauge(
  'outbox_pending_documents',
  'Documents with events not yet published, by collection',
  ['collection'],
  async function collect() {
    for (const relay of relays) {
      const pending = await relay.pending().catch(() => undefined);
      this.set({ collection: relay.collectionName }, pending ? pending.documents : -1);
    }
  },
);
gauge(
  'outbox_oldest_pending_age_seconds',
  'Age of the oldest event not yet published, by collection (0 when none is pending)',
  ['collection'],
  async function collect() {
    const now = Date.now();
    for (const relay of relays) {
      const pending = await relay.pending().catch(() => undefined);
      if (pending)
        this.set(
          { collection: relay.collectionName },
          pending.oldestAt ? (now - pending.oldestAt.getTime()) / 1000 : 0,
        );
    }
  },
);
const relays = new Set<OutboxRelay>();

export interface OutboxRelayOptions {
  /** The service's database (mongoose's `connection.db`). */
  db: mongo.Db;
  /** The collection whose documents carry an outbox. */
  collection: string;
  client: AmqpClient;
  logger: Logger;
  /**
   * How often the recent seconds' keys are read, for what other replicas wrote; writes of this
   * process tell the relay where to read (`whenPending`).
   */
  pollIntervalMs?: number;
  /**
   * How often every key is read, for what nothing told the relay of: another replica's write that
   * took longer than the recent keys' reach. A broker's return, a lease taken over and a run that
   * failed ask for a full pass of their own (docs/decisions/0072).
   */
  fullPassMs?: number;
  /** How long a relay holds the collection's relay lease without renewing it. */
  leaseMs?: number;
  /** Documents read and published per round (default 500). */
  batchSize?: number;
  /** Where the changes the events report are recorded before they are published (docs/api.md "History"). */
  history?: HistoryLog;
}

type OutboxDocument = { _id: unknown; generation?: number; outboxPending: PendingKey; outbox: OutboxEntry[] };

/** Every key a pending document may carry. */
const ALL_PENDING_KEYS: readonly PendingKey[] = Array.from({ length: PENDING_KEYS }, (_, i) => i + 1);
/** Clocks of replicas may differ by this much: a relay reads the keys of the seconds around its own. */
const RECENT_SKEW_MS = 1_000;
const LEASES = 'outbox_leases';

/** A collection's relay lease: which relay publishes it, until when. */
interface Lease {
  _id: string;
  owner: string;
  until: Date;
  /**
   * Moved on by every write of the lease, so that a relay takes it over by a compare-and-set on
   * the lease as it read it, which FerretDB's guard checks across replicas (docs/decisions/0046).
   */
  generation: number;
}
/** A scrape reads both gauges within this time of each other: they share one reading. */
const PENDING_READ_SHARED_MS = 1_000;
/** Keys a scrape counts at once. */
const SCRAPE_READS_AT_ONCE = 8;

/** What a collection has pending, for its gauges. */
export interface PendingNow {
  documents: number;
  oldestAt: Date | null;
}
/** Batches of handed documents a relay keeps for its next run; beyond, it reads them instead. */
const HANDED_BATCHES = 4;

/**
 * Publishes pending events with confirms, many per confirm wait, then clears them from
 * their documents. A crash between the confirm and the clean-up republishes the event:
 * delivery is at least once and consumers de-duplicate by event id.
 *
 * Several replicas may run: a lease per collection (in `outbox_leases`) lets one relay
 * publish at a time, and another take over when it stops renewing (a compare-and-set, so that
 * of the relays that find it lapsed at once one takes it). Removal is a `$pop` guarded by the
 * entry's id, so it is safe even if two relays ever overlap. (One lease per
 * collection rather than per document: FerretDB 1.x pays a write per leased document, and
 * has no `$pull` by condition; see docs/decisions/0003-outbox-embedded-in-documents.md.)
 */
export class OutboxRelay {
  private readonly owner = randomUUID();
  private polling: Repeating | undefined;
  private fullPass: Repeating | undefined;
  private running: Promise<void> | undefined;
  /**
   * Keys kicks asked to read, as of each kick: read before what is left of a full pass, so a
   * write's event does not wait behind 64 reads, nor for a pass that has moved past its second
   * (docs/decisions/0070).
   */
  private readonly kicked = new Set<PendingKey>();
  /** The keys of the full pass under way not read yet; and whether another pass was asked for meanwhile. */
  private passLeft: PendingKey[] = [];
  private passAgain = false;
  /**
   * Documents this process inserted with events, as stored, that the relay publishes
   * without reading them (docs/decisions/0068); bounded: beyond, it reads them instead.
   */
  private handed: InsertedPending[] = [];
  /**
   * The documents the latest reads published, by id, with their generation: an insert hands its
   * document after its write returns, so a read in between may publish it first; its hand is
   * then not published again. Bounded: the oldest are forgotten first.
   */
  private readonly readLately = new Map<string, number | undefined>();
  /**
   * Work was dropped (a failed run) or the lease was taken anew: the next poll reads every key,
   * not the recent ones only.
   */
  private passOwed = false;
  /** The latest reading of what is pending, shared by the gauges of one scrape. */
  private pendingRead: { at: number; reading: Promise<PendingNow> } | undefined;
  private stopped = true;
  private stopListening: (() => void) | undefined;
  /** Until when this relay holds the lease, as far as it knows (ms since the epoch). */
  private leaseUntil = 0;
  /** The lease's generation as this relay last wrote it (while it holds the lease). */
  private leaseGeneration = 0;
  private readonly log: Logger;
  private readonly documents: mongo.Collection;
  private readonly leases: mongo.Collection<Lease>;

  constructor(private readonly options: OutboxRelayOptions) {
    this.log = options.logger.child({ component: 'outbox', collection: options.collection });
    this.documents = options.db.collection(options.collection);
    this.leases = options.db.collection(LEASES);
    options.client.on('connected', () => this.kick('all'));
  }

  get collectionName(): string {
    return this.options.collection;
  }

  start(): void {
    this.stopped = false;
    relays.add(this);
    this.stopListening = whenPending(this.options.db, this.options.collection, (written) =>
      'inserted' in written ? this.hand(written.inserted) : this.kick([written.changedUnder]),
    );
    // The poll catches what another replica wrote; a run that failed asks for a full pass at the next one.
    this.polling = repeat(() => this.kick(this.passOwed ? 'all' : 'recent'), {
      everyMs: this.options.pollIntervalMs ?? 500,
      immediately: false,
      onError: () => undefined,
    });
    this.fullPass = repeat(() => this.kick('all'), {
      everyMs: this.options.fullPassMs ?? 30_000,
      onError: () => undefined,
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.forgetWork();
    relays.delete(this);
    this.stopListening?.();
    await Promise.all([this.polling?.stop(), this.fullPass?.stop()]);
    await this.running;
    const held = this.leaseUntil > Date.now();
    this.leaseUntil = 0;
    // Given up, so that another replica's relay need not wait for it to lapse.
    if (held) await this.writeLease(this.leaseGeneration, new Date(0)).catch(() => undefined);
  }

  /**
   * Publish now what is pending under `keys`, or what the recent seconds made pending, or
   * everything pending. A run under way takes the keys before the rest of its pass; a pass asked
   * for during a pass follows it.
   */
  kick(keys: 'recent' | 'all' | readonly PendingKey[] = 'recent'): void {
    if (this.stopped) return;
    if (keys === 'all') {
      this.passOwed = false;
      if (this.passLeft.length > 0) this.passAgain = true;
      else this.passLeft = [...ALL_PENDING_KEYS];
    } else for (const key of keys === 'recent' ? recentPendingKeys(Date.now()) : keys) this.kicked.add(key);
    this.wake();
  }

  /**
   * Publish now the events of documents this process has just inserted, known as stored: the
   * relay publishes them without reading the collection, before anything it reads. Past a few
   * batches of them, they are dropped and read instead (they are stored, under the recent keys).
   */
  private hand(handedNow: readonly InsertedPending[]): void {
    if (this.stopped) return;
    const inserted = handedNow.filter(({ _id, generation }) => {
      const id = String(_id);
      return !this.readLately.has(id) || this.readLately.get(id) !== generation;
    });
    if (inserted.length === 0) return;
    if (this.handed.length + inserted.length > this.batchSize * HANDED_BATCHES) {
      const keys = new Set([...this.handed, ...inserted].map(({ outboxPending }) => outboxPending));
      this.handed = [];
      this.kick([...keys]);
      return;
    }
    this.handed.push(...inserted);
    this.wake();
  }

  /** Starts a run unless one is under way (it takes what was asked meanwhile). */
  private wake(): void {
    if (this.running || this.stopped) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
    });
  }

  /**
   * Runs until nothing is asked, a batch at a time, each time taking first what arrived
   * meanwhile: the handed documents, then a kicked key, then the pass's next key; handed batches
   * take turns with the keys, so a stream of inserts holds no read back. A key whose batch was
   * full is read again. When the relay cannot publish now (no broker, another relay's lease, an
   * error), what was asked is dropped: the broker's return, the lease's holder and the polls read
   * every pending document again.
   */
  private async drain(): Promise<void> {
    try {
      let handedLast = false;
      while (!this.stopped) {
        if (!this.options.client.connected) return this.forgetWork();
        handedLast = this.handed.length > 0 && !(handedLast && this.keysAsked());
        if (handedLast) {
          const handed = this.handed.splice(0, this.batchSize);
          if (!(await this.holdLease())) return this.forgetWork();
          if (!(await this.publishBatch(handed.map(loaded)))) return this.failed();
          continue;
        }
        const next = this.nextKey();
        if (next === undefined) return;
        if (!(await this.holdLease())) return this.forgetWork();
        const read = await this.readBatch(next.key);
        if (read === 'failed') return this.failed();
        if (read === 'full' && next.kicked) this.kicked.add(next.key);
        else if (read === 'full') this.passLeft.unshift(next.key);
      }
    } catch (error) {
      this.failed();
      this.log.warn({ err: error }, 'outbox relay run failed; will retry');
    }
  }

  private keysAsked(): boolean {
    return this.kicked.size > 0 || this.passLeft.length > 0 || this.passAgain;
  }

  /** The next key to read: a kicked one first, else the pass's next (a pass asked for meanwhile starts after it). */
  private nextKey(): { key: PendingKey; kicked: boolean } | undefined {
    for (const key of this.kicked) {
      this.kicked.delete(key);
      this.passLeft = this.passLeft.filter((left) => left !== key);
      return { key, kicked: true };
    }
    if (this.passLeft.length === 0 && this.passAgain) {
      this.passAgain = false;
      this.passLeft = [...ALL_PENDING_KEYS];
    }
    const key = this.passLeft.shift();
    return key === undefined ? undefined : { key, kicked: false };
  }

  /**
   * Reads and publishes one batch of the documents pending under `key`. Unsorted: events of
   * different documents have no order to keep (each document's are in order in its array), and
   * a sort would make FerretDB read the whole key's documents each round instead of stopping
   * after a batch.
   */
  private async readBatch(key: PendingKey): Promise<'all' | 'full' | 'failed'> {
    const batch = (
      (await this.documents
        .find({ outboxPending: key }, { projection: { _id: 1, generation: 1, outboxPending: 1, outbox: 1 } })
        .limit(this.batchSize)
        .toArray()) as unknown as Array<OutboxDocument & { outbox: StoredOutboxEntry[] }>
    ).map(loaded);
    if (batch.length === 0) return 'all';
    this.forgetHanded(batch);
    if (!(await this.publishBatch(batch))) return 'failed';
    for (const { _id, generation } of batch) {
      this.readLately.delete(String(_id));
      this.readLately.set(String(_id), generation);
    }
    for (const id of this.readLately.keys()) {
      if (this.readLately.size <= this.batchSize * HANDED_BATCHES) break;
      this.readLately.delete(id);
    }
    return batch.length < this.batchSize ? 'all' : 'full';
  }

  /** A run that could not publish what it was asked: dropped, and every key read at the next poll. */
  private failed(): void {
    this.forgetWork();
    this.passOwed = true;
  }

  private forgetWork(): void {
    this.handed = [];
    this.kicked.clear();
    this.passLeft = [];
    this.passAgain = false;
  }

  /** Handed documents a read found (handed while it ran): published with what it read, not again. */
  private forgetHanded(read: readonly OutboxDocument[]): void {
    if (this.handed.length === 0) return;
    const ids = new Set(read.map(({ _id }) => _id));
    this.handed = this.handed.filter(({ _id }) => !ids.has(_id));
  }

  private get batchSize(): number {
    return this.options.batchSize ?? 500;
  }

  /**
   * The pending documents and when the oldest pending event was stored (null when none is), read
   * once for both gauges of a scrape: a count of each key, then the entries of the keys that hold
   * documents, up to a relay batch of them (unsorted, as the relay reads them; a sort would read
   * the whole backlog on FerretDB). The oldest is exact up to a batch of backlog and a lower bound
   * beyond, and a stuck relay re-reads the same documents, so the age it shows keeps growing.
   */
  pending(): Promise<PendingNow> {
    const now = Date.now();
    if (this.pendingRead && now - this.pendingRead.at < PENDING_READ_SHARED_MS) return this.pendingRead.reading;
    const reading = this.readPending();
    this.pendingRead = { at: now, reading };
    // A failed reading is not shared: the next gauge or scrape reads again.
    reading.catch(() => {
      if (this.pendingRead?.reading === reading) this.pendingRead = undefined;
    });
    return reading;
  }

  private async readPending(): Promise<PendingNow> {
    const counts: number[] = [];
    for (const keys of chunks(ALL_PENDING_KEYS, SCRAPE_READS_AT_ONCE))
      counts.push(
        ...(await Promise.all(
          keys.map((key) =>
            this.documents.countDocuments({ outboxPending: key }, { maxTimeMS: SCRAPE_QUERY_MAX_TIME_MS }),
          ),
        )),
      );
    const batch: Array<Pick<OutboxDocument, 'outbox'>> = [];
    for (const [index, key] of ALL_PENDING_KEYS.entries()) {
      if (batch.length >= this.batchSize) break;
      if (counts[index] === 0) continue;
      batch.push(
        ...((await this.documents
          .find({ outboxPending: key }, { projection: { _id: 0, outbox: 1 } })
          .limit(this.batchSize - batch.length)
          .maxTimeMS(SCRAPE_QUERY_MAX_TIME_MS)
          .toArray()) as unknown as Array<Pick<OutboxDocument, 'outbox'>>),
      );
    }
    let oldest: number | null = null;
    for (const document of batch)
      for (const entry of document.outbox) {
        const at = new Date(entry.createdAt).getTime();
        if (oldest === null || at < oldest) oldest = at;
      }
    return {
      documents: counts.reduce((sum, count) => sum + count, 0),
      oldestAt: oldest === null ? null : new Date(oldest),
    };
  }

  private get leaseId(): string {
    return `outbox:${this.options.collection}`;
  }

  /**
   * Takes or renews this collection's lease; false while another relay holds it. Renewed
   * at most every third of its length: a busy relay runs many rounds a second, and a write
   * per round would cost as much as the events it publishes.
   */
  private async holdLease(): Promise<boolean> {
    const now = Date.now();
    const leaseMs = this.options.leaseMs ?? 10_000;
    if (this.leaseUntil - now > (leaseMs * 2) / 3) return true;
    const until = new Date(now + leaseMs);
    const lapsed = this.leaseUntil < now;
    this.leaseUntil = 0;
    if (!(await this.takeLease(lapsed, now, until))) return false;
    this.leaseUntil = until.getTime();
    // Taken anew (after another relay's, or after this one lapsed): what was pending meanwhile
    // may be under any key. A pass under way reads them all already.
    if (lapsed && this.passLeft.length === 0) this.passOwed = true;
    return true;
  }

  /**
   * Renews the lease this relay holds from the generation it wrote; otherwise reads the lease,
   * and takes it if it lapsed (or is this relay's) by a compare-and-set on the generation read:
   * of the relays that found it lapsed at once, one takes it. A relay that another's lease
   * keeps waiting only reads.
   */
  private async takeLease(lapsed: boolean, now: number, until: Date): Promise<boolean> {
    if (!lapsed) return this.writeLease(this.leaseGeneration, until);
    const lease = await this.leases.findOne({ _id: this.leaseId });
    if (!lease) {
      try {
        await this.leases.insertOne({ _id: this.leaseId, owner: this.owner, until, generation: 1 });
        this.leaseGeneration = 1;
        return true;
      } catch (error) {
        if (isDuplicateKey(error)) return false; // another relay took it first
        throw error;
      }
    }
    if (lease.owner !== this.owner && lease.until.getTime() >= now) return false;
    return this.writeLease(lease.generation, until);
  }

  /** This relay's lease until `until`, if the lease is still at `generation`. */
  private async writeLease(generation: number, until: Date): Promise<boolean> {
    const stamped = !(await serverLimits(this.options.db)).usesDriverIndexes;
    const { filter, update } = compareAndSetWrite(
      { id: this.leaseId, generation, set: { owner: this.owner, until, generation: generation + 1 }, outbox: [] },
      {},
      stamped,
    );
    try {
      if ((await this.leases.updateOne(filter, update)).modifiedCount !== 1) return false;
    } catch (error) {
      if (isLostCompareAndSet(error)) return false;
      throw error;
    }
    this.leaseGeneration = generation + 1;
    return true;
  }

  /**
   * Publishes every entry of the batch at once on the confirm channel, their history recorded
   * beside (`publishRecorded`, as a command that publishes its own changes does; a document's
   * entries in order, so they reach the broker in order) and waits for all the confirms together;
   * then clears each document's published entries in one compare-and-set on the generation
   * it was read at. A document changed meanwhile (a newer generation with
   * more entries) has only its published entries removed, one `$pop` each, guarded by the
   * entry's id. False when some entry could not be published; it stays pending.
   */
  private async publishBatch(batch: OutboxDocument[]): Promise<boolean> {
    const entries = batch.flatMap((document) => document.outbox);
    const outcomes = await publishRecorded(this.options.history, this.options.client, entries);
    let position = 0;
    const results = batch.map((document) => {
      const own = outcomes.slice(position, (position += document.outbox.length));
      const failed = own.findIndex((outcome) => outcome.status === 'rejected');
      if (failed >= 0) {
        const { reason } = own[failed] as PromiseRejectedResult;
        this.log.warn({ err: reason, event_id: document.outbox[failed]!.id }, 'cannot publish event yet');
      }
      return { document, confirmed: failed < 0 ? document.outbox.length : failed };
    });
    const whole = results.filter(
      ({ document, confirmed }) =>
        confirmed > 0 && confirmed === document.outbox.length && typeof document.generation === 'number',
    );
    const cleared = await this.clearTogether(whole.map(({ document }) => document));
    // The rest one document at a time: on FerretDB, concurrent clean-ups compete with the
    // writes of the request path (docs/performance.md, "Measurements behind the code").
    for (const { document, confirmed } of results) {
      if (cleared.has(document._id)) continue;
      await documentLock.run(this.options.collection, document._id, () => this.clear(document, confirmed));
    }
    return results.every(({ document, confirmed }) => confirmed === document.outbox.length);
  }

  /**
   * Clears documents whose every entry was published, each still at the generation and key it
   * was read at, a compare-and-set each, sent as one `updateMany` per (key, generation)
   * (docs/decisions/0037): on FerretDB one query of the key and a write a document, where
   * `updateOne` made a query, a write and a round trip each, and a burst of API writes (10,000
   * subscriptions created) left the relay behind for half a minute. One statement, however many
   * documents (docs/architecture.md bounds statements a command), and not split: FerretDB matches `_id`
   * after reading the whole key, so each part would read it again. Returns the ids cleared.
   */
  private async clearTogether(documents: readonly OutboxDocument[]): Promise<Set<unknown>> {
    const cleared = new Set<unknown>();
    const groups = new Map<string, OutboxDocument[]>();
    for (const document of documents) {
      const group = `${String(document.outboxPending)}|${document.generation}`;
      const members = groups.get(group);
      if (members) members.push(document);
      else groups.set(group, [document]);
    }
    for (const group of groups.values()) {
      const { outboxPending, generation } = group[0]!;
      const ids = group.map((document) => document._id);
      const { modifiedCount } = await documentLock.runMany(this.options.collection, ids, () =>
        orNoneModified(
          this.documents.updateMany({ _id: { $in: ids }, generation, outboxPending } as never, {
            $set: { outbox: [], outboxPending: false },
          }),
        ),
      );
      // Fewer: some changed since they were read. Which is not known, so the group goes one
      // document at a time, where clearing one already cleared finds nothing to do.
      if (modifiedCount === ids.length) for (const id of ids) cleared.add(id);
    }
    return cleared;
  }

  /** Removes the first `confirmed` entries of the document's outbox, as read. */
  private async clear(document: OutboxDocument, confirmed: number): Promise<void> {
    if (document.outbox.length === 0) {
      // Flagged with nothing to publish (a stop between the removal of its last entries, below,
      // and the unflagging): unflag it.
      await orNoneModified(
        this.documents.updateOne(
          { _id: document._id, outbox: { $size: 0 }, outboxPending: document.outboxPending } as never,
          { $set: { outboxPending: false } },
        ),
      );
      return;
    }
    if (confirmed === 0) return;
    if (confirmed === document.outbox.length && typeof document.generation === 'number') {
      const cleared = await orNoneModified(
        this.documents.updateOne(
          { _id: document._id, generation: document.generation, outboxPending: document.outboxPending } as never,
          { $set: { outbox: [], outboxPending: false } },
        ),
      );
      if (cleared.modifiedCount === 1) return;
    }
    for (const entry of document.outbox.slice(0, confirmed)) {
      const popped = await orNoneModified(
        this.documents.updateOne({ _id: document._id, 'outbox.0.id': entry.id } as never, { $pop: { outbox: -1 } }),
      );
      // A change landed as it was written: the next pass reads the document again.
      if (popped.modifiedCount === 0 && popped.refused) return;
    }
    await orNoneModified(
      this.documents.updateOne({ _id: document._id, outbox: { $size: 0 } } as never, {
        $set: { outboxPending: false },
      }),
    );
  }
}

/**
 * A clean-up write that a change landing at the same instant made FerretDB's guard refuse
 * (docs/decisions/0046) did nothing, as one whose filter no longer matched: the relay reads
 * the document again on its next pass.
 */
async function orNoneModified(
  write: Promise<{ modifiedCount: number }>,
): Promise<{ modifiedCount: number; refused?: true }> {
  try {
    return await write;
  } catch (error) {
    if (isLostCompareAndSet(error)) return { modifiedCount: 0, refused: true };
    throw error;
  }
}

/** A pending document as stored (read, or handed by its insert), its entries ready to publish. */
const loaded = (document: Omit<OutboxDocument, 'outbox'> & { outbox: StoredOutboxEntry[] }): OutboxDocument => ({
  ...document,
  outbox: loadedEntries(document.outbox),
});

/** The keys of the seconds around `now`: what writes of any replica made pending just now. */
function recentPendingKeys(now: number): PendingKey[] {
  return [...new Set([now - RECENT_SKEW_MS, now, now + RECENT_SKEW_MS].map(pendingKeyAt))];
}
