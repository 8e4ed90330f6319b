import {
  Exchanges,
  parseEvent,
  ProjectedRightPage,
  projectedFromEvent,
  RightEvents,
  RightEventTypes,
} from '@rs/contracts';
import { readBucket, servicePrincipal, type InternalTokenSigner } from '@rs/http';
import type { Logger } from '@rs/logging';
import { consume, type AmqpClient } from '@rs/messaging';
import { BUCKETS } from '@rs/hashing';
import { counter, gauge } from '@rs/telemetry/metrics';
import { repeat, type Repeating } from '@rs/time';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Entitlements, RightsSnapshot } from '../app/entitlements';

/**
 * Rights per page of a rebuild (about 2 MB of JSON), and buckets read at once. On FerretDB a
 * page reads its whole bucket (docs/operations.md), so fewer, larger pages load faster.
 */
const PAGE = 5_000;
const BUCKETS_AT_ONCE = 4;
/** At start, how long the projection waits for the broker before it loads without following events. */
const BROKER_GRACE_MS = 5_000;
const SWEEP_EVERY_MS = 30_000;

/** The projections of this process (one, but for tests that start gateways in theirs): for /metrics. */
const kept = new Set<Entitlements>();
gauge('entitlements_projection_rights', 'Rights held by the entitlement projection', [], function () {
  for (const entitlements of kept) this.set(entitlements.size);
});
gauge(
  'entitlements_projection_lag_seconds',
  'How far the entitlement projection may be behind rights.events: the delay of the last event while it follows them, else the time since it stopped',
  [],
  function () {
    for (const entitlements of kept) this.set(entitlements.lagSeconds());
  },
);
const rebuilds = counter(
  'entitlements_projection_rebuilds_total',
  'Loads of the entitlement projection from the rights service, by outcome',
  ['outcome'],
);

/**
 * Every right that may entitle now, from the rights service's `/internal/entitlements`, a page
 * at a time, a few buckets at once.
 */
export function rightsSnapshot(rightsUrl: string, signer: InternalTokenSigner): RightsSnapshot {
  const url = new URL('/internal/entitlements', rightsUrl).toString();
  const caller = servicePrincipal('gateway');
  return async (eachPage) => {
    let next = 0;
    let read = 0;
    const worker = async () => {
      for (let bucket = next++; bucket < BUCKETS; bucket = next++) {
        const inBucket = await readBucket(
          url,
          bucket,
          { signer, caller, service: 'rights', pageSize: PAGE, schema: ProjectedRightPage },
          eachPage,
        );
        read += inBucket;
      }
    };
    await Promise.all(Array.from({ length: BUCKETS_AT_ONCE }, worker));
    return read;
  };
}

/**
 * docs/api.md "Entitlement checks": keeps this replica's projection current. A private queue
 * of this process on `rights.events` (every replica needs every event); after each new
 * broker connection, once that queue is bound, the projection is rebuilt (it may have missed
 * events while disconnected); at start without a broker it loads anyway and says it does not
 * follow (its lag grows). A rebuild that fails is tried again with back-off. Returns how to stop.
 */
export async function keepEntitlements(
  entitlements: Entitlements,
  broker: AmqpClient,
  logger: Logger,
): Promise<() => Promise<void>> {
  const log = logger.child({ component: 'entitlements' });
  let stopped = false;
  const rebuildUntilDone = async (following: boolean) => {
    // At most 5 s apart: a replica that cannot load is not ready (it serves nothing), so it
    // should be ready within seconds of the rights service's return.
    for (let delayMs = 500; !stopped; delayMs = Math.min(delayMs * 2, 5_000)) {
      try {
        await entitlements.rebuild(following);
        rebuilds.inc({ outcome: 'done' });
        return;
      } catch (error) {
        rebuilds.inc({ outcome: 'failed' });
        log.warn({ err: error, retry_in_ms: delayMs }, 'cannot load the entitlement projection yet');
        await sleep(delayMs, undefined, { ref: false });
      }
    }
  };
  kept.add(entitlements);
  broker.on('disconnected', () => entitlements.stoppedFollowing());
  await consume(
    broker,
    {
      queue: null,
      bindings: Object.values(RightEventTypes)
        .filter((type) => type !== RightEventTypes.serviceAnnounce)
        .map((routingKey) => ({ exchange: Exchanges.rightsEvents, routingKey })),
      parse: (body) => parseEvent(RightEvents, body),
      handle: async (event) =>
        entitlements.applyEvent(
          projectedFromEvent(event.data, event.type === RightEventTypes.removed),
          new Date(event.time),
        ),
      prefetch: 1_000,
    },
    log,
  );
  // After the consumer's own setup on every connection: the queue is bound, events are kept.
  await broker.addSetup(async () => {
    void rebuildUntilDone(true);
  });
  const grace = setTimeout(() => {
    if (!entitlements.loaded) void rebuildUntilDone(false);
  }, BROKER_GRACE_MS);
  const sweeping: Repeating = repeat(() => entitlements.sweep(), {
    everyMs: SWEEP_EVERY_MS,
    immediately: false,
    onError: (error) => log.warn({ err: error }, 'cannot sweep the entitlement projection'),
  });
  return async () => {
    kept.delete(entitlements);
    stopped = true;
    clearTimeout(grace);
    await sweeping.stop();
  };
}
