import { BUCKETS } from '@rs/hashing';
import {
  AdjustmentBody,
  ClockId,
  CommitBody,
  ConsumptionBody,
  encodeProjectedRights,
  PROJECTED_RIGHT_HEADER,
  ReservationBody,
  ReservationId,
  RightCreateBody,
  RightId,
  SkuName,
  UsageBody,
} from '@rs/contracts';
import * as http from '@rs/http';
import type { Request, Response, Router } from 'express';
import { expiryEntry, projectedOf, representation, type RightCommand } from '../domain/right';
import { parseDateTime } from '@rs/time';
import type { Changed, RightsUseCases } from '../app/rights';
import type { RightCommands } from '../app/right-commands';
import type { ConsumptionUseCases } from '../app/consumptions';
import type { ReservationUseCases } from '../app/reservations';
import { lapsesAt } from '../domain/consumption';
import type { RightEntity } from '../domain/right';
import type { RightTokens } from '../app/right-tokens';

const JWKS_MAX_AGE_S = 60;

/** The use cases the rights API calls. */
export interface RightsApi {
  rights: RightsUseCases;
  commands: RightCommands;
  consumptions: ConsumptionUseCases;
  reservations: ReservationUseCases;
  tokens: RightTokens;
}

/** `active=<date-time>`, `true` or `now` (docs/api.md "Listing filters"). */
function activeFilter(req: Request): Date | 'now' | null {
  const raw = http.queryParam(req, 'active');
  if (raw === undefined) return null;
  if (raw === 'true' || raw === 'now') return 'now';
  const parsed = parseDateTime(raw);
  if (!parsed.ok) throw http.badRequest(`active: must be a date-time with offset, true or now; ${parsed.reason}`);
  return parsed.value.toJSDate();
}

/**
 * docs/api.md "Entitlement checks": every change answered tells the gateway what it made of the
 * right, so the replica that answers reflects it at once (the gateway never passes it on).
 */
function tellProjection(res: Response, { right, removed }: Changed): void {
  res.set(PROJECTED_RIGHT_HEADER, encodeProjectedRights([projectedOf(right, removed)]));
}

/** The same for the rights a consumption by SKU or a reservation changed (none is removed by it). */
function tellProjectionOf(res: Response, rights: readonly RightEntity[]): void {
  if (rights.length > 0)
    res.set(PROJECTED_RIGHT_HEADER, encodeProjectedRights(rights.map((right) => projectedOf(right, false))));
}

