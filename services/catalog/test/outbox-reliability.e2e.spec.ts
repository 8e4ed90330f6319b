import { setTimeout as sleep } from 'node:timers/promises';
import { systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const fx = systemFixture({
  processes: true,
  name: 'catalog_outbox',
  // The rights service too: the gateway is ready once its entitlement projection is loaded.
  backends: ['catalog', 'rights'],
  collect: { 'catalog.events': '#' },
});
beforeAll(fx.start);
afterAll(fx.stop);

const putSku = (sku: string) =>
  fetch(`${fx.system.gatewayUrl}/catalog/skus/${sku}`, {
    method: 'PUT',
    headers: fx.system.adminHeaders({ 'content-type': 'application/json' }),
    body: JSON.stringify({ name: sku }),
  });

/**
 * Writes new SKUs, `parallel` at a time with `pauseMs` between writes, until `count` or
 * until `until()`; returns the ones the API acknowledged.
 */
async function writeSkus(
  prefix: string,
  count: number,
  parallel: number,
  until = () => false,
  pauseMs = 0,
): Promise<string[]> {
  const acknowledged: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < count && !until()) {
        const sku = `${prefix}-${next++}`;
        const response = await putSku(sku);
        if (response.status === 201) acknowledged.push(sku);
        else expect.fail(`PUT ${sku} answered ${response.status}: ${await response.text()}`);
        if (pauseMs) await sleep(pauseMs); // the wait is the test's subject: writes spread over the faults
      }
    }),
  );
  return acknowledged;
}

const killCatalogConnection = () => fx.system.killBrokerConnection('catalog');

const upsertedSubjects = () =>
  new Set(
    fx
      .events('catalog.events')
      .messages.filter((m) => m.routingKey === 'sku.upserted')
      .map((m) => String(m.body.subject)),
  );

describe('no lost events', () => {
  it('when the broker connection is killed again and again while SKUs are written, then every write is still published', async () => {
    let killing = true;
    const writing = writeSkus('conn', 2_000, 2, () => !killing, 40);
    let kills = 0;
    for (let round = 0; round < 3; round++) {
      kills += await killCatalogConnection();
      await sleep(200); // the wait is the test's subject: the connection killed again while writes go on
    }
    killing = false;
    const acknowledged = await writing;
    expect(kills).toBe(3);
    const lost = () =>
      fx.system.service('catalog').logs.filter((line) => line.includes('broker connection lost')).length;
    await expect.poll(lost).toBe(3);
    expect(acknowledged.length).toBeGreaterThan(20);

    await fx.events('catalog.events').waitFor(() => acknowledged.every((sku) => upsertedSubjects().has(sku)), 30_000);
    const ofThisTest = fx.events('catalog.events').messages.filter((m) => String(m.body.subject).startsWith('conn-'));
    const distinctIds = new Set(ofThisTest.map((m) => m.body.id));
    // At least once: duplicates are allowed, but each write is one distinct event.
    expect(distinctIds.size).toBe(acknowledged.length);
    expect(new Set(ofThisTest.map((m) => m.body.subject))).toEqual(new Set(acknowledged));
  });

  it('when the catalog process is killed with events still unpublished, then they are published after it restarts', async () => {
    const catalog = fx.system.service('catalog');
    // The broker refuses new connections and the catalog's is closed: its relay cannot publish.
    await fx.system.rabbit.limitConnections(fx.system.vhost, 0);
    let acknowledged: string[];
    try {
      await killCatalogConnection();
      acknowledged = await writeSkus('crash', 40, 4);
      await catalog.kill();
      expect(await fx.system.pendingEvents('catalog', 'skus')).toBeGreaterThan(0);
    } finally {
      await fx.system.rabbit.limitConnections(fx.system.vhost, null);
    }

    await catalog.start();
    await fx.events('catalog.events').waitFor(() => acknowledged.every((sku) => upsertedSubjects().has(sku)), 30_000);
    const crashEvents = fx.events('catalog.events').messages.filter((m) => String(m.body.subject).startsWith('crash-'));
    expect(new Set(crashEvents.map((m) => m.body.id)).size).toBe(acknowledged.length);
  });
});
