import { counter, gauge } from '@rs/telemetry/metrics';

export const messagesHandled = counter(
  'amqp_messages_handled_total',
  'Messages consumed, by queue and outcome (ok, retried, dead_lettered, dropped)',
  ['queue', 'outcome'],
);
export const messagesPublished = counter(
  'amqp_messages_published_total',
  'Messages confirmed by the broker, by exchange',
  ['exchange'],
);
export const brokerConnected = gauge('amqp_connected', '1 while the broker connection is open');
