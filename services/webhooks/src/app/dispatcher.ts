import { landedLate, SecondSweeper, secondOf, type SweepCursor, type SweepTiming } from '@rs/due';
import type { Logger } from '@rs/logging';
import { counter, gauge, histogram } from '@rs/telemetry/metrics';
import { repeat, systemClock, type Clock, type Repeating } from '@rs/time';
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
  'Deliveries put off a few seconds because their endpoint’s lane or the process’s memory was full',
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
   * Deliveries an endpoint may have waiting in memory while the memory is half taken; more are
   * put off a few seconds. Below that, a burst for one endpoint waits in memory (a put-off
   * costs it five seconds and two writes).
   */
  queueLimit: number;
  /**
   * Deliveries all endpoints may have waiting in memory together (each holds its event's body):
   * what bounds the process's memory however many endpoints are slow; more are put off too.
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

/** What the dispatcher needs to know of endpoints: each one with its secrets opened. */
export interface EndpointDirectory {
  withSecrets(endpointId: string, now: Date): Promise<{ endpoint: Endpoint; secrets: string[] } | null>;
  liveIds(): Promise<string[]>;
}

interface Lane {
  waiting: Delivery[];
  active: number;
}

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
  /** Deliveries waiting in all lanes. */
  private waiting = 0;
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
   * Deliveries to attempt as soon as their endpoint's lane has room; `leasedUntil`: they were
   * stored leased to this process until then (see `ownLeaseUntil`).
   */
  enqueue(found: readonly Delivery[], leasedUntil?: Date): void {
    for (const delivery of found) {
      if (this.stopped || this.queued.has(delivery.deliveryId) || this.busy.has(delivery.deliveryId)) continue;
      if (leasedUntil) this.owned.set(delivery.deliveryId, leasedUntil);
      const lane = this.laneOf(delivery.endpointId);
      if (this.isFull(lane)) {
        this.putOff(delivery, this.owned.get(delivery.deliveryId));
        this.owned.delete(delivery.deliveryId);
        continue;
      }
      this.queued.set(delivery.deliveryId, slotOf(delivery.nextAttemptAt ?? delivery.createdAt));
      lane.waiting.push(delivery);
      this.waiting += 1;
      this.pump(delivery.endpointId);
    }
  }

  /** Whether a delivery for `lane` must wait in the database (docs/operations.md "Webhooks"). */
  private isFull(lane: Lane): boolean {
    const { queueLimit, waitingLimit } = this.options;
    if (this.waiting >= waitingLimit) return true;
    return lane.waiting.length >= queueLimit && this.waiting >= waitingLimit / 2;
  }

  private laneOf(endpointId: string): Lane {
    let lane = this.lanes.get(endpointId);
    if (!lane) {
      lane = { waiting: [], active: 0 };
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
      this.waiting -= 1;
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
          if (retry) this.enqueue([retry]);
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
    );
    const next = afterAttempt(delivery.attempts + 1, result, this.clock(), this.options.schedule);
    const outcome = next.status === 'pending' ? 'retrying' : next.status;
    deliveries.inc({ outcome });
    attemptSeconds.observe({ outcome }, (performance.now() - started) / 1000);
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
   * A full lane: the delivery waits in the database a few seconds and is swept again, with the
   * lease this process was given for it (`ownLease`) released.
   */
  private putOff(delivery: Delivery, ownLease: Date | undefined): void {
    const now = this.clock();
    putOffs.inc();
    this.store
      .putOff(delivery, { at: new Date(now.getTime() + 5_000), now, ownLease })
      .catch((error: unknown) =>
        this.logger.warn({ err: error }, 'cannot put a delivery off; the sweeper will find it'),
      );
  }
}