/** The rights API of docs/api.md, behind the gateway: HTTP in and out; the rules are the use cases'. */
export function rightsRoutes(
  { rights, commands, consumptions, reservations, tokens }: RightsApi,
  publicBaseUrl: string,
): Router {
  const router = http.exactRouter();
  const rightId = (req: Request) => http.parseParam(RightId, 'rightId', req.params.rightId);
  /** The user's SKU of the path, on real time or on the test clock the body names. */
  const skuOfUser = (req: Request, clockId?: string | null) => ({
    userId: http.connectIdOf(req),
    sku: http.parseParam(SkuName, 'sku', req.params.sku),
    clockId: clockId ?? null,
  });
  const reservationOf = (req: Request) => ({
    ...skuOfUser(req),
    reservationId: http.parseParam(ReservationId, 'reservationId', req.params.reservationId),
  });
  const change = (act: Parameters<typeof http.userResourceChange<Changed>>[1]) =>
    http.userResourceChange({ name: 'rightId', schema: RightId }, act, tellProjection);
  const transition = (command: RightCommand) =>
    change((principal, user, id, ifMatch) => rights.transition(principal, user, id, command, ifMatch));

  http.serveRoutes(router, 'rights', {
    listRights: async (req, res) => {
      const named = http.queryParam(req, 'clockId');
      const filter = {
        userId: http.connectIdOf(req),
        grantorId: http.queryParam(req, 'grantorId') ?? null,
        ...(named === undefined ? {} : { clockId: http.parseParam(ClockId, 'clockId', named) }),
      };
      const activeAt = activeFilter(req);
      await http.sendNewestFirst(req, res, publicBaseUrl, {
        read: (limit, after) => rights.list(res.locals.principal, { ...filter, activeAt, limit, after }),
        body: (found, page) => ({
          right: found.map((right) => representation(right, publicBaseUrl, page.nowOf(right))),
        }),
      });
    },
    createRight: async (req, res) => {
      const body = http.parseBody(RightCreateBody, req.body);
      const { right, now } = await rights.create(
        res.locals.principal,
        http.connectIdOf(req),
        body,
        http.resourceIdOf(req),
      );
      tellProjection(res, { right, removed: false, now });
      http.sendCreated(res, right.generation, representation(right, publicBaseUrl, now));
    },
    getRight: async (req, res) => {
      const { right, now } = await rights.get(res.locals.principal, http.connectIdOf(req), rightId(req));
      http.sendResource(res, right.generation, representation(right, publicBaseUrl, now));
    },
    findRight: async (req, res) => {
      const { right, now } = await rights.locate(res.locals.principal, rightId(req));
      http.sendFound(res, right.generation, representation(right, publicBaseUrl, now));
    },
    removeRight: change((principal, user, id, ifMatch) => rights.remove(principal, user, id, ifMatch)),
    activateRight: transition('activate'),
    suspendRight: transition('suspend'),
    // A metered right gives the body's `amount`. Sent under an Idempotency-Key (the gateway's id
    // is then the consumption's), its record decides whether it was applied (docs/decisions/0051).
    usageRight: (req, res, next) => {
      const { amount = 1 } = http.parseBody(UsageBody, req.body);
      const consumptionId = http.resourceIdOf(req);
      const caller = http.callerSignal(res);
      return change(async (principal, userId, rightId, expectedGeneration) => {
        const target = { userId, rightId, expectedGeneration };
        const keyed =
          consumptionId && (await consumptions.useRight(principal, target, { amount, consumptionId, caller }));
        return keyed ? { ...keyed, removed: false } : rights.use(principal, target, amount, caller);
      })(req, res, next);
    },
    // docs/api.md "Adjustments": answers the right as it now is.
    adjustRight: async (req, res) => {
      const { amount } = http.parseBody(AdjustmentBody, req.body);
      const done = await rights.adjust(
        res.locals.principal,
        { userId: http.connectIdOf(req), rightId: rightId(req) },
        amount,
      );
      tellProjection(res, done);
      http.sendResource(res, done.right.generation, representation(done.right, publicBaseUrl, done.now));
    },
    // docs/api.md "Consumption by SKU" and "Reservations": the gateway's id for a request with an
    // Idempotency-Key is the consumption's (the reservation's), so a retry is applied once.
    consumeEntitlement: async (req, res) => {
      const { amount, clockId } = http.parseBody(ConsumptionBody, req.body ?? {});
      const consumptionId = http.resourceIdOf(req);
      const request = {
        amount: amount ?? 1,
        ...(consumptionId ? { consumptionId } : {}),
        caller: http.callerSignal(res),
      };
      const done = await consumptions.consume(res.locals.principal, skuOfUser(req, clockId), request);
      tellProjectionOf(res, done.touched);
      http.sendJson(res, done.body);
    },
    createReservation: async (req, res) => {
      const { amount, ttl, clockId } = http.parseBody(ReservationBody, req.body ?? {});
      const reservationId = http.resourceIdOf(req);
      const request = {
        amount: amount ?? 1,
        ...(ttl ? { ttl } : {}),
        ...(reservationId ? { reservationId } : {}),
        caller: http.callerSignal(res),
      };
      const done = await reservations.reserve(res.locals.principal, skuOfUser(req, clockId), request);
      tellProjectionOf(res, done.touched);
      http.sendJson(res.status(201), done.body);
    },
    commitReservation: async (req, res) => {
      const { amount } = http.parseBody(CommitBody, req.body ?? {});
      const done = await reservations.commit(res.locals.principal, reservationOf(req), amount);
      // A commit of 0 is a release, and answered as one (docs/api.md "Reservations").
      if ('released' in done) {
        tellProjectionOf(res, done.released);
        res.status(204).end();
        return;
      }
      tellProjectionOf(res, done.touched);
      http.sendJson(res, done.body);
    },
    releaseReservation: async (req, res) => {
      tellProjectionOf(res, await reservations.release(res.locals.principal, reservationOf(req)));
      res.status(204).end();
    },
    getRightHistory: (req, res) =>
      http.sendHistory(req, res, publicBaseUrl, (page) =>
        rights.history(res.locals.principal, http.connectIdOf(req), rightId(req), page),
      ),
    // docs/api.md: signed right tokens.
    getRightToken: async (req, res) => {
      const token = await tokens.issue(res.locals.principal, http.connectIdOf(req), rightId(req));
      res.type('application/jwt').set('Cache-Control', 'no-store').send(token);
    },
    getJwks: async (_req, res) => {
      // Verifiers may keep the keys a minute; a token of a newer key (an unknown kid) makes them fetch again.
      http.sendJson(res.set('Cache-Control', `public, max-age=${JWKS_MAX_AGE_S}`), await tokens.jwks());
    },
    rotateRightTokenKey: async (_req, res) => {
      http.sendJson(res.status(201), { kid: await tokens.rotateFor(res.locals.principal) });
    },
  });
  // For the gateway to load its entitlement projection (docs/api.md, docs/decisions/0034).
  http.bucketListing(router, '/internal/entitlements', BUCKETS, async (bucket, page) => {
    const { items, lastId } = await commands.entitled(bucket, page);
    return { items: items.map((right) => projectedOf(right, false)), lastId };
  });
  // For the scheduler to rebuild when holds lapse (docs/decisions/0045).
  http.bucketListing(router, '/internal/holds', BUCKETS, async (bucket, page) => {
    const { items, lastId } = await reservations.holding(bucket, page);
    return {
      items: items.map((record) => ({
        consumptionId: record.consumptionId,
        connectId: record.userId,
        until: lapsesAt(record).toISOString(),
        ...(record.clock ? { clockId: record.clock.clockId } : {}),
        sequence: record.generation,
      })),
      lastId,
    };
  });
  // For the scheduler to rebuild its expiries (docs/decisions/0009).
  http.bucketListing(router, '/internal/expiries', BUCKETS, async (bucket, page) => {
    const { items, lastId } = await commands.expirable(bucket, page);
    return { items: items.map(expiryEntry), lastId };
  });
  return router;
}
