import { DomainError } from '@rs/contracts';
import { documentLock } from './document-lock';

/**
 * Thrown when a compare-and-set kept losing to other writers. Transient: the HTTP layer
 * answers it 503 with Retry-After, a command consumer retries the message later.
 */
export class ConcurrentChanges extends DomainError {
  constructor(message: string) {
    super('unavailable', message, 1);
  }
}

/**
 * Lost rounds before a loop gives up. In one process loops take turns, so each lost round is to
 * another replica, which wins about every other round under a burst (docs/decisions/0074).
 */
export const MAX_RACES = 16;

/**
 * The one retry loop of every read-decide-write (docs/architecture.md): `attempt` reads the
 * current state, decides, and tries its compare-and-set; it returns `RACE_LOST` when
 * another writer changed the document in between, and anything else when done.
 *
 * The loops of one `what` in this process take turns (docs/decisions/0074): at once, all but
 * one would lose the race, read again and race again, until the busiest were told to retry
 * (503) though nothing but their neighbours stood in their way. Other processes still race,
 * and lose, by generation. An attempt must not start a loop of its own `what` (it would wait
 * for itself).
 */
export function untilStored<T>(what: string, attempt: () => Promise<T | typeof RACE_LOST>): Promise<T> {
  return documentLock.run(TURNS, what, () => racing(what, attempt));
}

/** The key space of the turns, apart from the writes' (`documentLock` by collection). */
const TURNS = 'turns of';

async function racing<T>(what: string, attempt: () => Promise<T | typeof RACE_LOST>): Promise<T> {
  for (let race = 0; race < MAX_RACES; race++) {
    const outcome = await attempt();
    if (outcome !== RACE_LOST) return outcome;
  }
  throw new ConcurrentChanges(`too many concurrent changes to ${what}`);
}

export const RACE_LOST: unique symbol = Symbol('race lost');
