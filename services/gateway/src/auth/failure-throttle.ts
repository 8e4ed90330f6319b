import { systemClock, type Clock } from '@rs/time';
import { isIPv6 } from 'node:net';
import { LRUCache } from 'lru-cache';

export interface ThrottlePolicy {
  /** Failures allowed within `windowMs` before attempts are refused. */
  freeFailures: number;
  windowMs: number;
  /** The first refusal lasts this long; each further failure doubles it, up to `maxBlockMs`. */
  baseBlockMs: number;
  maxBlockMs: number;
}

interface FailureRecord {
  failures: number[];
  blockedUntil: number;
  excess: number;
}

/** A guesser at one address trying one client: a handful of free failures. */
export const PER_CLIENT_AND_ADDRESS: ThrottlePolicy = {
  freeFailures: 5,
  windowMs: 60_000,
  baseBlockMs: 1_000,
  maxBlockMs: 300_000,
};
/** One address failing for any clients at all (it may rotate client ids): more, but bounded. */
export const PER_ADDRESS: ThrottlePolicy = {
  freeFailures: 30,
  windowMs: 60_000,
  baseBlockMs: 1_000,
  maxBlockMs: 300_000,
};

/**
 * Slows down guessing of Basic secrets (docs/api.md "No lock-out"): attempts to verify a
 * secret are counted per (client, source address) and per source address, never per client
 * alone, so a client id, which is not secret, cannot be used to lock its owner out from
 * elsewhere; and the authenticator asks only for secrets it has not verified already.
 * An attempt counts when it is admitted, before its hash is computed, so a flood of
 * concurrent wrong secrets is refused after the free ones instead of all being hashed; one
 * that turns out right is taken back. Records live in a bounded LRU: a flood of names evicts
 * the oldest records one by one (the flooding address's own record, touched by every
 * attempt, stays), never all at once. Per gateway process.
 */
export class FailureThrottle {
  private readonly records: LRUCache<string, FailureRecord>;

  constructor(
    private readonly policies = { pair: PER_CLIENT_AND_ADDRESS, address: PER_ADDRESS },
    private readonly clock: Clock = systemClock,
    maxRecords = 100_000,
  ) {
    this.records = new LRUCache({ max: maxRecords });
  }

  /**
   * Admits an attempt to verify `clientId`'s secret from `address` and counts it: 0 when it
   * may go on, else the seconds it must wait (nothing counted).
   */
  attempt(clientId: string, address: string): number {
    const now = this.clock().getTime();
    const until = Math.max(
      this.records.get(pairKey(clientId, address))?.blockedUntil ?? 0,
      this.records.get(addressKey(address))?.blockedUntil ?? 0,
    );
    if (until > now) return Math.ceil((until - now) / 1000);
    this.count(pairKey(clientId, address), this.policies.pair, now);
    this.count(addressKey(address), this.policies.address, now);
    return 0;
  }

  /**
   * A Bearer token's check from `address` (docs/identity-providers.md "Issuers stay in their
   * lane"): 0 when it may go on, else the seconds to wait. Nothing is counted until it fails.
   */
  admitToken(address: string): number {
    const now = this.clock().getTime();
    const until = this.records.get(addressKey(address))?.blockedUntil ?? 0;
    return until > now ? Math.ceil((until - now) / 1000) : 0;
  }

  /** A Bearer token from `address` was refused: it counts against the address's failures. */
  tokenFailed(address: string): void {
    this.count(addressKey(address), this.policies.address, this.clock().getTime());
  }

  /** The attempt verified its secret: its (client, address) record goes, and the address gets its attempt back. */
  succeeded(clientId: string, address: string): void {
    this.records.delete(pairKey(clientId, address));
    const record = this.records.get(addressKey(address));
    if (record && record.blockedUntil <= this.clock().getTime()) record.failures.pop();
  }

  private count(key: string, policy: ThrottlePolicy, now: number): void {
    const record = this.records.get(key) ?? { failures: [], blockedUntil: 0, excess: 0 };
    record.failures = record.failures.filter((at) => now - at < policy.windowMs);
    record.failures.push(now);
    if (record.failures.length >= policy.freeFailures) {
      record.blockedUntil = now + Math.min(policy.maxBlockMs, policy.baseBlockMs * 2 ** record.excess);
      record.excess += 1;
      record.failures = record.failures.slice(-policy.freeFailures);
    }
    this.records.set(key, record);
  }
}

const pairKey = (clientId: string, address: string) => `c\u0000${clientId}\u0000${addressKey(address)}`;

/** An IPv6 host usually owns its whole /64: one address, for throttling. */
function addressKey(address: string): string {
  if (!isIPv6(address) || address.startsWith('::ffff:')) return address.replace(/^::ffff:/, '');
  const groups = expandIPv6(address);
  return `${groups.slice(0, 4).join(':')}::/64`;
}

function expandIPv6(address: string): string[] {
  const [head, tail] = address.split('%')[0]!.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}
