import { InternalTokenSigner } from '@rs/http';
import { createLogger } from '@rs/logging';
import { AmqpClient } from '@rs/messaging';
import { EventCollector, TEST_INTERNAL_SECRET, TestSystem } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogUnavailable, SkuDirectory } from '../src/index';

let system: TestSystem;
let broker: AmqpClient;
let events: EventCollector;
let directory: SkuDirectory;

beforeAll(async () => {
  system = await TestSystem.start({ name: 'sku_directory', backends: ['catalog'] });
  const logger = createLogger('sku-directory-test', 'warn');
  broker = new AmqpClient({ url: system.amqpUrl, connectionName: 'directory-test', logger });
  broker.start();
  await broker.waitUntilConnected(10_000);
  events = await EventCollector.start(system.amqpUrl, 'catalog.events');
  directory = new SkuDirectory({
    broker,
    catalogUrl: system.service('catalog').url,
    signer: new InternalTokenSigner(TEST_INTERNAL_SECRET, 'test'),
    service: 'test',
    logger,
  });
  await directory.start();
});
afterAll(async () => {
  await events?.close();
  await broker?.close();
  await system?.stop();
});

const putSku = (sku: string, body: object) =>
  fetch(`${system.gatewayUrl}/catalog/skus/${sku}`, {
    method: 'PUT',
    headers: system.adminHeaders({ 'content-type': 'application/json' }),
    body: JSON.stringify(body),
  });

describe('SkuDirectory', () => {
  it('when a SKU does not exist, then it is null; when it is created, then it is found with its settings', async () => {
    expect(await directory.find('not-there')).toBeNull();
    expect((await putSku('video-hd', { announceOnUsage: true, serviceProviderId: 'streamer' })).status).toBe(201);
    await events.waitFor((m) => m.some((e) => e.body.subject === 'video-hd'));
    await expect
      .poll(() => directory.find('video-hd'))
      .toMatchObject({ sku: 'video-hd', announceOnUsage: true, serviceProviderId: 'streamer' });
  });

  it('when the catalog is down, then SKUs announced by events are still known, and others are CatalogUnavailable', async () => {
    expect((await putSku('music-hifi', { name: 'Hi-Fi' })).status).toBe(201);
    await events.waitFor((m) => m.some((e) => e.body.subject === 'music-hifi'));
    await system.service('catalog').stop();
    try {
      // Never fetched over HTTP (the catalog is down): only the event, reaching the directory's
      // own queue, can tell it about the SKU. Until then a lookup is CatalogUnavailable.
      await expect
        .poll(() => directory.find('music-hifi').catch(() => null))
        .toMatchObject({ sku: 'music-hifi', name: 'Hi-Fi', generation: '1' });
      await expect(directory.find('never-seen')).rejects.toBeInstanceOf(CatalogUnavailable);
    } finally {
      await system.service('catalog').start();
    }
  });
});
