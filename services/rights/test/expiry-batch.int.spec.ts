import { createCloudEvent, type CloudEvent, type RightsExpireBatch } from '@rs/contracts';
import { systemFixture } from '@rs/testing';
import type { GetMessage } from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `rights.expire` commands handled together (docs/decisions/0039), without a scheduler: the
// test sends the commands a scheduler would. One right whose stored data cannot be read fails
// alone (docs/api.md), dead-lettered as a one-item copy of the command that carried it.
const fx = systemFixture({
  name: 'rights_expiry_batch',
  commands: true,
  backends: ['catalog', 'rights'],
  collect: { 'rights.events': 'right.expired' },
  seed: { users: ['erin'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

/** Rights of erin's ending together, a second from now. */
async function rightsEndingSoon(count: number): Promise<{ ids: string[]; end: string }> {
  const end = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1_000).toISOString();
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await fetch(`${fx.system.gatewayUrl}/id/users/erin/rights`, {
      method: 'POST',
      headers: { ...fx.system.adminHeaders(), 'content-type': 'application/json' },
      body: JSON.stringify({
        sku: 'news',
        grantorId: 'A',
        state: 'ACTIVE',
        timeInterval: `${new Date(Date.now() - 60_000).toISOString()}/${end}`,
      }),
    });
    expect(response.status).toBe(201);
    ids.push(((await response.json()) as { rightId: string }).rightId);
  }
  return { ids, end };
}

/** Publishes the commands one after another and waits for their confirms once: they arrive together. */
async function sendTogether(commands: Array<CloudEvent<RightsExpireBatch>>) {
  for (const command of commands)
    fx.commands.publish('commands', command.type, Buffer.from(JSON.stringify(command)), {
      persistent: true,
      messageId: command.id,
    });
  await fx.commands.waitForConfirms();
}

describe('rights.expire commands handled together', () => {
  it('when a right of the second command cannot be read, then every other right of both expires once, and that one is dead-lettered alone from its own command', async () => {
    const { ids, end } = await rightsEndingSoon(6);
    const broken = ids[4]!;
    // As a faulty migration or a hand edit might leave it: payload text that is not JSON (once
    // its creation's events are published, or the relay's clean-up would write the old text back).
    await fx.system.tamper('rights', 'rights', { _id: broken, outboxPending: false }, { payloadJson: '{' });
    // Ended: reads show it (the state follows from the interval, docs/decisions/0027).
    await expect
      .poll(async () => {
        const response = await fetch(`${fx.system.gatewayUrl}/id/users/erin/rights/${ids[0]}`, {
          headers: fx.system.adminHeaders(),
        });
        return ((await response.json()) as { state: string }).state;
      })
      .toBe('EXPIRED');

    const items = ids.map((rightId) => ({ rightId, connectId: 'erin', end }));
    const commandOf = (part: typeof items) =>
      createCloudEvent<RightsExpireBatch>({
        source: '/test',
        type: 'rights.expire',
        subject: part[0]!.rightId,
        data: { items: part },
      });
    const [first, second] = [commandOf(items.slice(0, 3)), commandOf(items.slice(3))];
    await sendTogether([first, second]);

    const expired = fx.events('rights.events');
    const subjects = () => expired.messages.map((message) => message.body.subject);
    const healthy = ids.filter((id) => id !== broken);
    await expired.waitFor(() => healthy.every((id) => subjects().includes(id)));
    let dead: GetMessage | false = false;
    await expect
      .poll(async () => (dead = await fx.commands.get('rights.commands.dlq', { noAck: true })))
      .not.toBe(false);
    const copy = JSON.parse((dead as unknown as GetMessage).content.toString('utf8')) as CloudEvent<unknown>;
    expect(copy.id).toBe(`${second.id}.${broken}`);
    expect(copy.data).toEqual({ rightId: broken, connectId: 'erin', end });
    expect(await fx.commands.get('rights.commands.dlq', { noAck: true })).toBe(false);
    expect(subjects()).not.toContain(broken);
    expect(healthy.map((id) => subjects().filter((subject) => subject === id).length)).toEqual(healthy.map(() => 1));
  });
});
