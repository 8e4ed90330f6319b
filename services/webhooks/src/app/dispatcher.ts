import { landedLate, SecondSweeper, secondOf, type SweepCursor, type SweepTiming } from '@rs/due';
import type { Logger } from '@rs/logging';
import { counter, gauge, histogram } from '@rs/telemetry/metrics';
import { repeat, systemClock, type Clock, type Repeating } from '@rs/time';
import { Backlog, putOffFor } from '../domain/backlog';
import { afterAttempt } from '../domain/delivery';
import { signatureHeader } from '../domain/signature';
import type { Sender } from '../net/sender';
import { slotOf, type Delivery, type DeliveryStore } from '../store/delivery-store';
import type { Endpoint } from '../store/endpoint-store';

const deliveries = counter('webhook_deliveries_total', 'Delivery attempts by outcome', ['outcome']);
const attemptSeconds = histogram(
  'webhook_attempt_duration_seconds',
  'Time from sending a delivery to the end of the endpoint’s answer',
  ['outcome'],
  [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
);
const putOffs = counter(
  'webhook_put_offs_total',
  'Deliveries put off because their endpoint’s, their grantor’s or their share of the memory was full',
);
const claimsLost = counter(
  'webhook_claims_lost_total',
  'Attempts not made because the delivery was held: by another attempt, or by a lease still running',
);
const foundLate = counter(
  'webhook_deliveries_found_late_total',
  'Pending deliveries found by the second look at a second already swept (written there after it was read)',
);

// Registered once on the process registry; computed at scrape time from the running dispatchers.
const dispatchers = new Set<Dispatcher>();
gauge(
  'webhook_backlog_deliveries',
  'Pending deliveries of each endpoint (waiting for an attempt or a retry)',
  ['endpoint'],
  async function collect() {
    this.reset();
    // One replica reports it (docs/operations.md: a scrape of each would count the same deliveries again).
    for (const dispatcher of dispatchers)
      if (dispatcher.reportsBacklog())
        for (const [endpoint, count] of await dispatcher.backlog().catch(() => new Map<string, number>()))
          this.set({ endpoint }, count);
  },
);

export interface DispatcherOptions {
  /**
   * Attempts under way at once per endpoint in this replica: a slow endpoint holds at most
   * these. A function: this replica's share of the cluster's limit changes with the replicas.
   */
  perEndpoint: () => number;
  /**
   * Deliveries all endpoints may have waiting in memory together (each holds its event's body)
   * before that memory is shared fairly between grantors and their endpoints (`Backlog`); a
   * delivery that finds no room is put off in the database.
   */
  waitingLimit: number;
  /** Whether this replica reports the backlog of every endpoint (one replica does); default yes. */
  reportsBacklog?: () => boolean;
  timeoutMs: number;
  /** Delays between attempts (WEBHOOK_RETRY_SCHEDULE). */
  schedule: readonly number[];
  /** How often the sweeper looks for deliveries that fell due. */
  sweepEveryMs: number;
}

/** What the dispatcher needs to know of endpoints: each one with its secrets opened, and whose it is. */
export interface EndpointDirectory {
  withSecrets(endpointId: string, now: Date): Promise<{ endpoint: Endpoint; secrets: string[] } | null>;
  liveIds(): Promise<string[]>;
  /** The grantor of an endpoint (null: the admins'), or undefined when there is no such endpoint. */
  grantorOf(endpointId: string): Promise<string | null | undefined>;
}

interface Lane {
  waiting: Delivery[];
  active: number;
  /** Whose backlog its deliveries count in: its endpoint's grantor. */
  grantor: string;
  /** How long its attempts take, smoothed (null before the first): how soon a put-off looks again. */
  attemptMs: number | null;
}

/**
 * Whose backlog an endpoint's deliveries count in: its grantor's; the admins' endpoints are one
 * party, and a deleted endpoint (its deliveries fail at once) is its own.
 */
const backlogKey = (endpointId: string, grantor: string | null | undefined) =>
  grantor === undefined ? `deleted ${endpointId}` : grantor === null ? 'admins' : `grantor ${grantor}`;

/** Endpoints whose grantor is remembered (it never changes): more are forgotten and read again. */
const GRANTORS_KEPT = 100_000;

/**
 * The sweeper stays a second behind the last second that has passed (new deliveries are the
 * fast path's first); replicas' clocks are within a second.
 */
const SWEEP_TIMING: SweepTiming = { lagS: 1, clockSkewMs: 1_000 };
/** Seconds read per sweep, and deliveries taken into lanes per sweep (the rest wait for the next). */
const SECONDS_PER_SWEEP = 600;
const DELIVERIES_PER_SWEEP = 20_000;
/**
 * How long the deliveries this process's event consumer stores stay leased to it beyond one
 * attempt's time: their first attempt needs no claim if it starts within about this long,
 * and after a crash the sweeper finds them this much later.
 */
const OWN_LEASE_EXTRA_MS = 15_000;
/**
 * How long after a second was swept it is read again: a write to it that took longer than this
 * (a put-off under a burst on a slow database) would be left behind, so it is generous.
 */
const SECOND_LOOK_S = 30;
/** How far back a (re)started sweeper looks before the saved cursor (clock skew between replicas). */
const SWEEP_MARGIN_S = 60;

/**
 * Delivers webhooks (docs/api.md): a lane per endpoint with at most `perEndpoint` attempts
 * under way, so a slow, hanging or failing endpoint delays no other; each attempt claims
 * its delivery in the database first, so replicas and restarts never run one twice at once.
 *
 * Deliveries reach it two ways: at once from the event consumer and from a manual retry
 * (the first attempt within moments of the event), and from the sweeper, which reads every
 * second that has passed (one equality on the delivery's `due` slot) for deliveries whose
 * next attempt fell due, or whose attempt's lease ran out because a process died. The
 * sweeper's position is saved only up to the oldest delivery still waiting in a lane, so a
 * crash loses nothing that was waiting (docs/decisions/0017).
 */
export class Dispatcher {
  private readonly lanes = new Map<string, Lane>();
  /** Deliveries waiting in all lanes, by endpoint and by grantor. */
  private readonly backlogs: Backlog;
  /** The grantor of each endpoint seen, as a backlog's key. */
  private readonly grantors = new Map<string, string>();
  /** Ids waiting here for their attempt, with the slot each was found in. */
  private readonly queued = new Map<string, string>();
  /** Ids whose attempt is under way here. */
  private readonly busy = new Set<string>();
  /** Ids stored leased to this process, with the lease's end: attempted without a claim while it lasts. */
  private readonly owned = new Map<string, Date>();
  private readonly sweeper: SecondSweeper<Delivery>;
  private sweeping: Repeating | undefined;
  private stopped = false;
  private readonly inFlight = new Set<Promise<unknown>>();

  private readonly store: DeliveryStore;
  private readonly endpoints: EndpointDirectory;
  private readonly sender: Sender;
  private readonly logger: Logger;
  private readonly clock: Clock;

  constructor(
    /** What it works with: its deliveries, the sweep's saved position, the endpoints, the sender. */
    parts: {
      store: DeliveryStore;
      cursor: SweepCursor;
      endpoints: EndpointDirectory;
      sender: Sender;
      logger: Logger;
      clock?: Clock;
    },
    private readonly options: DispatcherOptions,
  ) {
    ({ store: this.store, endpoints: this.endpoints, sender: this.sender, logger: this.logger } = parts);
    this.clock = parts.clock ?? systemClock;
    this.backlogs = new Backlog(options.waitingLimit);
    const { cursor } = parts;
    this.sweeper = new SecondSweeper<Delivery>({
      // A pending delivery in a second that has passed is due: its next attempt was due then, or
      // the lease of an attempt under way ended then (the process making it died).
      read: (second) => this.store.pendingIn(String(second)),
      handle: async (found) => this.enqueue(found),
      cursor,
      lagS: SWEEP_TIMING.lagS,
      start: { firstLookBackS: SWEEP_MARGIN_S, restartMarginS: SWEEP_MARGIN_S },
      perSweep: { seconds: SECONDS_PER_SWEEP, items: DELIVERIES_PER_SWEEP },
      // Writes that land in a second already swept (a delivery put off, or stored, while the
      // database was slow; or by another replica) are found by reading each second once more.
      secondLook: {
        afterS: SECOND_LOOK_S,
        onLate: (second, items) => {
          foundLate.inc(items);
          this.logger.info({ second, items }, 'deliveries found in a second swept before');
        },
      },
      // Saved no further than the oldest delivery still waiting here (not yet claimed), so a
      // crash sweeps it again.
      safePosition: (swept) => {
        let safe = swept;
        for (const slot of this.queued.values()) safe = Math.min(safe, Number(slot) - 1);
        return safe;
      },
    });
  }

  reportsBacklog(): boolean {
    return this.options.reportsBacklog?.() ?? true;
  }

  /** Pending deliveries of each live endpoint (the backlog gauge). */
  async backlog(): Promise<Map<string, number>> {
    return this.store.backlog(await this.endpoints.liveIds());
  }

  start(): void {
    dispatchers.add(this);
    this.sweeping = repeat(() => this.sweeper.sweep(this.clock()), {
      everyMs: this.options.sweepEveryMs,
      onError: (error) => this.logger.warn({ err: error }, 'sweeping deliveries failed; will retry'),
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.sweeper.stop();
    dispatchers.delete(this);
    await this.sweeping?.stop();
    await this.settled();
  }

  /** Resolves once no attempt is under way here, the retries they made this process take included. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * How long the deliveries the event consumer stores stay leased to this process: their
   * first attempt needs no claim while the lease lasts (one write less per delivery).
   */
  ownLeaseUntil(now: Date): Date {
    return new Date(now.getTime() + this.options.timeoutMs + OWN_LEASE_EXTRA_MS);
  }

  /**
   * Deliveries to attempt as soon as their endpoint's lane has room, or put off in the database
   * when their endpoint, their grantor or their grantor's share of the memory is full
   * (docs/operations.md "Webhooks"); `leasedUntil`: they were stored leased to this process
   * until then (see `ownLeaseUntil`).
   */
  async enqueue(found: readonly Delivery[], leasedUntil?: Date): Promise<void> {
    await this.learnGrantors(found);
    for (const delivery of found) {
      if (this.stopped || this.queued.has(delivery.deliveryId) || this.busy.has(delivery.deliveryId)) continue;
      if (leasedUntil) this.owned.set(delivery.deliveryId, leasedUntil);
      const { endpointId } = delivery;
      const lane = this.laneOf(endpointId);
      if (!this.backlogs.admits(endpointId, lane.grantor)) {
        const waiting = this.backlogs.waitingFor(endpointId);
        this.putOff(
          delivery,
          this.owned.get(delivery.deliveryId),
          putOffFor(waiting, this.options.perEndpoint(), lane.attemptMs),
        );
        this.owned.delete(delivery.deliveryId);
        if (lane.active === 0 && lane.waiting.length === 0) this.lanes.delete(endpointId);
        continue;
      }
      this.queued.set(delivery.deliveryId, slotOf(delivery.nextAttemptAt ?? delivery.createdAt));
      lane.waiting.push(delivery);
      this.backlogs.add(endpointId, lane.grantor);
      this.pump(endpointId);
    }
  }

  /** Reads the grantor of the endpoints not seen yet (one read each; an endpoint's grantor never changes). */
  private async learnGrantors(found: readonly Delivery[]): Promise<void> {
    const unknown = [...new Set(found.map(({ endpointId }) => endpointId))].filter((id) => !this.grantors.has(id));
    if (unknown.length === 0) return;
    const read = await Promise.all(unknown.map((id) => this.endpoints.grantorOf(id)));
    if (this.grantors.size + unknown.length > GRANTORS_KEPT) this.grantors.clear();
    unknown.forEach((id, i) => this.grantors.set(id, backlogKey(id, read[i])));
  }

  private laneOf(endpointId: string): Lane {
    let lane = this.lanes.get(endpointId);
    if (!lane) {
      lane = {
        waiting: [],
        active: 0,
        grantor: this.grantors.get(endpointId) ?? backlogKey(endpointId, undefined),
        attemptMs: null,
      };
      this.lanes.set(endpointId, lane);
    }
    return lane;
  }

  /**
   * Starts attempts while the lane has room. A lane's slot is held while its request is
   * under way, not while its outcome is written (the store bounds and batches those writes
   * for all lanes), so a slow database does not hold endpoints' slots.
   */
  private pump(endpointId: string): void {
    const lane = this.laneOf(endpointId);
    while (!this.stopped && lane.active < this.options.perEndpoint() && lane.waiting.length > 0) {
      const delivery = lane.waiting.shift()!;
      this.backlogs.remove(endpointId, lane.grantor);
      lane.active += 1;
      this.queued.delete(delivery.deliveryId);
      this.busy.add(delivery.deliveryId);
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        lane.active -= 1;
        if (lane.active === 0 && lane.waiting.length === 0) this.lanes.delete(endpointId);
        else this.pump(endpointId);
      };
      let retry: Delivery | null = null;
      const attempt = this.send(delivery)
        .then(async (record) => {
          release();
          if (record) retry = await record();
        })
        .catch((error: unknown) =>
          this.logger.warn({ err: error, delivery_id: delivery.deliveryId }, 'delivery attempt failed; will retry'),
        )
        .finally(() => {
          release();
          this.busy.delete(delivery.deliveryId);
          this.inFlight.delete(attempt);
          if (retry)
            this.enqueue([retry]).catch((error: unknown) =>
              this.logger.warn(
                { err: error, delivery_id: retry!.deliveryId },
                'cannot queue a retry; the sweeper will find it',
              ),
            );
        });
      this.inFlight.add(attempt);
    }
  }

  /**
   * One attempt: claim, sign, send; resolves with the write of its outcome, or null when
   * another attempt holds the delivery. The write resolves with the retry this process must
   * make itself, if any (see below).
   */
  private async send(found: Delivery): Promise<(() => Promise<Delivery | null>) | null> {
    const now = this.clock();
    const leaseUntil = new Date(now.getTime() + this.options.timeoutMs + 5_000);
    // Once claimed, its slot is the lease's: the sweeper finds it again if this process dies.
    const owned = this.owned.get(found.deliveryId);
    this.owned.delete(found.deliveryId);
    const ownLeaseHolds = owned !== undefined && owned.getTime() - now.getTime() > this.options.timeoutMs + 5_000;
    // Until when this attempt holds the delivery: its outcome is recorded in that slot.
    const heldUntil = ownLeaseHolds ? owned : leaseUntil;
    const delivery = ownLeaseHolds ? found : await this.store.claim(found, now, leaseUntil);
    if (!delivery) {
      claimsLost.inc();
      return null;
    }
    const live = await this.endpoints.withSecrets(delivery.endpointId, now);
    if (!live) {
      // The endpoint was deleted: nothing more is sent to it.
      return async () => {
        await this.store.recordAttempt(
          delivery,
          { status: 'failed', lastStatus: null, nextAttemptAt: null },
          heldUntil,
        );
        return null;
      };
    }
    const timestamp = Math.floor(now.getTime() / 1000);
    const started = performance.now();
    const result = await this.sender.post(
      live.endpoint.url,
      {
        'content-type': 'application/json',
        'webhook-id': delivery.eventId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signatureHeader(live.secrets, delivery.eventId, timestamp, delivery.body),
        'user-agent': 'rights-subscriptions-webhooks/1',
      },
      delivery.body,
      delivery.endpointId,
    );
    const next = afterAttempt(delivery.attempts + 1, result, this.clock(), this.options.schedule);
    const outcome = next.status === 'pending' ? 'retrying' : next.status;
    const tookMs = performance.now() - started;
    deliveries.inc({ outcome });
    attemptSeconds.observe({ outcome }, tookMs / 1000);
    const lane = this.lanes.get(delivery.endpointId);
    if (lane) lane.attemptMs = lane.attemptMs === null ? tookMs : 0.8 * lane.attemptMs + 0.2 * tookMs;
    if (next.status !== 'delivered')
      this.logger.info(
        {
          delivery_id: delivery.deliveryId,
          endpoint_id: delivery.endpointId,
          status: result.status,
          error: result.error,
        },
        'webhook not delivered',
      );
    const recorded = { ...next, lastStatus: result.status };
    return async () => {
      const retry = await this.store.recordAttempt(delivery, recorded, heldUntil);
      // Outcomes wait for a database that may be slow: one that lands after a sweeper may have
      // passed its retry's second would never be swept. Its retry is due: this process makes it.
      return retry?.nextAttemptAt && this.mayHaveSwept(retry.nextAttemptAt) ? retry : null;
    };
  }

  /** Whether a sweeper, here or on another replica, may have read `at`'s second (@rs/due's late-write rule). */
  private mayHaveSwept(at: Date): boolean {
    return landedLate(secondOf(at), this.clock(), SWEEP_TIMING);
  }

  /**
   * No room: the delivery waits in the database `forMs` and is swept again, with the lease this
   * process was given for it (`ownLease`) released.
   */
  private putOff(delivery: Delivery, ownLease: Date | undefined, forMs: number): void {
    const now = this.clock();
    const at = new Date(now.getTime() + forMs);
    putOffs.inc();
    // Stored leased to this process for its first attempt, it lies in its batch's hold, which
    // brings it back when the lease ends: when that is no later, nothing needs writing (a grantor
    // whose endpoints hang costs the database nothing more while its events stream in).
    if (ownLease && ownLease <= at) return;
    this.store
      .putOff(delivery, { at, now, ownLease })
      .catch((error: unknown) =>
        this.logger.warn({ err: error }, 'cannot put a delivery off; the sweeper will find it'),
      );
  }
}
