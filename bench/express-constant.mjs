// The framework's floor beside bench/bare-constant.mjs: an Express 5 app, configured as the
// platform's apps are (no `X-Powered-By`, no ETag, exact routing) but with no middleware at all,
// answering every request with the same document. What the check costs beyond this is the
// platform's own path; what this costs beyond the bare server is Express's.
// Usage: node bench/express-constant.mjs <media type> <body as base64>; prints its port.
import express from 'express';

const [mediaType, encoded] = process.argv.slice(2);
const body = Buffer.from(encoded, 'base64');
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.set('case sensitive routing', true);
app.set('strict routing', true);
app.get('/id/users/:connectId/entitlements/:sku', (_req, res) => {
  res.type(mediaType).send(body);
});
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
server.keepAliveTimeout = 60_000;
process.on('SIGTERM', () => server.close(() => process.exit(0)));
