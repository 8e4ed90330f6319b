import client, { type Counter, type Gauge, type Histogram } from 'prom-client';

/**
 * One way to declare a metric (issue 10): on prom-client's process registry, which every
 * service serves at /metrics (DESIGN.md 5) with its `service` label. Names follow
 * Prometheus' conventions: a unit suffix, `_total` for counters.
 */
export function counter<L extends string = never>(name: string, help: string, labels: readonly L[] = []): Counter<L> {
  return new client.Counter<L>({ name, help, labelNames: labels });
}

/** A gauge; `collect` computes its value when /metrics is scraped. */
export function gauge<L extends string = never>(
  name: string,
  help: string,
  labels: readonly L[] = [],
  collect?: (this: Gauge<L>) => Promise<void> | void,
): Gauge<L> {
  return new client.Gauge<L>({ name, help, labelNames: labels, ...(collect ? { collect } : {}) });
}

export function histogram<L extends string = never>(
  name: string,
  help: string,
  labels: readonly L[],
  buckets: number[],
): Histogram<L> {
  return new client.Histogram<L>({ name, help, labelNames: labels, buckets });
}
