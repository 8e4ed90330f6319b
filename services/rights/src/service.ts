import { directoriesEnvShape, env, historyEnvShape, publicApiShape, secretRing, serviceEnvShape } from '@rs/config';
import { startSkuDirectory } from '@rs/catalog-client';
import { ClockTimes, NowFor } from '@rs/http';
import { followClockDeletions } from '@rs/messaging';
import { defineService, serveHttp, startPurge, startRelay } from '@rs/runtime';
import { z } from 'zod';
import { RightsUseCases } from './app/rights';
import { ConsumptionUseCases, meteringParts } from './app/consumptions';
import { ReservationUseCases } from './app/reservations';
import { RightCommands } from './app/right-commands';
import { ConsumptionStore } from './store/consumption-store';
import { DEFAULT_MAX_HOLDS } from './domain/metering';
import { RightTokens } from './app/right-tokens';
import { ExpiryWrites } from './app/expiry-writes';
import { SigningKeyStore } from './store/signing-key-store';
import { rightsRoutes } from './http/routes';
import { consumeRightsCommands } from './messaging/commands';
import { RightMessages } from './messages/events';
import { RightStore } from './store/right-store';
import { rightHistory } from './store/right-history';

export const Config = z.object({
  ...serviceEnvShape('rights'),
  ...publicApiShape,
  ...historyEnvShape,
  ...directoriesEnvShape,
  /** docs/operations.md: the longest lifetime of a signed right token, and the key of its keys at rest. */
  RIGHT_TOKEN_TTL_S: z.coerce.number().int().min(1).max(86_400).default(300),
  RIGHT_TOKEN_KEY_SECRET: env.secret.optional(),
  RIGHT_TOKEN_KEY_SECRET_PREVIOUS: env.secret.optional(),
  /** docs/api.md "Reservations": the open reservations (and consumptions under way) one right may hold. */
  RIGHT_MAX_HOLDS: z.coerce.number().int().min(1).max(10_000).default(DEFAULT_MAX_HOLDS),
});

/**
 * The rights service (docs/api.md): the rights API, `rights.issue` and `rights.expire` from the
 * subscriptions service and the scheduler, and right events through its outbox.
 */
export const start = defineService('rights', Config, async (runtime) => {
  const { config, clock } = runtime;
  const store = await runtime.migrated(new RightStore(runtime.db));
  const history = await runtime.migrated(rightHistory(runtime.db.db!, config.HISTORY_RETENTION_DAYS));
  startPurge(runtime, history.retained);
  startRelay(runtime, 'rights', history);
  // Consumptions across rights and reservations (docs/decisions/0045): their records tell the scheduler when their holds lapse.
  const records = await runtime.migrated(new ConsumptionStore(runtime.db));
  startPurge(runtime, records.retained);
  startRelay(runtime, 'consumptions');
  const skus = await startSkuDirectory(runtime, config.CATALOG_URL);
  const messages = new RightMessages(config.PUBLIC_BASE_URL);
  const clocks = new ClockTimes({ schedulerUrl: config.SCHEDULER_URL, signer: runtime.signer, service: 'rights' });
  // Every use case's "now" for a right: its test clock's time, or real time (docs/decisions/0048).
  const time = new NowFor(clock, clocks);
  const rights = new RightsUseCases({ store, history, skus, messages, time });
  const commands = new RightCommands({ store, skus, messages, time });
  const metering = meteringParts({ rights: store, records, skus, messages, time, maxHolds: config.RIGHT_MAX_HOLDS });
  const consumptions = new ConsumptionUseCases(metering);
  const reservations = new ReservationUseCases(metering);
  const keys = new SigningKeyStore(runtime.db, secretRing(config, 'RIGHT_TOKEN_KEY_SECRET'));
  const tokens = new RightTokens(rights, keys, {
    issuer: config.PUBLIC_BASE_URL,
    ttlS: config.RIGHT_TOKEN_TTL_S,
    clock,
  });
  // docs/api.md: a provider may fetch the JWKS before any token exists.
  await tokens.ensureSigningKey();
  const expiryWrites = new ExpiryWrites((expired) => commands.writeExpiries(expired), runtime.logger);
  runtime.onStop(() => expiryWrites.drain());
  await followClockDeletions(runtime.broker, 'rights', (clockId) => commands.removeClock(clockId), runtime.logger);
  await consumeRightsCommands({
    broker: runtime.broker,
    rights: commands,
    reservations,
    history,
    logger: runtime.logger,
    clock,
    expiryWrites,
  });
  return serveHttp(runtime, config.PORT, {
    realm: config.AUTH_REALM,
    jsonLimit: '64kb',
    routes: (app) =>
      app.use(rightsRoutes({ rights, commands, consumptions, reservations, tokens }, config.PUBLIC_BASE_URL)),
  });
});
