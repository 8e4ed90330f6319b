import { Exchanges, type CloudEvent } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { AmqpClient } from '@rs/messaging';
import client from 'prom-client';
import type { DueItem, DueStore } from './store/due-store';

const commandsSent = new client.Counter({
  name: 'scheduler_commands_total',
  help: 'Commands published by the scheduler, by type',
  labelNames: ['type'] as const,
});

export interface DueCommandsOptions<Data> {
  store: DueStore<Data>;
  toCommand: (item: DueItem<Data>, now: Date) => CloudEvent;
  broker: AmqpClient;
  logger: Logger;
  /** A command not answered by a newer event within this time is sent again. */
  resendAfterMs?: number;
  batchSize?: number;
}

/**
 * Publishes one command per due item, every tick (DESIGN.md 1: the scheduler decides when).
 * Replicas claim each item before publishing, and the consumers are idempotent, so several
 * schedulers never cause an effect twice.
 */
export class DueCommands<Data> {
  constructor(private readonly options: DueCommandsOptions<Data>) {}

  async runOnce(now: Date): Promise<number> {
    const { store, broker } = this.options;
    if (!broker.connected) return 0;
    const resendBefore = new Date(now.getTime() - (this.options.resendAfterMs ?? 60_000));
    let sent = 0;
    for (const item of await store.due(now, resendBefore, this.options.batchSize ?? 500)) {
      if (!(await store.claim(item, now))) continue; // another scheduler has it
      const command = this.options.toCommand(item, now);
      try {
        await broker.publishEvent(Exchanges.commands, command);
        sent += 1;
        commandsSent.inc({ type: command.type });
      } catch (error) {
        this.options.logger.warn({ err: error, item: item.id }, `cannot publish ${command.type} yet`);
        await store.release(item);
        break;
      }
    }
    return sent;
  }
}

/** Runs `tick` every `tickMs` until stopped, one run at a time. */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly tickMs: number,
    private readonly tick: () => Promise<unknown>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .catch((error: unknown) => this.logger.warn({ err: error }, 'scheduler tick failed'))
        .finally(() => !this.stopped && this.start());
    }, this.tickMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
