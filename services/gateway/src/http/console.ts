import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The console (docs/console.md): a single page the gateway serves at `/console`, its script and
 * style sheet under `/console/assets/`, built by `npm run build` into `apps/console/dist` with
 * names that change with their content. The page carries its configuration in a `<meta>` (no
 * inline script), and a policy that lets it load only its own files and talk only to this
 * gateway and the staff's identity provider.
 */
export interface ConsoleOptions {
  /** Where `npm run build` put it (`apps/console/dist`). */
  dist: string;
  publicBaseUrl: string;
  /** CONSOLE_ISSUER: where staff sign in; undefined when none is set. */
  issuer: string | undefined;
  /** CONSOLE_CLIENT_ID: the console's public client at that provider. */
  clientId: string;
}

export interface ConsolePage {
  /** The page, or null when the console was not built. */
  page: string | null;
  policy: string;
  asset(name: string): { type: string; body: Buffer } | null;
}

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/** Reads the built console once, at start. */
export function consolePage(options: ConsoleOptions): ConsolePage {
  const manifestPath = path.join(options.dist, 'manifest.json');
  const issuerOrigin = options.issuer ? new URL(options.issuer).origin : null;
  const policy = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${issuerOrigin ? ` ${issuerOrigin}` : ''}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  if (!existsSync(manifestPath)) return { page: null, policy, asset: () => null };
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { script: string; styles: string };
  const assets = new Map<string, { type: string; body: Buffer }>(
    [manifest.script, manifest.styles].map((name) => [
      name,
      { type: TYPES[path.extname(name)]!, body: readFileSync(path.join(options.dist, 'assets', name)) },
    ]),
  );
  // The page asks the gateway who signed in (`GET /id/me`): it needs nothing of the issuer's claims.
  const config = {
    apiBaseUrl: options.publicBaseUrl,
    issuer: options.issuer ?? null,
    clientId: options.clientId,
    redirectUri: `${options.publicBaseUrl}/console`,
  };
  const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="rs-console" content="${escapeAttribute(JSON.stringify(config))}" />
    <title>Rights console</title>
    <link rel="stylesheet" href="/console/assets/${manifest.styles}" />
    <script type="module" src="/console/assets/${manifest.script}"></script>
  </head>
  <body>
    <div id="console"></div>
  </body>
</html>
`;
  return { page, policy, asset: (name) => assets.get(name) ?? null };
}

const escapeAttribute = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
