import { DomainError } from '@rs/contracts';

/**
 * Thrown when a compare-and-set kept losing to other writers. Transient: the HTTP layer
 * answers it 503 with Retry-After, a command consumer retries the message later.
 */
export class ConcurrentChanges extends DomainError {
  constructor(message: string) {
    super('unavailable', message, 1);
  }
}

export const MAX_RACES = 8;

/**
 * The one retry loop of every read-decide-write (docs/architecture.md): `attempt` reads the
 * current state, decides, and tries its compare-and-set; it returns `RACE_LOST` when
 * another writer changed the document in between, and anything else when done.
 */
export async function untilStored<T>(what: string, attempt: () => Promise<T | typeof RACE_LOST>): Promise<T> {
  for (let race = 0; race < MAX_RACES; race++) {
    const outcome = await attempt();
    if (outcome !== RACE_LOST) return outcome;
  }
  throw new ConcurrentChanges(`too many concurrent changes to ${what}`);
}

export const RACE_LOST: unique symbol = Symbol('race lost');
