// Writes docs/openapi.json from the zod contracts (run after `npm run build`).
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { buildOpenApiDocument } = createRequire(import.meta.url)(path.join(root, 'libs/contracts/dist/index.js'));
writeFileSync(path.join(root, 'docs/openapi.json'), `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
console.log('wrote docs/openapi.json');
