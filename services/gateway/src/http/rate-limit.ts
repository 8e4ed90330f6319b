import { systemClock, type Clock } from '@rs/time';
import type { RequestHandler } from 'express';
import { tooManyRequests } from '@rs/http';

export interface RateLimitOptions {
  /** Sustained requests per second per client; 0 turns the limit off. */
  perSecond: number;
  /** Requests a client may make at once after being idle. */
  burst: number;
  /**
   * The gateway's live replicas (DESIGN.md 10): the limits hold across all of them, each
   * replica enforcing its share (a load balancer spreads a client's requests over them).
   */
  replicas?: () => number;
}

/**
 * Per-client token buckets, each gateway replica holding its share of the limit (DESIGN.md
 * 10): `perSecond` and `burst` divided by the live replicas, so that a client spread over them
 * gets the configured rate in all. Every response carries the IETF RateLimit fields
 * (draft-ietf-httpapi-ratelimit-headers): the policy (the cluster's), and what remains here;
 * past the limit, 429 with Retry-After.
 */
export function rateLimit(options: RateLimitOptions, clock: Clock = systemClock): RequestHandler {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const windowSeconds = Math.max(1, Math.ceil(options.burst / Math.max(options.perSecond, 1e-9)));
  const policy = `"per-client";q=${options.burst};w=${windowSeconds}`;
  return (_req, res, next) => {
    if (options.perSecond <= 0) return next();
    const replicas = Math.max(1, options.replicas?.() ?? 1);
    const perSecond = options.perSecond / replicas;
    const burst = Math.max(1, options.burst / replicas);
    const clientId = res.locals.principal.clientId;
    const at = clock().getTime();
    const bucket = buckets.get(clientId) ?? { tokens: burst, at };
    bucket.tokens = Math.min(burst, bucket.tokens + ((at - bucket.at) / 1000) * perSecond);
    bucket.at = at;
    if (buckets.size > 100_000) buckets.clear();
    buckets.set(clientId, bucket);
    res.set('RateLimit-Policy', policy);
    if (bucket.tokens < 1) {
      const retryAfter = Math.ceil((1 - bucket.tokens) / perSecond);
      res.set('RateLimit', `"per-client";r=0;t=${retryAfter}`);
      return next(tooManyRequests(`rate limit of ${options.perSecond} requests per second exceeded`, retryAfter));
    }
    bucket.tokens -= 1;
    const refill = Math.ceil((burst - bucket.tokens) / perSecond);
    res.set('RateLimit', `"per-client";r=${Math.floor(bucket.tokens)};t=${refill}`);
    next();
  };
}
