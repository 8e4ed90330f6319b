import client, { type Counter, type Gauge, type Histogram } from 'prom-client';

/**
 * One way to declare a metric: on prom-client's process registry, which every
 * service serves at /metrics (docs/operations.md) with its `service` label. Names follow
 * Prometheus' conventions: a unit suffix, `_total` for counters.
 */
export function counter<L extends string = never>(name: string, help: string, labels: readonly L[] = []): Counter<L> {
  return new client.Counter<L>({ name, help, labelNames: labels });
}

/**
 * How long a gauge may take to compute its value at scrape time. Those that read MongoDB or
 * RabbitMQ would otherwise hold /metrics for as long as the driver waits for a lost server
 * (30 s), past Prometheus' scrape timeout: the whole scrape would fail, every other metric
 * with it, just when an operator needs them.
 */
const COLLECT_TIMEOUT_MS = 2_000;

/**
 * `maxTimeMS` of a database query made for a gauge: the server gives it up after this long,
 * so a query no scrape waits for any more does not keep loading a slow database.
 */
export const SCRAPE_QUERY_MAX_TIME_MS = 10_000;

/**
 * A gauge; `collect` computes its value when /metrics is scraped. One that does not finish
 * within COLLECT_TIMEOUT_MS is reported without samples (not with stale ones) for that scrape.
 * One computation at a time: a scrape that comes while the last one is still running (its
 * database is slow) waits for that one instead of starting another. Otherwise every
 * timed-out scrape would leave its query running, and they would pile up on the very
 * database that is slow (seen: 40 outbox counts at once on FerretDB, none finishing).
 */
export function gauge<L extends string = never>(
  name: string,
  help: string,
  labels: readonly L[] = [],
  collect?: (this: Gauge<L>) => Promise<void> | void,
): Gauge<L> {
  let running: Promise<void> | undefined;
  const bounded = collect
    ? async function (this: Gauge<L>) {
        running ??= Promise.resolve()
          .then(() => collect.call(this))
          .catch(() => undefined)
          .finally(() => {
            running = undefined;
          });
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), COLLECT_TIMEOUT_MS);
        });
        if (await Promise.race([running.then(() => false), timedOut])) this.reset();
        clearTimeout(timer);
      }
    : undefined;
  return new client.Gauge<L>({ name, help, labelNames: labels, ...(bounded ? { collect: bounded } : {}) });
}

export function histogram<L extends string = never>(
  name: string,
  help: string,
  labels: readonly L[],
  buckets: number[],
): Histogram<L> {
  return new client.Histogram<L>({ name, help, labelNames: labels, buckets });
}
