import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './processes';
import { REPO_ROOT } from './servers';

/** A Keycloak started for a test: its base URL and the way to stop it. */
export interface RunningKeycloak {
  url: string;
  /** Creates a realm from its representation (Keycloak's own import format), as an operator's admin would. */
  createRealm(realm: object): Promise<void>;
  /** What it printed, for a failing test to show. */
  output(): string;
  stop(): Promise<void>;
}

const ADMIN = { username: 'bootstrap-admin', password: 'bootstrap-admin-secret' };

/**
 * The Keycloak that `deploy/local/setup.sh` installs (its distribution from Maven Central, in
 * `.local/tools`), started in development mode on a free loopback port with an in-memory
 * database: nothing of one run is left for the next. Resolves once its master realm answers
 * (it builds itself first: about a minute on two cores), else stops it and throws.
 */
export async function startKeycloak(timeoutMs = 240_000): Promise<RunningKeycloak> {
  const home = path.join(REPO_ROOT, '.local/tools', `keycloak-${process.env.KEYCLOAK_VERSION ?? '26.5.6'}`);
  const script = path.join(home, 'bin/kc.sh');
  if (!existsSync(script)) throw new Error(`${script} is missing: run deploy/local/setup.sh`);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(
    script,
    ['start-dev', '--db=dev-mem', '--http-host=127.0.0.1', `--http-port=${port}`, '--cache=local'],
    {
      env: {
        ...process.env,
        KC_BOOTSTRAP_ADMIN_USERNAME: ADMIN.username,
        KC_BOOTSTRAP_ADMIN_PASSWORD: ADMIN.password,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  let printed = '';
  const keep = (chunk: Buffer) => {
    printed = (printed + chunk.toString('utf8')).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // kc.sh runs java as its child: the whole group goes.
    process.kill(-child.pid!, 'SIGTERM');
    const stopped = await Promise.race([exited.then(() => true), sleep(15_000).then(() => false)]);
    if (!stopped) process.kill(-child.pid!, 'SIGKILL');
  };
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`Keycloak stopped at start (${child.exitCode}):\n${printed}`);
    const answer = await fetch(`${url}/realms/master/.well-known/openid-configuration`).catch(() => null);
    if (answer?.ok) return { url, createRealm: (realm) => createRealm(url, realm), output: () => printed, stop };
    await sleep(500);
  }
  await stop();
  throw new Error(`Keycloak did not answer at ${url} within ${timeoutMs} ms:\n${printed}`);
}

async function createRealm(url: string, realm: object): Promise<void> {
  const token = await fetch(`${url}/realms/master/protocol/openid-connect/token`, {
    method: 'POST',
    body: new URLSearchParams({ grant_type: 'password', client_id: 'admin-cli', ...ADMIN }),
  });
  if (!token.ok) throw new Error(`Keycloak's admin token: ${token.status} ${await token.text()}`);
  const { access_token } = (await token.json()) as { access_token: string };
  const created = await fetch(`${url}/admin/realms`, {
    method: 'POST',
    headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
    body: JSON.stringify(realm),
  });
  if (created.status !== 201) throw new Error(`Keycloak's realm import: ${created.status} ${await created.text()}`);
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
