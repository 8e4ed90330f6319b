import { InternalTokenSigner } from '@rs/http';
import { basicCaller, freePort, RabbitAdmin, TEST_INTERNAL_SECRET, testName } from '@rs/testing';
import { manualClock } from '@rs/time';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { start } from '../src/service';

// A service started in this process with start(env, options), on a pinned clock:
// the clock reaches the use cases through the runtime, and stop() releases everything.

const clock = manualClock('2030-01-02T03:04:05Z');
const vhost = testName('catalog_in_process');
const rabbit = new RabbitAdmin(process.env.RABBITMQ_MANAGEMENT_URL!);
let service: Awaited<ReturnType<typeof start>>;
let mongoUrl: string;

beforeAll(async () => {
  await rabbit.createVhost(vhost);
  const amqp = new URL(process.env.AMQP_URL!);
  amqp.pathname = `/${vhost}`;
  const mongo = new URL(process.env.MONGODB_URL!);
  mongo.pathname = `/${vhost}`;
  mongoUrl = mongo.toString();
  service = await start(
    {
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      PORT: String(await freePort()),
      AMQP_URL: amqp.toString(),
      CATALOG_MONGODB_URL: mongoUrl,
      INTERNAL_TOKEN_SECRET: TEST_INTERNAL_SECRET,
    },
    { clock },
  );
});
afterAll(async () => {
  await service?.stop();
  await rabbit.deleteVhost(vhost);
  const db = mongoose.createConnection(mongoUrl);
  await db.asPromise();
  await db.dropDatabase();
  await db.close();
});

describe('a service in-process (start/stop)', () => {
  it('when a SKU is written on a pinned clock, then its times are the clock’s', async () => {
    const token = await new InternalTokenSigner(TEST_INTERNAL_SECRET, 'gateway').tokenFor(
      basicCaller('ADMIN', true),
      'catalog',
    );
    const response = await fetch(`http://127.0.0.1:${service.port}/catalog/skus/news`, {
      method: 'PUT',
      headers: { 'x-internal-token': token, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'News' }),
    });
    expect(response.status, await response.clone().text()).toBe(201);
    expect(await response.json()).toMatchObject({ createdAt: '2030-01-02T03:04:05.000Z', generation: '1' });
  });
});
