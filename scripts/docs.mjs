// Writes the documents generated from the zod contracts (run after `npm run build`):
// docs/openapi.json, docs/asyncapi.json and docs/events.md. Tests fail when the committed ones are out of date.
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const contracts = createRequire(import.meta.url)(path.join(root, 'libs/contracts/dist/index.js'));
writeFileSync(path.join(root, 'docs/openapi.json'), `${JSON.stringify(contracts.buildOpenApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/asyncapi.json'), `${JSON.stringify(contracts.buildAsyncApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/events.md'), contracts.buildEventsDocument());
console.log('wrote docs/openapi.json, docs/asyncapi.json and docs/events.md');
