import { z } from 'zod';
import type { Principal } from './principal';

/**
 * Who made a change (docs/api.md "History"): the API client that called with Basic
 * credentials, the user of a Bearer token, a staff member (their `sub` at their identity
 * provider; docs/identity-providers.md "Staff"), or the platform itself, named by the service
 * whose command made it (renewal and expiry: `scheduler`; rights issued for a period and
 * the suspend/activate cascade: `subscriptions`). Change events carry the same actor as the
 * CloudEvent extension attributes `actorkind` and `actorid`, so history and events agree.
 */
export const Actor = z.object({
  kind: z.enum(['client', 'user', 'staff', 'system']),
  id: z.string().min(1),
});
export type Actor = z.infer<typeof Actor>;

/** The actor of a change made through the API by `principal`. */
export function actorOf(principal: Principal): Actor {
  if (principal.scheme === 'staff' && principal.person) return { kind: 'staff', id: principal.person.subject };
  if (principal.scheme === 'bearer' && principal.subject !== null) return { kind: 'user', id: principal.subject };
  if (principal.scheme === 'service') return { kind: 'system', id: principal.clientId };
  return { kind: 'client', id: principal.clientId };
}

/** The platform itself, as the service whose command made the change. */
export const systemActor = (service: 'scheduler' | 'subscriptions'): Actor => ({ kind: 'system', id: service });

/** One change of a right or subscription as `…/history` shows it (docs/api.md). */
export const HistoryEntry = z.object({
  generation: z.string(),
  type: z.string(),
  time: z.iso.datetime({ offset: true }),
  actor: Actor,
  /** Each field the change set, `[before, after]`; the creation lists every field as `[null, value]`. */
  changes: z.record(z.string(), z.tuple([z.unknown(), z.unknown()])),
});
export type HistoryEntry = z.infer<typeof HistoryEntry>;

export const HistoryPage = z.object({ history: z.array(HistoryEntry) });

/** Where a page of history starts: after this entry (the last of the previous page). */
export interface HistoryPosition {
  generation: number;
  order: number;
}

/** Which page of a history is asked for: after the entry its cursor names (null: from the first), and how many. */
export interface HistoryPageRequest {
  after: HistoryPosition | null;
  limit: number;
}

/** A history page's cursor: the generation and position of the last entry of the previous page. */
export const HISTORY_CURSOR_PATTERN = '^[0-9]{1,15}\\.[0-9]{1,3}$';

/**
 * What is kept of one change event: the resource as the event reported it (`data`), so that
 * the changes of an entry are the difference from the one before; `order` is the event's
 * place among those of the same generation (a renewal that also ends a subscription emits two).
 */
export interface HistoryRecord {
  subject: string;
  generation: number;
  order: number;
  type: string;
  time: Date;
  actor: Actor;
  data: Record<string, unknown>;
}

/**
 * Fields of an event's data that are not the resource's own: its place in history, and a
 * consumption's `amount` (what it took shows as the change of `remaining`).
 */
const NOT_CHANGES = new Set(['connectId', 'sequence', 'generation', 'amount']);

/**
 * A page of a resource's history, oldest first, from its records (any order) and the record
 * before the page (null on the first page). Pure: each entry's changes are the fields whose
 * value differs from the last record of an earlier generation (so the two events of one
 * change show the same changes).
 */
export function historyOf(
  records: readonly HistoryRecord[],
  previous: HistoryRecord | null = null,
): Array<HistoryEntry & { cursor: string }> {
  const sorted = [...records].sort((a, b) => a.generation - b.generation || a.order - b.order);
  let before: Record<string, unknown> | null = null;
  let current: { generation: number; data: Record<string, unknown> } | null = previous;
  return sorted.map((record) => {
    if (current && current.generation !== record.generation) before = current.data;
    current = { generation: record.generation, data: record.data };
    return {
      generation: String(record.generation),
      type: record.type,
      time: record.time.toISOString(),
      actor: record.actor,
      changes: changesBetween(before, record.data),
      cursor: `${record.generation}.${record.order}`,
    };
  });
}

function changesBetween(before: Record<string, unknown> | null, after: Record<string, unknown>) {
  const changes: Record<string, [unknown, unknown]> = {};
  const fields = new Set([...Object.keys(before ?? {}), ...Object.keys(after)]);
  for (const field of fields) {
    if (NOT_CHANGES.has(field)) continue;
    const was = before === null ? null : (before[field] ?? null);
    const is = after[field] ?? null;
    if (before === null || !sameValue(was, is)) changes[field] = [was, is];
  }
  return changes;
}

/** Values as JSON carries them: equal when they serialize the same (objects key by key). */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keysA = Object.keys(a);
  const keysB = Object.keys(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key) => sameValue((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}
