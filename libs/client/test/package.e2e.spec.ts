import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clientsOf, REPO_ROOT, systemFixture } from '@rs/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// @rs/client as an adopter gets it: `npm pack`, installed into an empty project outside the
// repository (its one dependency from the registry), imported by its name, and run against a
// running system.
const fx = systemFixture({
  name: 'client_package',
  backends: ['catalog', 'rights'],
  seed: { clients: clientsOf({ 'grantor-a': 'A' }), users: ['alice'], skus: { news: {} } },
});
beforeAll(fx.start);
afterAll(fx.stop);

// Asynchronously: the system runs in this process, and must answer meanwhile.
const run = promisify(execFile);
const npm = (args: string[], cwd: string) => run('npm', args, { cwd, timeout: 120_000 });

describe('the client as an installable package', () => {
  it('when packed and installed into a project outside the repository, then it is imported by its name, calls the platform and explains a refusal', async () => {
    const project = mkdtempSync(path.join(tmpdir(), 'rs-client-adopter-'));
    await npm(['pack', '--pack-destination', project], path.join(REPO_ROOT, 'libs/client'));
    const tarball = readdirSync(project).find((file) => file.endsWith('.tgz'))!;
    expect(tarball).toMatch(/^rs-client-.*\.tgz$/);
    writeFileSync(
      path.join(project, 'package.json'),
      JSON.stringify({ name: 'adopter', private: true, type: 'module' }),
    );
    await npm(['install', '--no-audit', '--no-fund', `./${tarball}`], project);

    // Every source map names a file the package ships.
    const installed = path.join(project, 'node_modules/@rs/client');
    for (const map of readdirSync(path.join(installed, 'dist')).filter((file) => file.endsWith('.map'))) {
      const { sources } = JSON.parse(readFileSync(path.join(installed, 'dist', map), 'utf8')) as { sources: string[] };
      for (const source of sources)
        expect(() => readFileSync(path.resolve(installed, 'dist', source)), `${map}: ${source}`).not.toThrow();
    }

    writeFileSync(
      path.join(project, 'main.js'),
      `import { createPlatformClient, ok, PlatformError } from '@rs/client';
const platform = createPlatformClient({
  baseUrl: process.env.PLATFORM_URL,
  credentials: { basic: { clientId: 'grantor-a', secret: 'secret-of-grantor-a' } },
});
const user = ok(await platform.GET('/id/users/{connectId}', { params: { path: { connectId: 'alice' } } }));
const refused = await platform.POST('/id/users/{connectId}/rights', {
  params: { path: { connectId: 'alice' } },
  body: { sku: 'news', grantorId: 'A', timeInterval: '2026-02-01T00:00:00Z/2026-01-01T00:00:00Z' },
});
try {
  ok(refused);
} catch (error) {
  if (!(error instanceof PlatformError)) throw error;
  console.log(JSON.stringify({ user: user.connectId, status: error.status, title: error.title, detail: error.detail }));
}
`,
    );
    const { stdout: printed } = await run(process.execPath, ['main.js'], {
      cwd: project,
      env: { ...process.env, PLATFORM_URL: fx.system.gatewayUrl },
    });
    expect(JSON.parse(printed)).toEqual({
      user: 'alice',
      status: 400,
      title: 'Bad Request',
      detail: expect.stringMatching(/timeInterval/),
    });
  });
});
