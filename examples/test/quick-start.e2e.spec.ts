import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { freePorts, ProviderShapes, RabbitAdmin, REPO_ROOT, SHAPE_USERS, type ProviderShape } from '@rs/testing';
import mongoose from 'mongoose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';

// The README's quick start as a newcomer meets it: `npm start` (here on ports, databases and a
// RabbitMQ vhost of its own, so that it runs beside the other tests), its log until ready, then
// the commands of the README's first shell session, extracted from the README and run in order
// by bash; and a second `npm start` on other ports beside the first, trusting the identity
// providers an operator runs (`AUTH_ISSUERS`, docs/identity-providers.md).

const SERVICES = ['gateway', 'catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'];
const rabbit = new RabbitAdmin(process.env.RABBITMQ_MANAGEMENT_URL!);

/** One `npm start`: its own databases and vhost, its ports from `--ports`, its log as it comes. */
class Start {
  readonly name = `t_quick_start_${randomBytes(3).toString('hex')}`;
  readonly lines: string[] = [];
  base = 0;
  private child: ChildProcess | undefined;

  get url() {
    return `http://localhost:${this.base}`;
  }

  /** Starts it with the environment of the shell it runs in and `extra`. */
  async run(extra: NodeJS.ProcessEnv = {}): Promise<void> {
    await rabbit.createVhost(this.name);
    this.base = await freePorts(12);
    const amqp = new URL(process.env.AMQP_URL!);
    amqp.pathname = `/${this.name}`;
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_ENV: 'development', AMQP_URL: amqp.toString(), ...extra };
    delete env.ADMIN_CLIENT_ID;
    delete env.ADMIN_CLIENT_SECRET;
    for (const service of SERVICES) env[`${service.toUpperCase()}_MONGODB_URL`] = this.databaseUrl(service);
    this.child = spawn(process.execPath, [path.join(REPO_ROOT, 'scripts/start.mjs'), '--ports', String(this.base)], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const stream of [this.child.stdout!, this.child.stderr!])
      stream.on('data', (chunk: Buffer) => this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const child = this.child;
    const state = () =>
      this.lines.some((line) => /^start +ready: /.test(line))
        ? 'ready'
        : child.exitCode !== null
          ? 'exited'
          : 'starting';
    await vi.waitFor(
      () => {
        if (state() === 'starting') throw new Error('npm start is not ready yet');
      },
      { timeout: 90_000, interval: 200 },
    );
    if (state() !== 'ready') throw new Error(`npm start did not get ready:\n${this.lines.join('\n')}`);
  }

  databaseUrl(service: string): string {
    const url = new URL(process.env.MONGODB_URL!);
    url.pathname = `/${this.name}_${service}`;
    return url.toString();
  }

  /** Ctrl-C, as a user stops it; the lines it printed while stopping. */
  async stop(): Promise<string[]> {
    if (!this.child || this.child.exitCode !== null) return [];
    const before = this.lines.length;
    this.child.kill('SIGINT');
    await once(this.child, 'exit');
    return this.lines.slice(before);
  }

  async drop(): Promise<void> {
    await this.stop();
    for (const service of SERVICES) {
      const db = mongoose.createConnection(this.databaseUrl(service));
      await db.asPromise();
      await db.dropDatabase().catch(() => undefined);
      await db.close();
    }
    await rabbit.deleteVhost(this.name);
  }
}

/** The README's first shell session after `npm start`: its commands, continuation lines joined. */
function quickStartCommands(): string[] {
  const readme = readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8');
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((match) => match[1]!)
    .find((text) => text.includes('curl -u admin:'));
  if (!block) throw new Error('the README has no quick start session');
  return block
    .replace(/\\\n\s*/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trim().startsWith('#'));
}

const first = new Start();
const second = new Start();
const shapes = new ProviderShapes();
beforeAll(async () => {
  await shapes.start();
  await first.run();
}, 120_000);
afterAll(async () => {
  await first.drop();
  await second.drop();
  await shapes.close();
});

