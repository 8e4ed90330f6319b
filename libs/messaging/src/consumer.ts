import { context, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { clockLaneOf } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import type { AmqpClient } from './amqp-client';
import { batchItemsFailed, messagesHandled, watchQueue } from './metrics';
import { DEFAULT_RETRY_DELAYS_MS, declareDurableQueue, deadLetterQueueOf, retryQueueOf } from './topology';
import { contextFrom } from '@rs/telemetry/trace-context';

export interface Binding {
  exchange: string;
  routingKey: string;
}

export interface Delivery {
  messageId: string | undefined;
  routingKey: string;
  redelivered: boolean;
  attempt: number;
}

/**
 * An item of a handled batch that failed on its own (docs/api.md): dead-lettered as a
 * one-item command of its own, so the rest of its message is acked and never retried with it.
 */
export interface FailedItem {
  /** Which message of the batch it belongs to (0 for `handle`). */
  message: number;
  /** The one-item command's `data`. */
  data: unknown;
  /** The item's entity id, for the log and the dead-lettered copy's id. */
  id: string;
  error: unknown;
}

/** What a handler resolves to: nothing, or the items that failed alone. */
export type Handled = void | readonly FailedItem[];

export interface ConsumerSpec<T> {
  /**
   * A durable quorum queue shared by the replicas of a service, with its retry queues and
   * `<queue>.dlq` beside it (`durableQueues`); or null for a private, exclusive queue of this process (for
   * caches that every replica must fill), which drops what it cannot handle.
   */
  queue: string | null;
  bindings: Binding[];
  /** Turns the JSON body into a message; throws on what does not parse (dead-lettered at once). */
  parse: (body: unknown) => T;
  /** The effect; resolves once it is durable. Must be idempotent: delivery is at least once. */
  handle: (message: T, delivery: Delivery) => Promise<Handled>;
  prefetch?: number;
  /** Attempts before a failing message goes to the dead-letter queue. */
  maxAttempts?: number;
  /** Delay before attempt n+1 is `retryDelaysMs[n-1]` (the last one repeats); one retry queue each. */
  retryDelaysMs?: readonly number[];
  /**
   * Handle deliveries in batches (docs/architecture.md "Scale"): up to `max` messages that arrive
   * within `lingerMs` of the first go to `handle` together and are acked once it resolves.
   * A batch that fails is handled again message by message through the spec's `handle`,
   * so one bad message is retried or dead-lettered alone. `prefetch` should exceed `max`.
   */
  batch?: {
    max: number;
    lingerMs: number;
    handle: (messages: Array<{ message: T; delivery: Delivery }>) => Promise<Handled>;
  };
  /**
   * The durable queue's clock lane (docs/decisions/0054): `<queue>.clock`, consumed beside it
   * with the same handlers, two batches of half the size in flight (`laneShare`), so that a
   * rehearsal's work never queues ahead of real time's and takes a bounded share of the
   * consumer. Messages
   * routed there (`bindings`: commands) wait there; one for the lane (`holds`) that reaches the
   * queue itself (an event: its routing key is its type for every consumer) is moved there as
   * soon as it is read.
   */
  lane?: { holds: (message: T) => boolean; bindings?: Binding[] };
  /**
   * The queue carries only the work of test clocks (a lane, a clock's deletion): each message or
   * batch waits its turn behind real time's (`RealTimeFirst`, docs/decisions/0061).
   */
  simulated?: boolean;
}

/**
 * A lane's share of its queue's consumer while real time is quiet: batches half the size, two
 * in flight (half its prefetch when it does not batch). Not half the prefetch when it batches: a
 * queue given more batches in flight for real time's throughput would give them to the
 * rehearsals too, and real time's deadlines are what the lane protects.
 */
const laneShare = (n: number) => Math.max(2, Math.ceil(n / 2));

interface Parsed<T> {
  raw: ConsumeMessage;
  message: T;
  delivery: Delivery;
}

const ATTEMPT_HEADER = 'x-rs-attempt';
const ERROR_HEADER = 'x-rs-error';
const tracer = trace.getTracer('@rs/messaging');

/**
 * Consumes with manual acks (docs/architecture.md): a message is acked after its effect is durable,
 * a failure is retried with back-off through the retry queue of its delay (a TTL queue that
 * dead-letters back), and after the last attempt, or at once when it does not parse, it is
 * moved to `<queue>.dlq`; so is one the broker gave up on (`DELIVERY_LIMIT`). Retry and dead-letter copies are confirmed before the original is acked,
 * so nothing is lost if the process dies in between.
 */
export async function consume<T>(client: AmqpClient, spec: ConsumerSpec<T>, logger: Logger): Promise<void> {
  const maxAttempts = spec.maxAttempts ?? 5;
  const order = client.realTimeFirst;
  const inTurn = <R>(work: () => Promise<R>) => (spec.simulated ? order.simulated(work) : order.real(work));
  const delays = spec.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
  if (spec.queue !== null) watchQueue(client, spec.queue);
  const lane = spec.lane && spec.queue !== null ? clockLaneOf(spec.queue) : undefined;
  // Declared and consumed first: nothing is moved into a queue that does not exist yet.
  if (lane) await consume(client, laneSpecOf(spec, lane), logger.child({ lane: 'clock' }));
  await client.addSetup(async (connection) => {
    const channel = await connection.createConfirmChannel();
    channel.on('error', (error: Error) => logger.warn({ err: error }, 'consumer channel error'));
    await channel.prefetch(spec.prefetch ?? 16);
    const queue = await declareQueues(connection, channel, spec, delays, logger);
    const log = logger.child({ queue });
    let pending: Array<Parsed<T>> = [];
    let lingering: NodeJS.Timeout | undefined;
    const flush = () => {
      clearTimeout(lingering);
      lingering = undefined;
      const batch = pending;
      pending = [];
      if (batch.length > 0) void inTurn(() => handleBatch(channel, queue, batch, log));
    };
    await channel.consume(queue, (raw) => {
      if (!raw) return;
      void parseDelivery(channel, queue, raw, log).then((parsed) => {
        if (!parsed) return;
        if (lane && spec.lane!.holds(parsed.message)) return moveToLane(channel, queue, lane, parsed.raw);
        if (!spec.batch) return inTurn(() => handleOne(channel, queue, parsed, log));
        pending.push(parsed);
        if (pending.length >= spec.batch.max) flush();
        else lingering ??= setTimeout(flush, spec.batch.lingerMs);
      });
    });
    log.info('consuming');
  });

  /** Parses a delivery; what does not parse is dead-lettered at once (undefined). */
  async function parseDelivery(
    channel: ConfirmChannel,
    queue: string,
    raw: ConsumeMessage,
    log: Logger,
  ): Promise<Parsed<T> | undefined> {
    const headers = raw.properties.headers ?? {};
    const delivery: Delivery = {
      messageId: raw.properties.messageId as string | undefined,
      routingKey: raw.fields.routingKey,
      redelivered: raw.fields.redelivered,
      attempt: Number(headers[ATTEMPT_HEADER] ?? 0) + 1,
    };
    try {
      return { raw, delivery, message: spec.parse(JSON.parse(raw.content.toString('utf8'))) };
    } catch (error) {
      const durable = spec.queue !== null;
      log.error({ err: error, message_id: delivery.messageId }, 'message does not parse; dead-lettering');
      await settle(channel, raw, () => (durable ? deadLetter(channel, queue, raw, error) : undefined));
      messagesHandled.inc({ queue, outcome: durable ? 'dead_lettered' : 'dropped' });
      return undefined;
    }
  }

  /** Moves a message into the lane (a confirmed copy, then the ack): it is handled there. */
  async function moveToLane(channel: ConfirmChannel, queue: string, lane: string, raw: ConsumeMessage) {
    await settle(channel, raw, () => republish(channel, lane, raw, {}));
    messagesHandled.inc({ queue, outcome: 'moved_to_lane' });
  }

  /** One span for the batch, a child of the first message's trace and linked to the others'. */
  async function handleBatch(channel: ConfirmChannel, queue: string, batch: Array<Parsed<T>>, log: Logger) {
    const contexts = batch.map(({ raw }) => contextFrom(raw.properties.headers ?? {}));
    const span = processSpan(queue, contexts[0]!, { 'messaging.batch.message_count': batch.length }, contexts);
    try {
      const failed = await context.with(trace.setSpan(contexts[0]!, span), () =>
        spec.batch!.handle(batch.map(({ message, delivery }) => ({ message, delivery }))),
      );
      await deadLetterItems(channel, queue, batch, failed, log);
      for (const { raw } of batch) channel.ack(raw);
      messagesHandled.inc({ queue, outcome: 'ok' }, batch.length);
      log.info({ messages: batch.length }, 'batch handled');
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
      log.warn({ err: error, messages: batch.length }, 'batch failed; handling its messages one by one');
      for (const parsed of batch) await handleOne(channel, queue, parsed, log);
    } finally {
      span.end();
    }
  }

  async function handleOne(channel: ConfirmChannel, queue: string, parsed: Parsed<T>, log: Logger) {
    const { raw: message, delivery } = parsed;
    const { attempt } = delivery;
    const durable = spec.queue !== null;
    const headers = message.properties.headers ?? {};
    // amqplib's instrumentation may already have started a consumer span from the headers.
    const parent = trace.getSpan(context.active()) ? context.active() : contextFrom(headers);
    const span = processSpan(queue, parent, { 'messaging.message.id': delivery.messageId ?? '' });
    try {
      const failed = await context.with(trace.setSpan(parent, span), () => spec.handle(parsed.message, delivery));
      await deadLetterItems(channel, queue, [parsed], failed, log);
      channel.ack(message);
      messagesHandled.inc({ queue, outcome: 'ok' });
      log.info({ message_id: delivery.messageId, routing_key: delivery.routingKey, attempt }, 'message handled');
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
      if (!durable) {
        log.error({ err: error, message_id: delivery.messageId }, 'message failed; dropped');
        await settle(channel, message, () => undefined);
        messagesHandled.inc({ queue, outcome: 'dropped' });
      } else if (attempt < maxAttempts) {
        const delay = delays[Math.min(attempt - 1, delays.length - 1)] ?? 1_000;
        log.warn(
          { err: error, message_id: delivery.messageId, attempt, retry_in_ms: delay },
          'message failed; will retry',
        );
        await settle(channel, message, () => retryLater(channel, queue, message, attempt, delay));
        messagesHandled.inc({ queue, outcome: 'retried' });
      } else {
        log.error(
          { err: error, message_id: delivery.messageId, attempt },
          'message failed for the last time; dead-lettering',
        );
        await settle(channel, message, () => deadLetter(channel, queue, message, error));
        messagesHandled.inc({ queue, outcome: 'dead_lettered' });
      }
    } finally {
      span.end();
    }
  }
}

/**
 * docs/api.md: each item that failed alone is logged with its id, counted, and dead-lettered
 * as a one-item copy of its command (same type; an id derived from the command's and the
 * item's, so a redelivered command dead-letters the same copy), confirmed before the command
 * is acked. Throws when a copy is not confirmed: the command then stays unacked and comes back.
 */
async function deadLetterItems(
  channel: ConfirmChannel,
  queue: string,
  batch: ReadonlyArray<{ raw: ConsumeMessage }>,
  failed: Handled,
  log: Logger,
): Promise<void> {
  for (const item of failed ?? []) {
    const { raw } = batch[item.message]!;
    const command = JSON.parse(raw.content.toString('utf8')) as { id: string; type: string };
    const single = { ...command, id: `${command.id}.${item.id}`, data: item.data };
    const reason = String((item.error as Error)?.message ?? item.error).slice(0, 500);
    log.error(
      { err: item.error, command: command.type, item: item.id, message_id: command.id },
      'an item of a batch failed alone; dead-lettering it as a one-item command',
    );
    await republish(
      channel,
      deadLetterQueueOf(queue),
      raw,
      { [ERROR_HEADER]: reason, 'x-rs-original-routing-key': raw.fields.routingKey, 'x-rs-failed-item': item.id },
      Buffer.from(JSON.stringify(single)),
      single.id,
    );
    batchItemsFailed.inc({ command: command.type });
  }
}

/** The consumer span of handling one message or a batch (OpenTelemetry messaging conventions). */
function processSpan(queue: string, parent: Context, attributes: Attributes, linked: Context[] = []): Span {
  return tracer.startSpan(
    `${queue} process`,
    {
      kind: SpanKind.CONSUMER,
      attributes: { 'messaging.system': 'rabbitmq', 'messaging.destination.name': queue, ...attributes },
      links: linked
        .map((other) => trace.getSpanContext(other))
        .filter((other) => other !== undefined)
        .map((other) => ({ context: other })),
    },
    parent,
  );
}

function laneSpecOf<T>(spec: ConsumerSpec<T>, lane: string): ConsumerSpec<T> {
  const batch = spec.batch && { ...spec.batch, max: laneShare(spec.batch.max) };
  return {
    ...spec,
    queue: lane,
    bindings: spec.lane?.bindings ?? [],
    lane: undefined,
    simulated: true,
    ...(batch ? { prefetch: 2 * batch.max, batch } : { prefetch: laneShare(spec.prefetch ?? 16) }),
  };
}

async function declareQueues(
  connection: ChannelModel,
  channel: Channel,
  spec: Pick<ConsumerSpec<unknown>, 'queue' | 'bindings'>,
  retryDelaysMs: readonly number[],
  logger: Logger,
): Promise<string> {
  let queue: string;
  if (spec.queue === null) {
    queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
  } else {
    queue = spec.queue;
    await declareDurableQueue(connection, queue, logger, retryDelaysMs);
  }
  for (const binding of spec.bindings) await channel.bindQueue(queue, binding.exchange, binding.routingKey);
  return queue;
}

/** Runs `forward` (a confirmed republish), then acks; if it fails the message stays unacked and comes back. */
async function settle(channel: ConfirmChannel, message: ConsumeMessage, forward: () => Promise<void> | undefined) {
  try {
    await forward();
    channel.ack(message);
  } catch {
    // Channel gone: the broker redelivers the unacked message after reconnect.
  }
}

function republish(
  channel: ConfirmChannel,
  queue: string,
  message: ConsumeMessage,
  headers: Record<string, unknown>,
  content: Buffer = message.content,
  messageId: string | undefined = message.properties.messageId as string | undefined,
) {
  return new Promise<void>((resolve, reject) => {
    channel.sendToQueue(
      queue,
      content,
      {
        ...message.properties,
        messageId,
        headers: { ...message.properties.headers, ...headers },
        persistent: true,
        // A copy never expires (its retry queue's TTL is the queue's own).
        expiration: undefined,
      },
      (error) => (error ? reject(error) : resolve()),
    );
  });
}

const retryLater = (channel: ConfirmChannel, queue: string, message: ConsumeMessage, attempt: number, delay: number) =>
  republish(channel, retryQueueOf(queue, delay), message, { [ATTEMPT_HEADER]: attempt });

const deadLetter = (channel: ConfirmChannel, queue: string, message: ConsumeMessage, error: unknown) =>
  republish(channel, deadLetterQueueOf(queue), message, {
    [ERROR_HEADER]: String((error as Error)?.message ?? error).slice(0, 500),
    'x-rs-original-routing-key': message.fields.routingKey,
  });
