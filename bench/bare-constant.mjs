// The bare baseline of `npm run bench:check`: a `node:http` server answering every request with
// the same document (the body and media type it is given), in its own process. What the
// entitlement check costs beyond this is the platform's request path: parsing, authentication,
// the limiter, tracing, the request log line, metrics, headers and serialization.
// Usage: node bench/bare-constant.mjs <media type> <body as base64>; prints its port.
import http from 'node:http';

const [mediaType, encoded] = process.argv.slice(2);
const body = Buffer.from(encoded, 'base64');
const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': mediaType, 'content-length': body.length }).end(body);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
