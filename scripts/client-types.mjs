// The types of @rs/client, generated from docs/openapi.json with openapi-typescript: run by
// `npm run build` (and the image's build) before tsc, so they never lag the document, and
// never committed (libs/client/src/api.ts is ignored). `writeClientTypes` is also what
// `npm run docs` calls after it has written a new document.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BANNER = '// Generated from docs/openapi.json by scripts/client-types.mjs (openapi-typescript); do not edit.\n';

export async function writeClientTypes(document) {
  const types = astToString(await openapiTS(document));
  writeFileSync(path.join(root, 'libs/client/src/api.ts'), `${BANNER}${types}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url))
  await writeClientTypes(JSON.parse(readFileSync(path.join(root, 'docs/openapi.json'), 'utf8')));
