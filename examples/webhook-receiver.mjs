// A webhook receiver (docs/webhooks.md): registers an endpoint for right events, verifies each
// delivery's Standard Webhooks signature with the `standardwebhooks` package, and handles each
// event once, however many times it is delivered (by `webhook-id`).
//   RECEIVER_PORT=9000 RECEIVER_URL=https://hooks.example.com/platform node examples/webhook-receiver.mjs
// (The platform delivers only to https and public addresses unless WEBHOOK_ALLOW_PRIVATE_TARGETS.)
import http from 'node:http';
import { createPlatformClient, ok } from '@rs/client';
import { Webhook } from 'standardwebhooks';
import { baseUrl, credentials, report } from './config.mjs';

const port = Number(process.env.RECEIVER_PORT ?? 9000);
const platform = createPlatformClient({ baseUrl, credentials: credentials() });
const server = http.createServer();
await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
const url = process.env.RECEIVER_URL ?? `http://127.0.0.1:${server.address().port}/`;
const endpoint = ok(await platform.POST('/webhooks/endpoints', { body: { url, events: ['right.*'] } }));
const webhook = new Webhook(endpoint.secret);
/** Ids handled already: a real receiver keeps them in its database for longer than the retries last. */
const handled = new Set();

server.on('request', (request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let event;
    try {
      event = webhook.verify(body, request.headers); // throws on a bad or stale signature
    } catch (error) {
      report({ refused: error.message });
      response.writeHead(401).end();
      return;
    }
    const id = request.headers['webhook-id'];
    if (handled.has(id)) report({ duplicate: id });
    else {
      handled.add(id);
      report({ received: event.type, id, subject: event.subject, sequence: event.data.sequence });
    }
    response.writeHead(204).end(); // acknowledged either way, so the platform stops retrying
  });
});
report({ listening: url, endpointId: endpoint.endpointId });
