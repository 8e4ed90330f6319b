import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { clientsOf, systemFixture, TestSystem } from '@rs/testing';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse as parseYaml } from 'yaml';

const root = path.resolve(__dirname, '../../..');
const dashboard = JSON.parse(readFileSync(path.join(root, 'k8s/monitoring/dashboard.json'), 'utf8')) as {
  panels: Array<{ type: string; title: string; targets?: Array<{ expr: string }> }>;
};
const rules = parseYaml(readFileSync(path.join(root, 'k8s/monitoring/prometheus-rule.yaml'), 'utf8')) as {
  spec: { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
};

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'inf',
  'nan',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
]);

/**
 * The metric names a PromQL expression selects. Strings, label matchers, ranges and the label
 * lists of `by`, `without`, `on`, `ignoring` and `group_*` are removed first; what remains is
 * function and aggregation names (followed by `(`), keywords, numbers and metric names.
 */
export function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = [...bare.matchAll(/(?<![\w.:])([A-Za-z_:][\w:]*)(?![\w:])(?!\s*\()/g)].map((match) => match[1]!);
  return [...new Set(names.filter((name) => !KEYWORDS.has(name.toLowerCase())))];
}

/** Every metric name the text exposition declares, histograms with their series' suffixes. */
function declaredNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(`${name}${suffix}`);
    else names.add(name!);
  }
  return names;
}

describe('PromQL metric names', () => {
  it('when an expression has functions, matchers, ranges, grouping and binary operators, then only its metrics are named', () => {
    expect(
      metricNamesOf(
        'sum by (service) (rate(http_request_duration_seconds_count{status=~"5.."}[5m])) / on (service) group_left ' +
          'sum by (service) (rate(http_request_duration_seconds_count[5m])) > 0.05 and amqp_connected == bool 0',
      ),
    ).toEqual(['http_request_duration_seconds_count', 'amqp_connected']);
    expect(
      metricNamesOf('histogram_quantile(0.99, sum by (le) (rate(renewal_lag_seconds_bucket[10m]))) > 120'),
    ).toEqual(['renewal_lag_seconds_bucket']);
  });
});

const fx = systemFixture({
  processes: true,
  name: 'monitoring',
  backends: ['catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'],
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['erin'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

describe('the dashboard and the alerts read metrics the services export', () => {
  let exported: Map<string, Set<string>>;
  beforeAll(async () => {
    exported = new Map();
    for (const process of fx.system.services.values()) {
      const response = await fetch(process.metricsUrl);
      expect(response.status).toBe(200);
      for (const name of declaredNames(await response.text()))
        exported.set(name, (exported.get(name) ?? new Set()).add(process.service));
    }
  });

  it('when every panel query and alert expression is parsed, then each metric it names is exported by some service', () => {
    const queries = [
      ...dashboard.panels.flatMap((panel) =>
        (panel.targets ?? []).map((target) => [`panel "${panel.title}"`, target.expr]),
      ),
      ...rules.spec.groups.flatMap((group) => group.rules.map((rule) => [`alert ${rule.alert}`, rule.expr])),
    ];
    expect(queries.length).toBeGreaterThan(20);
    const unknown = queries.flatMap(([where, expr]) =>
      metricNamesOf(expr!)
        .filter((name) => !exported.has(name))
        .map((name) => `${where}: ${name}`),
    );
    expect(unknown).toEqual([]);
  });

  it('when the metrics an operator asks for are looked for, then each is exported where it is made and shown on the dashboard', () => {
    const where = (name: string) => [...(exported.get(name) ?? [])].sort();
    expect(where('renewal_lag_seconds_bucket')).toEqual(['rights']);
    expect(where('expiry_lag_seconds_bucket')).toEqual(['rights']);
    expect(where('renewal_rights_missed_total')).toEqual(['subscriptions']);
    // Declared by the shared libraries, so exported by every service that uses them.
    const outboxes = expect.arrayContaining(['catalog', 'rights', 'subscriptions']);
    expect(where('outbox_oldest_pending_age_seconds')).toEqual(outboxes);
    expect(where('outbox_pending_documents')).toEqual(outboxes);
    expect(where('amqp_dead_letter_messages')).toEqual(
      expect.arrayContaining(['catalog', 'rights', 'scheduler', 'subscriptions', 'webhooks']),
    );
    expect(where('webhook_deliveries_total')).toEqual(['webhooks']);
    expect(where('http_request_duration_seconds_bucket')).toEqual([
      'catalog',
      'gateway',
      'rights',
      'scheduler',
      'subscriptions',
      'webhooks',
    ]);
    const shown = new Set(
      dashboard.panels.flatMap((panel) => (panel.targets ?? []).flatMap((target) => metricNamesOf(target.expr))),
    );
    for (const name of [
      'renewal_lag_seconds_bucket',
      'expiry_lag_seconds_bucket',
      'renewal_rights_missed_total',
      'outbox_oldest_pending_age_seconds',
      'outbox_pending_documents',
      'amqp_dead_letter_messages',
      'webhook_deliveries_total',
      'http_request_duration_seconds_count',
      'http_request_duration_seconds_bucket',
    ])
      expect(shown, name).toContain(name);
  });
});

/** The value of one series on a service's /metrics (first replica), or undefined. */
async function sample(service: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(fx.system.services.get(service)!.metricsUrl)).text();
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

async function until<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await read();
      if (!ok(value)) throw new Error(`${what}: still ${String(value)}`);
      return value;
    },
    { timeout: 20_000, interval: 200 },
  );
}

