import { systemClock, type Clock } from '@rs/time';
import type { RequestHandler } from 'express';
import { tooManyRequests } from '@rs/http';

export interface RateLimitOptions {
  /** Sustained requests per second per client; 0 turns the limit off. */
  perSecond: number;
  /** Requests a client may make at once after being idle. */
  burst: number;
}

/**
 * Per-client token buckets (per gateway process). Every response carries the IETF
 * RateLimit fields (draft-ietf-httpapi-ratelimit-headers): the policy, and what remains;
 * past the limit, 429 with Retry-After.
 */
export function rateLimit(options: RateLimitOptions, clock: Clock = systemClock): RequestHandler {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const windowSeconds = Math.max(1, Math.ceil(options.burst / Math.max(options.perSecond, 1e-9)));
  const policy = `"per-client";q=${options.burst};w=${windowSeconds}`;
  return (_req, res, next) => {
    if (options.perSecond <= 0) return next();
    const clientId = res.locals.principal.clientId;
    const at = clock().getTime();
    const bucket = buckets.get(clientId) ?? { tokens: options.burst, at };
    bucket.tokens = Math.min(options.burst, bucket.tokens + ((at - bucket.at) / 1000) * options.perSecond);
    bucket.at = at;
    if (buckets.size > 100_000) buckets.clear();
    buckets.set(clientId, bucket);
    res.set('RateLimit-Policy', policy);
    if (bucket.tokens < 1) {
      const retryAfter = Math.ceil((1 - bucket.tokens) / options.perSecond);
      res.set('RateLimit', `"per-client";r=0;t=${retryAfter}`);
      return next(tooManyRequests(`rate limit of ${options.perSecond} requests per second exceeded`, retryAfter));
    }
    bucket.tokens -= 1;
    const refill = Math.ceil((options.burst - bucket.tokens) / options.perSecond);
    res.set('RateLimit', `"per-client";r=${Math.floor(bucket.tokens)};t=${refill}`);
    next();
  };
}
