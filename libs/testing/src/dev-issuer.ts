import { spawn } from 'node:child_process';
import path from 'node:path';
import { REPO_ROOT } from './servers';

/** The development OpenID Provider (tools/dev-issuer) as a process of its own, for a test or a bench. */
export interface RunningDevIssuer {
  stop(): void;
}

/**
 * Starts the development OpenID Provider at `issuerUrl` (its port), as `npm start` runs it,
 * signing for the audience `rights-api` and letting the console at `consoleUrl` sign in;
 * resolves once it answers its health check (within 15 s, else it is stopped and this throws).
 */
export async function startDevIssuer(issuerUrl: string, consoleUrl: string): Promise<RunningDevIssuer> {
  // It runs as in development whatever the caller's NODE_ENV (vitest sets `test`).
  const { NODE_ENV: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'tools/dev-issuer/dist/main.js')], {
    env: {
      ...inherited,
      NODE_ENV: 'development',
      DEV_ISSUER_PORT: new URL(issuerUrl).port,
      JWT_ISSUER: issuerUrl,
      JWT_AUDIENCE: 'rights-api',
      CONSOLE_REDIRECT_URIS: consoleUrl,
    },
    stdio: 'ignore',
  });
  const stop = () => void child.kill('SIGTERM');
  for (const deadline = Date.now() + 15_000; Date.now() < deadline;) {
    if ((await fetch(`${issuerUrl}/healthz`).catch(() => null))?.status === 200) return { stop };
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  stop();
  throw new Error(`the development OpenID Provider did not answer at ${issuerUrl} within 15 s`);
}
