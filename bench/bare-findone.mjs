// The bare baseline of `npm run bench`: a `node:http` server doing one driver
// `findOne` by `_id` on the same MongoDB-wire server, in its own process. What a request
// path costs beyond this is the platform's own overhead.
// Usage: node bench/bare-findone.mjs <mongodb url with database> <collection>; prints its port.
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { MongoClient } = createRequire(path.join(root, 'libs/store/package.json'))('mongodb');

const [url, collectionName] = process.argv.slice(2);
const client = await new MongoClient(url).connect();
const collection = client.db().collection(collectionName);
const server = http.createServer(async (req, res) => {
  try {
    const id = decodeURIComponent(req.url.slice(1));
    const doc = await collection.findOne({ _id: id });
    if (!doc) {
      res.writeHead(404).end();
      return;
    }
    const body = JSON.stringify(doc);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => server.close(() => client.close().then(() => process.exit(0))));
