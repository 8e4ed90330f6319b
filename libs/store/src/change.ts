import { DomainError, type Change, type Decision } from '@rs/contracts';
import type { OutboxEntry } from './outbox-entry';
import { RACE_LOST, untilStored } from './retry';

export { UNCHANGED, type Change, type Decision } from '@rs/contracts';

/**
 * What every store's `update` stores: `next`, decided from `current`, only if the entity is
 * still at `current`'s generation (compare-and-set), with its events; `removes`: the change
 * removes it (a tombstone, or the document gone).
 */
export interface EntityUpdate<E> {
  current: E;
  next: E;
  outbox: OutboxEntry[];
  removes?: true | undefined;
}

/** One change of one entity, step by step (see `changeOne`). */
export interface ChangeSteps<E extends { generation: number }, C> {
  /** The entity, for messages (`right R1`, `SKU news`) and for its turn in this process (`untilStored`). */
  what: string;
  /** Reads the entity as stored now; null when there is none. */
  load(): Promise<E | null>;
  /** Throws the caller's refusal (a `DomainError`) when it may not make this change. */
  authorize?(current: E): void;
  /** The generation the caller saw (If-Match, docs/api.md): another is 412. */
  expectedGeneration?: number | undefined;
  decide(current: E): Decision<C> | Promise<Decision<C>>;
  /** The compare-and-set of the change with its events (the outbox); false when another writer came first. */
  write(current: E, change: Change<C>): Promise<boolean>;
  /** Aborted when the caller stopped waiting: a change not yet begun then is not begun (`untilStored`). */
  caller?: AbortSignal | undefined;
}

export type ChangeOutcome<E, C> =
  { outcome: 'missing' } | { outcome: 'unchanged'; current: E } | { outcome: 'changed'; current: E; change: Change<C> };

/**
 * The one change pipeline of every service (docs/architecture.md): load, authorize, If-Match,
 * decide, compare-and-set with the outbox, and all of it again when another writer changed
 * the entity in between (`untilStored`: in turn with this process's other changes of it). A
 * conflict is a `DomainError` (409); an entity that does not exist is the caller's to answer
 * (404 for most, 204 for some).
 */
export function changeOne<E extends { generation: number }, C>(steps: ChangeSteps<E, C>): Promise<ChangeOutcome<E, C>> {
  return untilStored<ChangeOutcome<E, C>>(
    steps.what,
    async () => {
      const current = await steps.load();
      if (!current) return { outcome: 'missing' };
      steps.authorize?.(current);
      if (steps.expectedGeneration !== undefined && current.generation !== steps.expectedGeneration)
        throw DomainError.preconditionFailed(`If-Match does not match the generation of ${steps.what}`);
      const decision = await steps.decide(current);
      if (decision.kind === 'conflict') throw DomainError.conflict(decision.reason);
      if (decision.kind === 'unchanged') return { outcome: 'unchanged', current };
      return (await steps.write(current, decision)) ? { outcome: 'changed', current, change: decision } : RACE_LOST;
    },
    steps.caller,
  );
}
