// Writes the documents generated from the code (run after `npm run build`; tests fail when the
// committed ones are out of date): docs/openapi.json, docs/asyncapi.json and docs/events.md from
// the zod contracts, the types of @rs/client from the new OpenAPI document, and the FerretDB
// indexes and docs/operations.md's index table from the stores' declarations.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeClientTypes } from './client-types.mjs';

/** Every service, in the order docs/operations.md lists them. */
const SERVICES = ['gateway', 'catalog', 'rights', 'subscriptions', 'scheduler', 'webhooks'];

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const contracts = createRequire(import.meta.url)(path.join(root, 'libs/contracts/dist/index.js'));
writeFileSync(path.join(root, 'docs/openapi.json'), `${JSON.stringify(contracts.buildOpenApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/asyncapi.json'), `${JSON.stringify(contracts.buildAsyncApiDocument(), null, 2)}\n`);
writeFileSync(path.join(root, 'docs/events.md'), contracts.buildEventsDocument());
// @rs/client's types: every path, parameter and body of the new document.
await writeClientTypes(contracts.buildOpenApiDocument());

// The indexes each service's stores declare (src/store/indexes.ts): the FerretDB indexes, and
// the table of docs/operations.md between its markers.
const require = createRequire(import.meta.url);
const store = require(path.join(root, 'libs/store/dist/index.js'));
const indexes = SERVICES.map((service) => ({
  service,
  // A retention set, so that its purge is listed ("if set").
  collections: require(path.join(root, `services/${service}/dist/store/indexes.js`)).collectionIndexes(365),
}));
writeFileSync(path.join(root, 'deploy/local/ferretdb-index-fields.sql'), store.ferretdbIndexFieldsSql(indexes));
const operations = path.join(root, 'docs/operations.md');
writeFileSync(operations, store.withIndexTable(readFileSync(operations, 'utf8'), store.indexTable(indexes)));
console.log(
  'wrote docs/openapi.json, docs/asyncapi.json, docs/events.md, libs/client/src/api.ts, ' +
    'deploy/local/ferretdb-index-fields.sql and the index table of docs/operations.md',
);
