import client from 'prom-client';

export const messagesHandled = new client.Counter({
  name: 'amqp_messages_handled_total',
  help: 'Messages consumed, by queue and outcome (ok, retried, dead_lettered, dropped)',
  labelNames: ['queue', 'outcome'] as const,
});

export const messagesPublished = new client.Counter({
  name: 'amqp_messages_published_total',
  help: 'Messages confirmed by the broker, by exchange',
  labelNames: ['exchange'] as const,
});

export const brokerConnected = new client.Gauge({
  name: 'amqp_connected',
  help: '1 while the broker connection is open',
});
