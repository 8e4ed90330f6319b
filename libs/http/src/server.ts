import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Express } from 'express';

export interface RunningServer {
  port: number;
  /** Stops accepting, lets requests in flight finish (up to `graceMs`), then closes. */
  close(graceMs?: number): Promise<void>;
}

/**
 * Node's request and response, made with the app's prototypes (Node's own, with Express's
 * methods on top). Express sets those prototypes on every request it handles; on an object made
 * with them already that is a no-op, where changing the prototype of an object after it was
 * made costs it V8's fast shape, and every later read of its properties is slower.
 */
function expressMessages(app: Express): Pick<http.ServerOptions, 'IncomingMessage' | 'ServerResponse'> {
  function Request(this: unknown, socket: Socket) {
    return Reflect.construct(http.IncomingMessage, [socket], Request) as http.IncomingMessage;
  }
  Request.prototype = app.request;
  function Response(this: unknown, req: http.IncomingMessage, options?: object) {
    return Reflect.construct(http.ServerResponse, [req, options], Response) as http.ServerResponse;
  }
  Response.prototype = app.response;
  return {
    IncomingMessage: Request as unknown as typeof http.IncomingMessage,
    ServerResponse: Response as unknown as typeof http.ServerResponse,
  };
}

export async function startHttpServer(app: Express, port: number, host = '0.0.0.0'): Promise<RunningServer> {
  const server = http.createServer(expressMessages(app), app);
  // Longer than the idle timeout of the load balancers in front (typically 60 s).
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 30_000;
  server.listen(port, host);
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    async close(graceMs = 10_000) {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
    },
  };
}
