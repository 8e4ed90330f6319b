import { redactUrl } from '@rs/config';
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { CLOUD_EVENT_CONTENT_TYPE, routingKeyOf, type CloudEvent } from '@rs/contracts';
import { RealTimeFirst } from './real-time-first';
import type { Logger } from '@rs/logging';
import amqp, { type ChannelModel, type ConfirmChannel, type Options } from 'amqplib';
import { brokerConnected, messagesPublished } from './metrics';
import { declareTopology } from './topology';
import { contextFrom, type TraceCarrier } from '@rs/telemetry/trace-context';

export class BrokerUnavailable extends Error {
  override readonly name = 'BrokerUnavailable';
}

export interface AmqpClientOptions {
  /**
   * The broker, or the nodes of a cluster separated by commas (AMQP_URL, docs/decisions/0033):
   * tried in turn, from the first, and after a lost connection from the next one.
   */
  url: string;
  /** Shown as connection_name in the broker's management UI. */
  connectionName: string;
  logger: Logger;
  /** Back-off between connection attempts: doubles from min to max, with jitter. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  confirmTimeoutMs?: number;
}

/** Work to redo on every new connection: declare topology, start consumers. */
export type ConnectionSetup = (connection: ChannelModel) => Promise<void>;

const tracer = trace.getTracer('@rs/messaging');

/**
 * One broker connection per process (docs/architecture.md): declares the fixed exchanges, keeps
 * a confirm channel for publishing, reconnects by itself with back-off after any loss,
 * and re-runs the registered setups (consumers) on each new connection.
 */
export class AmqpClient extends EventEmitter<{ connected: []; disconnected: [] }> {
  private connection: ChannelModel | undefined;
  private publishChannel: ConfirmChannel | undefined;
  private readonly setups: ConnectionSetup[] = [];
  private connecting: Promise<void> | undefined;
  private closing = false;
  private readonly log: Logger;
  /**
   * This process's order between real and simulated time (docs/decisions/0061): its consumers
   * run their messages through it, and so does any other work of test clocks.
   */
  readonly realTimeFirst = new RealTimeFirst();

  constructor(private readonly options: AmqpClientOptions) {
    super();
    this.log = options.logger.child({ component: 'amqp' });
    this.nodeUrls = options.url.split(',').map((url) => url.trim());
  }

  get connected(): boolean {
    return this.publishChannel !== undefined;
  }

  /** Starts connecting in the background; see `waitUntilConnected`. */
  /** The nodes AMQP_URL names, and which one the next connection attempt tries. */
  private readonly nodeUrls: string[];
  private nodeIndex = 0;

  start(): void {
    this.closing = false;
    this.connecting ??= this.connectLoop().finally(() => (this.connecting = undefined));
  }

  async waitUntilConnected(timeoutMs: number): Promise<void> {
    if (this.connected) return;
    const connected = new Promise<void>((resolve) => this.once('connected', resolve));
    const timer = sleep(timeoutMs, undefined, { ref: false }).then(() => {
      throw new BrokerUnavailable(`cannot reach RabbitMQ at ${redactUrl(this.options.url)} within ${timeoutMs} ms`);
    });
    await Promise.race([connected, timer]);
  }

  /** Registers work to run on this and every later connection. */
  async addSetup(setup: ConnectionSetup): Promise<void> {
    this.setups.push(setup);
    if (this.connection) await setup(this.connection);
  }

  async close(): Promise<void> {
    this.closing = true;
    const connection = this.connection;
    this.connection = undefined;
    this.publishChannel = undefined;
    await connection?.close().catch(() => undefined);
    await this.connecting?.catch(() => undefined);
  }

