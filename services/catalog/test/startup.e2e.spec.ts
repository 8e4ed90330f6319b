import { freePort, ServiceProcess, TEST_INTERNAL_SECRET, TestSystem } from '@rs/testing';
import { describe, expect, it } from 'vitest';

/** Starts the catalog with `env` and returns what it said when it failed to start. */
async function failedStart(env: Record<string, string>): Promise<string> {
  const port = await freePort();
  const catalog = new ServiceProcess('catalog', port, {
    NODE_ENV: 'test',
    PORT: String(port),
    INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
    MONGODB_URL: process.env.MONGODB_URL!,
    AMQP_URL: process.env.AMQP_URL!,
    OTEL_TRACES_EXPORTER: 'none',
    RS_STARTUP_TIMEOUT_MS: '2000',
    ...env,
  });
  const failure = await catalog.start(15_000).then(
    () => null,
    (error: Error) => error.message,
  );
  await catalog.stop();
  expect(failure, 'the service started although it should not').not.toBeNull();
  return failure!;
}

describe('a service that cannot start', () => {
  it('when MongoDB cannot be reached, then it exits with code 1 and says so', async () => {
    const said = await failedStart({ CATALOG_MONGODB_URL: 'mongodb://127.0.0.1:1/nowhere' });
    expect(said).toMatch(/exit code 1/);
    expect(said).toMatch(/cannot reach MongoDB at mongodb:\/\/127\.0\.0\.1:1\/nowhere/);
  });

  it('when RabbitMQ cannot be reached, then it exits with code 1 and says so, without the password', async () => {
    const said = await failedStart({ AMQP_URL: 'amqp://guest:hunter2@127.0.0.1:1' });
    expect(said).toMatch(/exit code 1/);
    expect(said).toMatch(/cannot reach RabbitMQ at amqp:\/\/guest:\*\*\*@127\.0\.0\.1:1/);
    expect(said).not.toContain('hunter2');
  });

  it('when a variable is invalid, then it exits with code 1 naming the variable', async () => {
    const said = await failedStart({ PORT: 'eighty', AMQP_URL: 'http://not-amqp' });
    expect(said).toMatch(/exit code 1/);
    expect(said).toMatch(/PORT: /);
    expect(said).toMatch(/AMQP_URL: must be a URL with scheme amqp or amqps/);
  });

  it('when NODE_ENV is production and INTERNAL_TOKEN_SECRET is missing, then it refuses to start', async () => {
    const said = await failedStart({ NODE_ENV: 'production', INTERNAL_TOKEN_SECRET: '' });
    expect(said).toMatch(/INTERNAL_TOKEN_SECRET/);
  });
});

describe('a service told to stop', () => {
  it('when it is sent SIGTERM, then it stops gracefully with exit code 0 and says so', async () => {
    const system = await TestSystem.start({ name: 'sigterm', backends: ['catalog'], gateway: false, processes: true });
    try {
      expect(await system.service('catalog').stop()).toBe(0);
      expect(system.service('catalog').logs.some((line) => line.includes('"msg":"stopped"'))).toBe(true);
    } finally {
      await system.stop();
    }
  });
});
