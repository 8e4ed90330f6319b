// Writes the documents generated from the zod contracts (run after `npm run build`):
// docs/openapi.json, docs/asyncapi.json and docs/events.md (tests fail when the committed ones
// are out of date), then the types of @rs/client from the new OpenAPI document.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeClientTypes } from './client-types.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const contracts = createRequire(import.meta.url)(path.join(root, 'libs/contracts/dist/index.js'));
writeFileSync(path.join(root, 'docs/openapi.json'), `${JSON.stringify(contracts.buildOpenApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/asyncapi.json'), `${JSON.stringify(contracts.buildAsyncApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/events.md'), contracts.buildEventsDocument());
// @rs/client's types: every path, parameter and body of the new document.
await writeClientTypes(contracts.buildOpenApiDocument());
console.log('wrote docs/openapi.json, docs/asyncapi.json, docs/events.md and libs/client/src/api.ts');
