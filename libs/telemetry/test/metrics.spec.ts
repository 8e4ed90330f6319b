import client from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { gauge } from '../src/metrics';

describe('gauges computed at scrape time', () => {
  it('when a gauge cannot compute its value (its server is gone), then the scrape still answers in time, without that gauge’s samples', async () => {
    let answered = false;
    gauge('test_stuck_gauge', 'A gauge whose source never answers', ['source'], async function collect() {
      this.set({ source: 'stale' }, 1);
      await new Promise(() => undefined);
    });
    gauge('test_working_gauge', 'A gauge that answers', [], function collect() {
      this.set(7);
      answered = true;
    });
    // Without the bound, this scrape would never answer (the test's own timeout would fail it).
    const text = await client.register.metrics();
    expect(answered).toBe(true);
    expect(text).toContain('test_working_gauge 7');
    expect(text).toContain('# TYPE test_stuck_gauge gauge');
    expect(text).not.toContain('test_stuck_gauge{source="stale"}');
  });

  it('when scrapes come while a slow computation is still running, then they wait for it instead of starting another', async () => {
    let started = 0;
    let finished = 0;
    let release: () => void = () => undefined;
    gauge('test_slow_gauge', 'A gauge whose source is slow', ['source'], async function collect() {
      started += 1;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      this.set({ source: 'db' }, started);
      finished += 1;
    });
    // Three scrapes give up on it (each after its 2 s bound): one computation in all.
    for (let scrape = 0; scrape < 3; scrape++)
      expect(await client.register.metrics()).not.toMatch(/^test_slow_gauge\{/m);
    expect(started).toBe(1);
    release();
    await vi.waitFor(() => expect(finished).toBe(1));
    // Once it has finished, the next scrape computes afresh.
    const next = client.register.metrics();
    await vi.waitFor(() => expect(started).toBe(2));
    release();
    expect(await next).toMatch(/^test_slow_gauge\{source="db"\} 2$/m);
    expect(started).toBe(2);
  }, 15_000);
});
