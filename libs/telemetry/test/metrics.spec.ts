import client from 'prom-client';
import { describe, expect, it } from 'vitest';
import { gauge } from '../src/metrics';

describe('issue 13: gauges computed at scrape time', () => {
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
});
