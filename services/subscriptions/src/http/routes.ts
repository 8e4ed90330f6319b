import { BUCKETS } from '@rs/hashing';
import { PlanChangeBody, SubscriptionCreateBody, SubscriptionId } from '@rs/contracts';
import * as http from '@rs/http';
import type { Request, Router } from 'express';
import { representation, scheduleEntry, type SubscriptionCommand } from '../domain/subscription';
import type { Renewals } from '../app/renewals';
import type { SubscriptionUseCases } from '../app/subscriptions';

/** The subscriptions API of docs/api.md, behind the gateway: HTTP in and out; the rules are the use cases'. */
export function subscriptionRoutes(
  { subscriptions, renewals }: { subscriptions: SubscriptionUseCases; renewals: Renewals },
  publicBaseUrl: string,
): Router {
  const router = http.exactRouter();
  const id = (req: Request) => http.parseParam(SubscriptionId, 'subscriptionId', req.params.subscriptionId);
  const change = (act: Parameters<typeof http.userResourceChange>[1]) =>
    http.userResourceChange({ name: 'subscriptionId', schema: SubscriptionId }, act);
  const transition = (command: SubscriptionCommand) =>
    change((principal, user, subscriptionId, ifMatch) =>
      subscriptions.transition(principal, user, subscriptionId, command, ifMatch),
    );

  http.serveRoutes(router, 'subscriptions', {
    listSubscriptions: async (req, res) => {
      const filter = { userId: http.connectIdOf(req), grantorId: http.queryParam(req, 'grantorid') ?? null };
      await http.sendNewestFirst(req, res, publicBaseUrl, {
        read: (limit, after) => subscriptions.list(res.locals.principal, { ...filter, limit, after }),
        body: (found) => ({ subscription: found.map((subscription) => representation(subscription, publicBaseUrl)) }),
      });
    },
    createSubscription: async (req, res) => {
      const body = http.parseBody(SubscriptionCreateBody, req.body);
      const user = http.connectIdOf(req);
      const subscription = await subscriptions.create(res.locals.principal, user, body, http.resourceIdOf(req));
      http.sendCreated(res, subscription.generation, representation(subscription, publicBaseUrl));
    },
    getSubscription: async (req, res) => {
      const subscription = await subscriptions.get(res.locals.principal, http.connectIdOf(req), id(req));
      http.sendResource(res, subscription.generation, representation(subscription, publicBaseUrl));
    },
    findSubscription: async (req, res) => {
      const subscription = await subscriptions.locate(res.locals.principal, id(req));
      http.sendFound(res, subscription.generation, representation(subscription, publicBaseUrl));
    },
    deleteSubscription: change((principal, user, subscriptionId, ifMatch) =>
      subscriptions.remove(principal, user, subscriptionId, ifMatch),
    ),
    getSubscriptionHistory: (req, res) =>
      http.sendHistory(req, res, publicBaseUrl, (page) =>
        subscriptions.history(res.locals.principal, http.connectIdOf(req), id(req), page),
      ),
    changeSubscriptionPlan: async (req, res) => {
      const body = http.parseBody(PlanChangeBody, req.body);
      const target = {
        userId: http.connectIdOf(req),
        subscriptionId: id(req),
        expectedGeneration: http.ifMatchGeneration(req),
      };
      const subscription = await subscriptions.changePlan(res.locals.principal, target, body);
      http.sendResource(res, subscription.generation, representation(subscription, publicBaseUrl));
    },
    withdrawSubscriptionChange: change((principal, user, subscriptionId, ifMatch) =>
      subscriptions.withdrawChange(principal, user, subscriptionId, ifMatch),
    ),
    activateSubscription: transition('activate'),
    suspendSubscription: transition('suspend'),
  });
  // For the scheduler to rebuild its schedules (docs/api.md "Renewal").
  http.bucketListing(router, '/internal/schedules', BUCKETS, async (bucket, page) => {
    const { items, lastId } = await renewals.schedulePage(bucket, page);
    return { items: items.map(scheduleEntry), lastId };
  });
  return router;
}
