import { DEFAULT_PORTS, env, serviceEnvShape } from '@rs/config';
import { runBackend, serveInternalHttp } from '@rs/runtime';
import { z } from 'zod';

const Config = z.object({
  ...serviceEnvShape('scheduler'),
  PORT: env.port.default(DEFAULT_PORTS.scheduler),
});

/**
 * The scheduler: the only component that decides when (DESIGN.md 1). It holds its
 * database and broker connection and serves health and metrics; renewal and expiry
 * commands come with the rights and subscriptions issues.
 */
runBackend('scheduler', Config, async (runtime) => {
  const server = await serveInternalHttp(runtime, runtime.config.PORT, { routes: () => undefined });
  return { stop: () => server.close() };
});
