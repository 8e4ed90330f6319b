import { CommandTypes, createCloudEvent, Exchanges, type RightsExpireData } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import client from 'prom-client';
import type { ExpiryStore } from './store/expiry-store';

const expiryCommands = new client.Counter({
  name: 'scheduler_expiry_commands_total',
  help: 'rights.expire commands published',
});

export interface ExpirySchedulerOptions {
  expiries: ExpiryStore;
  broker: AmqpClient;
  logger: Logger;
  tickMs: number;
  /** A command not followed by right.expired within this time is sent again. */
  resendAfterMs?: number;
  batchSize?: number;
  clock?: () => Date;
}

/**
 * Emits one `rights.expire` per right whose interval has ended (DESIGN.md 3 "Rights"),
 * every tick. Replicas claim each right before publishing, and the rights service's
 * expiry is idempotent, so several schedulers never expire a right twice.
 */
export class ExpiryScheduler {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: ExpirySchedulerOptions) {}

  start(): void {
    const tick = () => {
      this.timer = setTimeout(() => {
        this.running = this.runOnce()
          .catch((error: unknown) => this.options.logger.warn({ err: error }, 'expiry tick failed'))
          .finally(() => !this.stopped && tick());
      }, this.options.tickMs);
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  async runOnce(): Promise<number> {
    const { expiries, broker } = this.options;
    if (!broker.connected) return 0;
    const now = (this.options.clock ?? (() => new Date()))();
    const resendBefore = new Date(now.getTime() - (this.options.resendAfterMs ?? 10_000));
    let sent = 0;
    for (const expiry of await expiries.due(now, resendBefore, this.options.batchSize ?? 500)) {
      if (!(await expiries.claim(expiry, now))) continue; // another scheduler has it
      const command = createCloudEvent<RightsExpireData>({
        source: '/scheduler',
        type: CommandTypes.rightsExpire,
        subject: expiry.rightId,
        data: { rightId: expiry.rightId, connectId: expiry.connectId },
        time: now,
      });
      try {
        await broker.publishEvent(Exchanges.commands, command);
        sent += 1;
        expiryCommands.inc();
      } catch (error) {
        this.options.logger.warn({ err: error, right_id: expiry.rightId }, 'cannot publish rights.expire yet');
        await expiries.release(expiry);
        break;
      }
    }
    return sent;
  }
}
