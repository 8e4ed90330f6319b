import type { Logger } from '@rs/logging';
import { ConfigError } from '@rs/config';

export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Runs a service process: starts it, and on SIGTERM or SIGINT stops it gracefully (stop
 * accepting, drain, close), then runs `finally` hooks such as flushing traces. A failed
 * start or an unexpected error ends the process with a non-zero code and a clear message.
 */
export function runService(
  logger: Logger,
  start: () => Promise<Stoppable>,
  options: { finally?: Array<() => Promise<void>>; stopTimeoutMs?: number } = {},
): void {
  const finalize = async (code: number) => {
    for (const hook of options.finally ?? []) await hook().catch(() => undefined);
    logger.flush();
    process.exit(code);
  };
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled promise rejection');
    void finalize(1);
  });
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    void finalize(1);
  });

  start().then(
    (service) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'stopping');
        const deadline = setTimeout(() => {
          logger.error('graceful stop took too long; exiting');
          void finalize(1);
        }, options.stopTimeoutMs ?? 15_000);
        deadline.unref();
        service.stop().then(
          () => {
            logger.info('stopped');
            void finalize(0);
          },
          (error: unknown) => {
            logger.error({ err: error }, 'error while stopping');
            void finalize(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
    },
    (error: unknown) => {
      if (error instanceof ConfigError) logger.fatal(error.message);
      else logger.fatal({ err: error }, `cannot start: ${(error as Error)?.message ?? String(error)}`);
      void finalize(1);
    },
  );
}
