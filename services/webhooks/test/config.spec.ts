import { loadConfig } from '@rs/config';
import { describe, expect, it } from 'vitest';
import { Config } from '../src/service';

// docs/decisions/0032: a delivery still being retried is never purged by its retention.
describe("the webhooks' delivery retention", () => {
  it('when the retention is shorter than the retries plus a day, then the service refuses to start naming it; otherwise it applies', () => {
    expect(loadConfig(Config, { NODE_ENV: 'development' }).WEBHOOK_DELIVERY_RETENTION_DAYS).toBe(30);
    // The default schedule spans about 27.6 hours: a day and a half is too short, three days are not.
    expect(() => loadConfig(Config, { NODE_ENV: 'development', WEBHOOK_DELIVERY_RETENTION_DAYS: '2' })).toThrow(
      /WEBHOOK_DELIVERY_RETENTION_DAYS: must outlast WEBHOOK_RETRY_SCHEDULE by at least a day/,
    );
    expect(
      loadConfig(Config, { NODE_ENV: 'development', WEBHOOK_DELIVERY_RETENTION_DAYS: '3' })
        .WEBHOOK_DELIVERY_RETENTION_DAYS,
    ).toBe(3);
    expect(
      loadConfig(Config, {
        NODE_ENV: 'development',
        WEBHOOK_DELIVERY_RETENTION_DAYS: '2',
        WEBHOOK_RETRY_SCHEDULE: '5s,1m',
      }).WEBHOOK_DELIVERY_RETENTION_DAYS,
    ).toBe(2);
  });
});
