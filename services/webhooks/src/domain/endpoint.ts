import { RightEventTypes, SubscriptionEventTypes } from '@rs/contracts';

/**
 * Webhook endpoints (docs/api.md "Webhooks"): which events an endpoint receives. Pure.
 */

/** Every event type an endpoint may ask for: the change events of rights and subscriptions. */
export const EVENT_TYPES: readonly string[] = [
  ...Object.values(RightEventTypes),
  ...Object.values(SubscriptionEventTypes),
];
const FAMILIES = new Set(EVENT_TYPES.map((type) => type.split('.')[0]!));

/** A pattern is an event type, `<family>.*` (`right.*`) or `*`. */
export function invalidPatterns(patterns: readonly string[]): string[] {
  return patterns.filter((pattern) => {
    if (pattern === '*' || EVENT_TYPES.includes(pattern)) return false;
    const family = /^([a-z]+)\.\*$/.exec(pattern)?.[1];
    return family === undefined || !FAMILIES.has(family);
  });
}

export function matchesPatterns(patterns: readonly string[], type: string): boolean {
  return patterns.some(
    (pattern) =>
      pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))),
  );
}

/** An endpoint's owner (a grantor, or null for an admin's endpoint, which sees everything), and whether it hears rehearsals. */
export interface EndpointScope {
  grantorId: string | null;
  clocks: boolean;
}

/**
 * docs/api.md: an endpoint receives the events of what its grantor may read: rights it
 * grants or provides, subscriptions it grants; of an object on a test clock only when it was
 * registered with `"clocks": true` (a rehearsal's events never reach a receiver acting for real
 * time). Decided on the event's data (the resource).
 */
export function mayReceive(endpoint: EndpointScope, data: unknown): boolean {
  const resource = (data ?? {}) as { grantorId?: unknown; serviceProviderId?: unknown; clockId?: unknown };
  if (typeof resource.clockId === 'string' && !endpoint.clocks) return false;
  if (endpoint.grantorId === null) return true;
  return resource.grantorId === endpoint.grantorId || resource.serviceProviderId === endpoint.grantorId;
}
