import { BUCKETS } from '@rs/store';
import { ConnectId, SubscriptionCreateBody, SubscriptionId } from '@rs/contracts';
import {
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
import { representation, type SubscriptionCommand } from '../domain/subscription';
import type { SubscriptionUseCases } from '../app/subscriptions';

/** The subscriptions API of spec 4.1, behind the gateway. */
export function subscriptionRoutes(subscriptions: SubscriptionUseCases, publicBaseUrl: string): Router {
  const router = Router();
  const user = (req: Request) => parseParam(ConnectId, 'connectId', req.params.connectId);
  const id = (req: Request) => parseParam(SubscriptionId, 'subscriptionId', req.params.subscriptionId);

  route(router, '/id/users/:connectId/subs', {
    get: async (req, res) => {
      const page = pageParams(req);
      const after = parseKeyset(page);
      const found = await subscriptions.list(res.locals.principal, {
        userId: user(req),
        grantorId: queryParam(req, 'grantorid') ?? null,
        limit: page.limit,
        after,
      });
      const last = found.at(-1);
      setNextLink(req, res, publicBaseUrl, page, last && keysetOf(last, last.subscriptionId), found.length);
      res.json({ subscription: found.map((subscription) => representation(subscription, publicBaseUrl)) });
    },
    post: async (req, res) => {
      const body = parseBody(SubscriptionCreateBody, req.body);
      const subscription = await subscriptions.create(res.locals.principal, user(req), body);
      const view = representation(subscription, publicBaseUrl);
      setETag(res, subscription.generation);
      res.status(201).location(view.href).json(view);
    },
  });

  route(router, '/id/users/:connectId/subs/:subscriptionId', {
    get: async (req, res) => {
      const subscription = await subscriptions.get(res.locals.principal, user(req), id(req));
      setETag(res, subscription.generation);
      res.json(representation(subscription, publicBaseUrl));
    },
    delete: async (req, res) => {
      await subscriptions.remove(res.locals.principal, user(req), id(req), ifMatchGeneration(req));
      res.status(204).end();
    },
  });

  for (const command of ['activate', 'suspend'] as SubscriptionCommand[]) {
    route(router, `/id/users/:connectId/subs/:subscriptionId/${command}`, {
      post: async (req, res) => {
        await subscriptions.transition(res.locals.principal, user(req), id(req), command, ifMatchGeneration(req));
        res.status(204).end();
      },
    });
  }
  // For the scheduler to rebuild its schedules (DESIGN.md 3 "Renewal").
  bucketListing(router, '/internal/schedules', BUCKETS, async (bucket) =>
    (await subscriptions.schedulePage(bucket)).map((s) => ({
      subscriptionId: s.subscriptionId,
      connectId: s.userId,
      sequence: s.generation,
      state: s.state,
      timeSpec: s.timeSpec,
      nextPeriod: s.nextPeriod,
    })),
  );
  return router;
}
