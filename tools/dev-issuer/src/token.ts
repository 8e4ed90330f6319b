// `npm run -s token -- --user alice --client acme --scope id.user.right.read`:
// asks the development issuer that `npm start` runs for an access token and prints it alone,
// so that `TOKEN=$(npm run -s token -- …)` works.
import { parseArgs } from 'node:util';

const USAGE =
  'usage: npm run -s token -- --user <connectId> --client <clientId> --scope <scope> [--scope <scope>…] [--ttl <seconds>]\n' +
  '  scopes: id.user.sub.read id.user.right.read id.user.right.use; the issuer: DEV_ISSUER_URL (http://127.0.0.1:8090)\n';

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        user: { type: 'string' },
        client: { type: 'string' },
        scope: { type: 'string', multiple: true },
        ttl: { type: 'string' },
        help: { type: 'boolean' },
      },
    }));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help || !values.user || !values.client || !values.scope) {
    process.stderr.write(USAGE);
    return values.help ? 0 : 2;
  }
  const issuer = process.env.DEV_ISSUER_URL ?? 'http://127.0.0.1:8090';
  const form = new URLSearchParams({ user: values.user, client: values.client, scope: values.scope.join(' ') });
  if (values.ttl) form.set('expires_in', values.ttl);
  let response: Response;
  try {
    response = await fetch(new URL('/dev/token', issuer), { method: 'POST', body: form });
  } catch (error) {
    process.stderr.write(
      `cannot reach the development token issuer at ${issuer} (is \`npm start\` running?): ${(error as Error).message}\n`,
    );
    return 1;
  }
  const body = (await response.json()) as { access_token?: string; error_description?: string };
  if (!response.ok || !body.access_token) {
    process.stderr.write(`the issuer refused: ${body.error_description ?? response.status}\n`);
    return 1;
  }
  process.stdout.write(`${body.access_token}\n`);
  return 0;
}

void main().then((code) => process.exit(code));