describe("the operators' metrics measure what happens", () => {
  it('when a subscription created after its period began is renewed, then the renewal lag is measured from its creation, not from the period start', async () => {
    const created = await fx.call('POST', '/id/users/erin/subs', TestSystem.clientAuthorization('grantor-a'), {
      grantorId: 'A',
      timeSpec: 'R/2026-01-01T00:00:00Z/P1D',
      rightsSpec: [{ sku: 'news' }],
    });
    expect(created.status).toBe(201);
    const count = await until(
      () => sample('rights', 'renewal_lag_seconds_count{service="rights"}'),
      (value) => (value ?? 0) >= 1,
      'periods renewed',
    );
    expect(count).toBe(1);
    // The period began at midnight; the subscription was created now and renewed within seconds.
    expect(await sample('rights', 'renewal_lag_seconds_sum{service="rights"}')).toBeLessThan(30);
    expect(await sample('rights', 'renewal_lag_seconds_bucket{le="30",service="rights"}')).toBe(1);
  });

  it("when renewal comes after a subscription's rights would have ended, then those rights are counted as missed, none issued", async () => {
    const missed = 'renewal_rights_missed_total{service="subscriptions"}';
    expect(await sample('subscriptions', missed)).toBe(0);
    const scheduler = fx.system.service('scheduler');
    await scheduler.stop();
    // Two periods of 2 s, starting in a second or two, both over before the scheduler is back.
    const start = Math.ceil(Date.now() / 1000) * 1000 + 1_000;
    const created = await fx.call('POST', '/id/users/erin/subs', TestSystem.clientAuthorization('grantor-a'), {
      grantorId: 'A',
      timeSpec: `R2/${new Date(start).toISOString().replace(/\.000Z$/, 'Z')}/PT2S`,
      rightsSpec: [{ sku: 'news' }],
    });
    expect(created.status).toBe(201);
    const { subscriptionId } = (await created.json()) as { subscriptionId: string };
    await sleep(start + 4_500 - Date.now()); // the wait is the test's subject: both periods end while the scheduler is down
    await scheduler.start();
    expect(
      await until(
        () => sample('subscriptions', missed),
        (value) => (value ?? 0) >= 2,
        'rights missed',
      ),
    ).toBe(2);
    const subscription = await fx.call(
      'GET',
      `/id/users/erin/subs/${subscriptionId}`,
      TestSystem.clientAuthorization('grantor-a'),
    );
    expect(((await subscription.json()) as { state: string }).state).toBe('EXPIRED');
    const rights = (await (
      await fx.call('GET', '/id/users/erin/rights?grantorId=A&limit=1000', TestSystem.clientAuthorization('grantor-a'))
    ).json()) as { right: Array<{ link: Array<{ rel: string; href: string }> }> };
    const ofIt = rights.right.filter((right) =>
      right.link.some((link) => link.href.endsWith(`/subs/${subscriptionId}`)),
    );
    expect(ofIt).toEqual([]);
  });

  it("when a command cannot be parsed, then it is counted in its queue's dead letters", async () => {
    expect(await sample('rights', 'amqp_dead_letter_messages{queue="rights.commands",service="rights"}')).toBe(0);
    const connection = await amqp.connect(fx.system.amqpUrl);
    const channel = await connection.createConfirmChannel();
    channel.sendToQueue('rights.commands', Buffer.from('not a command'), { persistent: true });
    await channel.waitForConfirms();
    await connection.close();
    await until(
      () => sample('rights', 'amqp_dead_letter_messages{queue="rights.commands",service="rights"}'),
      (value) => value === 1,
      'dead letters of rights.commands',
    );
    expect(await sample('rights', 'amqp_queue_messages{queue="rights.commands",service="rights"}')).toBe(0);
  });

  it('when every change is published, then the oldest pending event of each outbox is 0 seconds old', async () => {
    // A scrape under load may leave the gauge without samples (its reads took over 2 s): read again.
    for (const [service, collection] of [
      ['rights', 'rights'],
      ['subscriptions', 'subscriptions'],
    ] as const)
      await until(
        () => sample(service, `outbox_oldest_pending_age_seconds{collection="${collection}",service="${service}"}`),
        (value) => value === 0,
        `the oldest pending event of ${collection}`,
      );
  });
});