describe("the README's quick start", () => {
  it('when npm start runs on empty databases, then it says in a few lines that it is ready, where (the API page, the console), and how to go on', () => {
    const ready = first.lines.findIndex((line) => /^start +ready: /.test(line));
    expect(ready).toBeLessThanOrEqual(25);
    expect(first.lines[ready]).toContain(`${first.url}/docs`);
    expect(first.lines[ready]).toContain('admin-secret-change-me');
    expect(first.lines[ready]).toContain('npm run -s token');
    // The console and the development provider's staff sign-ins (docs/console.md).
    expect(first.lines[ready]).toContain(`${first.url}/console`);
    expect(first.lines[ready]).toMatch(/acme-agent \(write\).*operator \(admin\)/);
    for (const service of SERVICES)
      expect(first.lines.slice(0, ready).filter((line) => new RegExp(`^${service} +ready`).test(line))).toHaveLength(1);
    expect(first.lines.slice(0, ready).filter((line) => / (WARN|ERROR|FATAL):/.test(line))).toEqual([]);
  });

  it("when the README's commands are run in order, then the right is created ACTIVE, its user is entitled, and her app lists it", () => {
    const commands = quickStartCommands();
    // Each command's output follows a marker line, so that each can be read alone.
    const script = ['set -u', ...commands.flatMap((command, i) => [`echo "@@ ${i}"`, command, 'echo'])]
      .join('\n')
      .replaceAll('http://localhost:8080', first.url);
    const run = spawnSync('bash', ['-c', script], {
      cwd: REPO_ROOT,
      env: { ...process.env, DEV_ISSUER_URL: `http://127.0.0.1:${first.base + 10}` },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.status, run.stderr).toBe(0);
    const outputs = run.stdout.split(/^@@ \d+\n/m).slice(1);
    const outputOf = (pattern: RegExp) => {
      const index = commands.findIndex((command) => pattern.test(command));
      expect(index, String(pattern)).toBeGreaterThanOrEqual(0);
      return outputs[index]!.trim();
    };
    const right = JSON.parse(outputOf(/POST .*\/rights$/)) as { rightId: string; state: string; active: boolean };
    expect(right).toMatchObject({ state: 'ACTIVE', active: true });
    expect(JSON.parse(outputOf(/\/entitlements\//))).toMatchObject({
      entitled: true,
      rights: [{ rightId: right.rightId }],
    });
    expect(JSON.parse(outputOf(/\/subs$/))).toMatchObject({ state: 'ACTIVE', grantorId: 'acme' });
    expect(JSON.parse(outputOf(/\/webhooks\/endpoints$/))).toMatchObject({ secret: expect.stringMatching(/^whsec_/) });
    const listed = JSON.parse(outputOf(/Bearer \$TOKEN/)) as { right: Array<{ rightId: string }> };
    expect(listed.right.map(({ rightId }) => rightId)).toContain(right.rightId);
  });

  it("when a few seconds have passed, then the README's subscription has issued its first right, linked to it", async () => {
    const admin = `Basic ${Buffer.from('admin:admin-secret-change-me').toString('base64')}`;
    const linked = async () => {
      const answer = await fetch(`${first.url}/id/users/alice/rights?grantorId=acme`, {
        headers: { authorization: admin },
      });
      const { right } = (await answer.json()) as { right: Array<{ link: Array<{ rel: string }> }> };
      return right.filter((one) => one.link.some((link) => link.rel === 'subscription')).length;
    };
    await expect.poll(linked).toBe(1);
  });

  it('when a second npm start is given other ports, then it runs beside the first and both answer', async () => {
    await second.run({ AUTH_ISSUERS: JSON.stringify(shapes.issuers()) });
    for (const start of [first, second]) {
      const answer = await fetch(`${start.url}/readyz`);
      expect(answer.status, start.url).toBe(200);
      const root = await fetch(`${start.url}/`, { redirect: 'manual' });
      expect(root.headers.get('location')).toBe(`${start.url}/docs`);
    }
  }, 180_000);

  it("when npm start is given AUTH_ISSUERS, then each provider's user token reaches its user's rights with the mapped scopes, and acme's staff read and, with the write role, suspend any acme user's right", async () => {
    const admin = `Basic ${Buffer.from('admin:admin-secret-change-me').toString('base64')}`;
    const call = (method: string, route: string, authorization: string, body?: unknown, headers = {}) =>
      fetch(`${second.url}${route}`, {
        method,
        headers: { authorization, ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
    for (const { client } of Object.values(SHAPE_USERS))
      expect(
        (await call('PUT', `/admin/clients/${client}`, admin, { secret: 'a-secret-of-its-own', grantorId: 'acme' }))
          .status,
      ).toBe(201);
    for (const user of [...Object.values(SHAPE_USERS).map(({ user }) => user), 'erin'])
      expect((await call('PUT', `/id/users/${user}`, admin)).status).toBe(201);
    expect((await call('PUT', '/catalog/skus/news', admin, { grantorIds: ['acme'] })).status).toBe(201);
    const interval = '2026-01-01T00:00:00Z/2099-01-01T00:00:00Z';
    for (const user of [...Object.values(SHAPE_USERS).map(({ user }) => user), 'erin'])
      expect(
        (
          await call('POST', `/id/users/${user}/rights`, admin, {
            sku: 'news',
            grantorId: 'acme',
            timeInterval: interval,
          })
        ).status,
      ).toBe(201);

    for (const shape of Object.keys(SHAPE_USERS) as ProviderShape[]) {
      const { user } = SHAPE_USERS[shape];
      const token = `Bearer ${await shapes.userToken(shape, ProviderShapes.READ_GRANTS[shape])}`;
      const own = await call('GET', `/id/users/${user}/rights?grantorId=acme`, token);
      expect(own.status, `${shape}: ${await own.clone().text()}`).toBe(200);
      expect(((await own.json()) as { right: unknown[] }).right, shape).toHaveLength(1);
      expect((await call('GET', '/id/users/erin/rights?grantorId=acme', token)).status, shape).toBe(401);
      const unmapped = await call(
        'GET',
        `/id/users/${user}/rights?grantorId=acme`,
        `Bearer ${await shapes.userToken(shape, [])}`,
      );
      expect(unmapped.status, shape).toBe(401);
    }

    const [right] = (
      (await (await call('GET', '/id/users/erin/rights?grantorId=acme', admin)).json()) as {
        right: Array<{ rightId: string }>;
      }
    ).right;
    const path = `/id/users/erin/rights/${right!.rightId}`;
    const suspend = (authorization: string) =>
      call('POST', `${path}/suspend`, authorization, undefined, { 'x-audit-reason': 'the customer asked' });
    const reader = `Bearer ${await shapes.staffToken('ann', ['rights-support'], ['acme'])}`;
    expect((await call('GET', path, reader)).status).toBe(200);
    expect((await suspend(reader)).status).toBe(401);
    const stranger = `Bearer ${await shapes.staffToken('bea', ['rights-support-write'], ['globex'])}`;
    expect((await call('GET', path, stranger)).status).toBe(404);
    const writer = `Bearer ${await shapes.staffToken('cal', ['rights-support-write'], ['acme'])}`;
    const suspended = await suspend(writer);
    expect(suspended.status, await suspended.clone().text()).toBe(204);
    expect(await (await call('GET', path, reader)).json()).toMatchObject({ state: 'SUSPENDED' });
  });

  it('when both are stopped, then each stops without a warning', async () => {
    for (const start of [first, second]) {
      const stopping = await start.stop();
      expect(stopping.filter((line) => / (WARN|ERROR|FATAL):/.test(line))).toEqual([]);
      for (const service of SERVICES)
        expect(
          stopping.some((line) => new RegExp(`^${service} .*INFO: stopped`).test(line)),
          service,
        ).toBe(true);
    }
  });
});
