// The development token issuer, as `npm start` runs it. Refuses to start in
// production (issuerRefusal): it signs whatever it is asked for.
import { once } from 'node:events';
import { DevTokenIssuer } from './issuer';
import { issuerRefusal } from './policy';
import { openIdProvider } from './openid-provider';
import { issuerServer } from './server';

const log = (level: number, msg: string, fields: object = {}) =>
  process.stdout.write(`${JSON.stringify({ level, time: Date.now(), msg, ...fields })}\n`);

async function main(): Promise<void> {
  const refusal = issuerRefusal(process.env);
  if (refusal) {
    log(60, refusal);
    process.exit(1);
  }
  const port = Number(process.env.DEV_ISSUER_PORT ?? 8090);
  const issuerName = process.env.JWT_ISSUER ?? `http://localhost:${port}`;
  const audience = process.env.JWT_AUDIENCE ?? 'rights-api';
  const issuer = await DevTokenIssuer.create(issuerName, audience);
  const provider = openIdProvider({
    issuer: issuerName,
    audience,
    signingKey: await issuer.signingJwk(),
    consoleRedirectUris: (
      process.env.CONSOLE_REDIRECT_URIS ?? 'http://localhost:8080/console,http://127.0.0.1:8080/console'
    )
      .split(',')
      .map((uri) => uri.trim())
      .filter(Boolean),
    // The README's API client may ask for its own tokens (client credentials).
    machineClients: [{ clientId: 'acme', secret: process.env.DEV_ISSUER_ACME_SECRET ?? 'acme-secret-0123' }],
  });
  const server = issuerServer(issuer, provider);
  server.listen(port, process.env.DEV_ISSUER_HOST ?? '127.0.0.1');
  await once(server, 'listening');
  log(30, 'development OpenID Provider listening: /.well-known/openid-configuration, POST /dev/token', {
    port,
    issuer: issuerName,
    audience,
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

void main().catch((error: unknown) => {
  log(60, `development token issuer failed: ${(error as Error).message}`);
  process.exit(1);
});
