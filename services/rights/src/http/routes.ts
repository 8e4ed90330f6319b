import { BUCKETS } from '@rs/store';
import { ConnectId, RightCreateBody, RightId } from '@rs/contracts';
import {
  badRequest,
  ifMatchGeneration,
  bucketListing,
  pageParams,
  parseBody,
  parseParam,
  queryParam,
  route,
  setETag,
  keysetOf,
  parseKeyset,
  setNextLink,
} from '@rs/http';
import { Router, type Request } from 'express';
import { representation, type RightCommand } from '../domain/right';
import { parseDateTime } from '@rs/time';
import type { RightsUseCases } from '../app/rights';

/** `active=<date-time>`, `true` or `now` (DESIGN.md 3 "Listing filters"). */
function activeFilter(req: Request, now: Date): Date | null {
  const raw = queryParam(req, 'active');
  if (raw === undefined) return null;
  if (raw === 'true' || raw === 'now') return now;
  const parsed = parseDateTime(raw);
  if (!parsed.ok) throw badRequest(`active: must be a date-time with offset, true or now; ${parsed.reason}`);
  return parsed.value.toJSDate();
}

/** The rights API of spec 4.2, behind the gateway. */
export function rightsRoutes(
  rights: RightsUseCases,
  publicBaseUrl: string,
  clock: () => Date = () => new Date(),
): Router {
  const router = Router();
  const user = (req: Request) => parseParam(ConnectId, 'connectId', req.params.connectId);
  const rightId = (req: Request) => parseParam(RightId, 'rightId', req.params.rightId);

  route(router, '/id/users/:connectId/rights', {
    get: async (req, res) => {
      const now = clock();
      const page = pageParams(req);
      const after = parseKeyset(page);
      const found = await rights.list(res.locals.principal, {
        userId: user(req),
        grantorId: queryParam(req, 'grantorId') ?? null,
        activeAt: activeFilter(req, now),
        limit: page.limit,
        after,
      });
      const last = found.at(-1);
      setNextLink(req, res, publicBaseUrl, page, last && keysetOf(last, last.rightId), found.length);
      res.json({ right: found.map((right) => representation(right, publicBaseUrl, now)) });
    },
    post: async (req, res) => {
      const body = parseBody(RightCreateBody, req.body);
      const right = await rights.create(res.locals.principal, user(req), body);
      const view = representation(right, publicBaseUrl, clock());
      setETag(res, right.generation);
      res.status(201).location(view.href).json(view);
    },
  });

  route(router, '/id/users/:connectId/rights/:rightId', {
    get: async (req, res) => {
      const right = await rights.get(res.locals.principal, user(req), rightId(req));
      setETag(res, right.generation);
      res.json(representation(right, publicBaseUrl, clock()));
    },
    delete: async (req, res) => {
      await rights.remove(res.locals.principal, user(req), rightId(req), ifMatchGeneration(req));
      res.status(204).end();
    },
  });

  for (const command of ['activate', 'suspend'] as RightCommand[]) {
    route(router, `/id/users/:connectId/rights/:rightId/${command}`, {
      post: async (req, res) => {
        await rights.transition(res.locals.principal, user(req), rightId(req), command, ifMatchGeneration(req));
        res.status(204).end();
      },
    });
  }
  route(router, '/id/users/:connectId/rights/:rightId/usage', {
    post: async (req, res) => {
      await rights.use(res.locals.principal, user(req), rightId(req), ifMatchGeneration(req));
      res.status(204).end();
    },
  });
  // For the scheduler to rebuild its expiries (docs/decisions/0009).
  bucketListing(router, '/internal/expiries', BUCKETS, async (bucket) =>
    (await rights.expirable(bucket)).map((r) => ({
      rightId: r.rightId,
      connectId: r.userId,
      sequence: r.generation,
      state: r.state,
      timeInterval: r.timeInterval,
    })),
  );
  return router;
}
