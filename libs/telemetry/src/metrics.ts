import client, { type Counter, type Gauge, type Histogram } from 'prom-client';

/**
 * One way to declare a metric (issue 10): on prom-client's process registry, which every
 * service serves at /metrics (DESIGN.md 5) with its `service` label. Names follow
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
 * A gauge; `collect` computes its value when /metrics is scraped. One that does not finish
 * within COLLECT_TIMEOUT_MS is reported without samples (not with stale ones) for that scrape.
 */
export function gauge<L extends string = never>(
  name: string,
  help: string,
  labels: readonly L[] = [],
  collect?: (this: Gauge<L>) => Promise<void> | void,
): Gauge<L> {
  const bounded = collect
    ? async function (this: Gauge<L>) {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), COLLECT_TIMEOUT_MS);
        });
        const finished = Promise.resolve(collect.call(this)).then(
          () => false,
          () => false,
        );
        if (await Promise.race([finished, timedOut])) this.reset();
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