  /**
   * Publishes one message and resolves when the broker confirmed it (publisher confirms).
   * Rejects when disconnected, nacked or unconfirmed in time: the caller keeps the message.
   */
  async publish(exchange: string, routingKey: string, content: Buffer, options: Options.Publish): Promise<void> {
    const channel = this.publishChannel;
    if (!channel) throw new BrokerUnavailable('not connected to RabbitMQ');
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new BrokerUnavailable('publish not confirmed in time')),
        this.options.confirmTimeoutMs ?? 10_000,
      );
      try {
        channel.publish(exchange, routingKey, content, options, (error) => {
          clearTimeout(timer);
          if (error) reject(error instanceof Error ? error : new Error(String(error)));
          else resolve();
        });
      } catch (error) {
        clearTimeout(timer);
        reject(error);
      }
    });
    messagesPublished.inc({ exchange: exchange || '(default)' });
  }

  /**
   * Publishes a CloudEvent in structured mode with the AMQP properties of docs/architecture.md and
   * the W3C trace context of `traceCarrier` (the trace of the change that caused it).
   */
  async publishEvent(exchange: string, event: CloudEvent, traceCarrier?: TraceCarrier): Promise<void> {
    const routingKey = routingKeyOf(exchange, event);
    const parent = traceCarrier ? contextFrom(traceCarrier) : context.active();
    const span = tracer.startSpan(
      `${exchange} publish`,
      {
        kind: SpanKind.PRODUCER,
        attributes: {
          'messaging.system': 'rabbitmq',
          'messaging.destination.name': exchange,
          'messaging.rabbitmq.destination.routing_key': routingKey,
          'messaging.message.id': event.id,
        },
      },
      parent,
    );
    const spanContext = trace.setSpan(parent, span);
    const headers: Record<string, string> = {};
    propagation.inject(spanContext, headers);
    try {
      await context.with(spanContext, () =>
        this.publish(exchange, routingKey, Buffer.from(JSON.stringify(event)), {
          persistent: true,
          messageId: event.id,
          type: event.type,
          contentType: CLOUD_EVENT_CONTENT_TYPE,
          timestamp: Math.floor(Date.parse(event.time) / 1000),
          appId: event.source,
          headers,
        }),
      );
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  }

  /**
   * Messages ready in each of `queues` (passive declares, on a channel of their own: an
   * absent queue closes only that channel); nothing while disconnected. For /metrics.
   * @public (the queue gauges' `QueueCounter`)
   */
  async messageCounts(queues: readonly string[]): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    const connection = this.connection;
    if (!connection) return counts;
    const channel = await connection.createChannel();
    channel.on('error', () => undefined);
    try {
      for (const queue of queues) counts.set(queue, (await channel.checkQueue(queue)).messageCount);
    } finally {
      await channel.close().catch(() => undefined);
    }
    return counts;
  }

  private async connectLoop(): Promise<void> {
    const min = this.options.reconnectMinMs ?? 250;
    const max = this.options.reconnectMaxMs ?? 10_000;
    for (let attempt = 0; !this.closing; attempt++) {
      let connection: ChannelModel | undefined;
      try {
        const url = this.nodeUrls[this.nodeIndex % this.nodeUrls.length]!;
        connection = await amqp.connect(withHeartbeat(url), {
          clientProperties: { connection_name: this.options.connectionName },
        });
        connection.on('error', (error: Error) => this.log.warn({ err: error }, 'broker connection error'));
        connection.on('close', () => this.onClosed(connection!));
        const channel = await connection.createConfirmChannel();
        channel.on('error', (error: Error) => this.log.warn({ err: error }, 'publish channel error'));
        // A channel the broker closed (e.g. after a protocol error) is replaced by reconnecting.
        channel.on('close', () => {
          if (this.publishChannel === channel) void connection?.close().catch(() => undefined);
        });
        await declareTopology(connection, channel, this.log);
        if (this.closing) {
          await connection.close().catch(() => undefined);
          return;
        }
        this.connection = connection;
        this.publishChannel = channel;
        for (const setup of this.setups) await setup(connection);
        brokerConnected.set(1);
        this.log.info({ attempt, node: redactUrl(url) }, 'connected to RabbitMQ');
        this.emit('connected');
        return;
      } catch (error) {
        if (this.connection === connection) {
          this.connection = undefined;
          this.publishChannel = undefined;
        }
        await connection?.close().catch(() => undefined);
        this.nodeIndex += 1; // the next node of a cluster
        const delay = Math.min(max, min * 2 ** Math.min(attempt, 16)) * (0.5 + Math.random() / 2);
        this.log.warn({ err: error, attempt, retry_in_ms: Math.round(delay) }, 'cannot connect to RabbitMQ; retrying');
        await sleep(delay);
      }
    }
  }

  private onClosed(connection: ChannelModel): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.publishChannel = undefined;
    brokerConnected.set(0);
    this.emit('disconnected');
    if (this.closing) return;
    this.nodeIndex += 1; // a node that dropped us may be going down: the next one first
    this.log.warn('broker connection lost; reconnecting');
    this.start();
  }
}

/** Heartbeats detect a dead peer within seconds; the URL may set its own. */
function withHeartbeat(url: string): string {
  const parsed = new URL(url);
  if (!parsed.searchParams.has('heartbeat')) parsed.searchParams.set('heartbeat', '10');
  return parsed.toString();
}
