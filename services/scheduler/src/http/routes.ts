import { ClockAdvanceBody, ClockCreateBody, ClockCreation, ClockId } from '@rs/contracts';
import * as http from '@rs/http';
import type { Request, Router } from 'express';
import type { ClockUseCases } from '../app/clocks';
import { representation } from '../domain/clock';

/** The test clocks API (docs/decisions/0048), behind the gateway: HTTP in and out; the rules are the use cases'. */
export function clockRoutes(clocks: ClockUseCases, publicBaseUrl: string): Router {
  const router = http.exactRouter();
  const clockId = (req: Request) => http.parseParam(ClockId, 'clockId', req.params.clockId);
  const view = (clock: Parameters<typeof representation>[0]) => representation(clock, publicBaseUrl);

  http.serveRoutes(router, 'scheduler', {
    createClock: async (req, res) => {
      const clock = await clocks.create(res.locals.principal, http.parseBody(ClockCreateBody, req.body));
      http.sendCreated(res, clock.generation, view(clock));
    },
    listClocks: async (_req, res) => {
      http.sendJson(res, { clocks: (await clocks.list(res.locals.principal)).map(view) });
    },
    getClock: async (req, res) => {
      const clock = await clocks.get(res.locals.principal, clockId(req));
      http.sendResource(res, clock.generation, view(clock));
    },
    advanceClock: async (req, res) => {
      const body = http.parseBody(ClockAdvanceBody, req.body);
      const clock = await clocks.advance(res.locals.principal, clockId(req), body);
      res.status(202);
      http.sendResource(res, clock.generation, view(clock));
    },
    deleteClock: async (req, res) => {
      await clocks.remove(res.locals.principal, clockId(req));
      http.sendDone(res);
    },
  });
  // For the services, which judge what lives on a clock by its time (docs/decisions/0048).
  http.route(router, '/internal/clocks/:clockId', {
    get: async (req, res) => {
      http.requireServiceCaller(res.locals.principal);
      http.sendJson(res, view(await clocks.current(clockId(req))));
    },
  });
  // A creation on a clock, announced by the service about to make it (docs/decisions/0050).
  http.route(router, '/internal/clocks/:clockId/creations', {
    post: async (req, res) => {
      http.requireServiceCaller(res.locals.principal);
      const creation = http.parseBody(ClockCreation, req.body);
      http.sendJson(res, view(await clocks.expectCreation(clockId(req), creation)));
    },
  });
  return router;
}
