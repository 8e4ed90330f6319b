import { systemClock, type Clock } from '@rs/time';
import type { Request, RequestHandler, Response } from 'express';
import { tooManyRequests } from '@rs/http';
import type { Budget, BudgetKind } from '../domain/access';

/** One kind of budget: a sustained rate and the burst after idling; `perSecond` 0 turns it off. */
export interface Rate {
  perSecond: number;
  burst: number;
}

export interface RateLimitOptions {
  /** A Basic client's own calls (RATE_LIMIT_PER_SECOND, RATE_LIMIT_BURST). */
  client: Rate;
  /** Each (client, user) pair of Bearer calls (RATE_LIMIT_USER_PER_SECOND, RATE_LIMIT_USER_BURST). */
  user: Rate;
  /** The open routes, per source address (RATE_LIMIT_OPEN_PER_SECOND, RATE_LIMIT_OPEN_BURST). */
  open: Rate;
  /**
   * The gateway's live replicas (docs/operations.md): the limits hold across all of them, each
   * replica enforcing its share (a load balancer spreads a client's requests over them).
   */
  replicas?: () => number;
}

/** The RateLimit policy name of each kind of budget. */
const POLICY: Record<BudgetKind, string> = { client: 'per-client', user: 'per-user', address: 'per-address' };
/** Buckets kept at most; past it the longest idle are forgotten first (a forgotten bucket starts full). */
const MAX_BUCKETS = 100_000;

/**
 * Token buckets, one per budget (docs/security.md "Budgets"): a Basic client's own, each
 * (client, user) pair of Bearer calls apart from it, and each source address on the open
 * routes, so that no caller spends another's. Each gateway replica holds its share of a limit
 * (docs/operations.md): `perSecond` and `burst` divided by the live replicas, so that a caller
 * spread over them gets the configured rate in all. Every response carries the IETF RateLimit
 * fields (draft-ietf-httpapi-ratelimit-headers): the policy (the cluster's), and what remains
 * here; past the limit, 429 with Retry-After.
 */
export function rateLimit(
  options: RateLimitOptions,
  budgetOf: (req: Request, res: Response) => Budget,
  clock: Clock = systemClock,
): RequestHandler {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const policies = Object.fromEntries(
    (Object.keys(POLICY) as BudgetKind[]).map((kind) => {
      const rate = options[kind === 'address' ? 'open' : kind];
      const windowSeconds = Math.max(1, Math.ceil(rate.burst / Math.max(rate.perSecond, 1e-9)));
      return [kind, `"${POLICY[kind]}";q=${rate.burst};w=${windowSeconds}`];
    }),
  ) as Record<BudgetKind, string>;
  return (req, res, next) => {
    const budget = budgetOf(req, res);
    const rate = options[budget.kind === 'address' ? 'open' : budget.kind];
    if (rate.perSecond <= 0) return next();
    const replicas = Math.max(1, options.replicas?.() ?? 1);
    const perSecond = rate.perSecond / replicas;
    const burst = Math.max(1, rate.burst / replicas);
    const id = `${budget.kind}\n${budget.key}`;
    const at = clock().getTime();
    const bucket = buckets.get(id) ?? { tokens: burst, at };
    bucket.tokens = Math.min(burst, bucket.tokens + ((at - bucket.at) / 1000) * perSecond);
    bucket.at = at;
    // Re-inserted, so that the map's order is that of last use and the first key the longest idle.
    buckets.delete(id);
    buckets.set(id, bucket);
    if (buckets.size > MAX_BUCKETS) buckets.delete(buckets.keys().next().value!);
    const name = POLICY[budget.kind];
    res.setHeader('RateLimit-Policy', policies[budget.kind]);
    if (bucket.tokens < 1) {
      const retryAfter = Math.ceil((1 - bucket.tokens) / perSecond);
      res.setHeader('RateLimit', `"${name}";r=0;t=${retryAfter}`);
      return next(tooManyRequests(`rate limit of ${rate.perSecond} requests per second exceeded`, retryAfter));
    }
    bucket.tokens -= 1;
    const refill = Math.ceil((burst - bucket.tokens) / perSecond);
    res.setHeader('RateLimit', `"${name}";r=${Math.floor(bucket.tokens)};t=${refill}`);
    next();
  };
}
