import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_REFERENCE_ASSETS } from '@rs/contracts';

type Asset = (typeof API_REFERENCE_ASSETS)[number];

/**
 * The page of `GET /docs` (docs/decisions/0035): Swagger UI over this gateway's own
 * OpenAPI document, every file served by the gateway (no CDN), its "Try it out" aimed at the
 * gateway that served the page (the document's `servers` name `npm start`'s). Relative URLs,
 * so it works behind a path prefix too.
 */
const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Rights and subscriptions API</title>
    <link rel="stylesheet" href="docs/swagger-ui.css" />
  </head>
  <body>
    <div id="api-reference"></div>
    <script src="docs/swagger-ui-bundle.js"></script>
    <script src="docs/reference.js"></script>
  </body>
</html>
`;

const START = `// Renders openapi.json, its first server this gateway.
fetch('openapi.json')
  .then((response) => response.json())
  .then((spec) => {
    const here = new URL('.', window.location.href).href.replace(/\\/$/, '');
    spec.servers = [{ url: here, description: 'this gateway' }].concat(spec.servers || []);
    window.ui = SwaggerUIBundle({ spec, dom_id: '#api-reference', deepLinking: true, docExpansion: 'list' });
  });
`;

const TYPES: Record<Asset, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'reference.js': 'text/javascript; charset=utf-8',
};

/**
 * What the page may load: its own files and its own gateway, nothing inline but styles
 * (Swagger UI sets style attributes), Swagger UI's icons as data: images; never framed.
 */
export const API_REFERENCE_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

export interface ApiReference {
  page: string;
  /** An asset of the page with its content type, or null for any other name. */
  asset(name: string): { type: string; body: Buffer } | null;
}

/** Reads Swagger UI's files once, at start (swagger-ui-dist, a dependency without dependencies). */
export function apiReference(): ApiReference {
  const dist = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  const bodies = new Map<string, Buffer>([
    ['swagger-ui.css', readFileSync(path.join(dist, 'swagger-ui.css'))],
    ['swagger-ui-bundle.js', readFileSync(path.join(dist, 'swagger-ui-bundle.js'))],
    ['reference.js', Buffer.from(START)],
  ]);
  return {
    page: PAGE,
    asset: (name) => {
      const body = bodies.get(name);
      return body ? { type: TYPES[name as Asset], body } : null;
    },
  };
}
