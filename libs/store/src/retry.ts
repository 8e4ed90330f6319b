import { AsyncLocalStorage } from 'node:async_hooks';
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
 * Thrown instead of starting a change whose caller stopped waiting before its turn came (a
 * request whose client, the gateway at its deadline, closed the connection): nothing was
 * changed. Without it a burst on one subject keeps the process busy with answers nobody reads
 * while every retry queues behind them (docs/decisions/0077).
 */
export class CallerLeft extends DomainError {
  constructor(what: string) {
    super('unavailable', `the caller stopped waiting before the change of ${what} began; nothing was changed`, 1);
  }
}

/**
 * Thrown when an attempt starts a loop of its own `what`: that loop would wait for the turn its
 * caller holds, forever, and every later change of the subject in this process behind it. A bug,
 * so it fails at once (500) instead.
 */
export class OwnTurnAwaited extends Error {
  constructor(what: string) {
    super(`a change of ${what} was started within a change of ${what}: it would wait for itself`);
    this.name = 'OwnTurnAwaited';
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
 * and lose, by generation. An attempt that starts a loop of its own `what` is refused
 * (`OwnTurnAwaited`): it would wait for itself.
 *
 * `caller`: aborted when whoever asked for the change stopped waiting for it. A change whose
 * turn comes after that is not started (`CallerLeft`); one under way is carried through, so
 * only a loop that is the first thing a request writes may be given it.
 */
export function untilStored<T>(
  what: string,
  attempt: () => Promise<T | typeof RACE_LOST>,
  caller?: AbortSignal,
): Promise<T> {
  for (let held = turns.getStore(); held; held = held.outer)
    if (held.what === what && !held.over) return Promise.reject(new OwnTurnAwaited(what));
  return documentLock.run(TURNS, what, async () => {
    if (caller?.aborted) throw new CallerLeft(what);
    const turn: Turn = { what, over: false, outer: turns.getStore() };
    try {
      return await turns.run(turn, () => racing(what, attempt));
    } finally {
      // Work the attempt left behind (a timer, a later flush) still sees the turn; once it is
      // over, a loop of the same subject there waits its turn as any other would.
      turn.over = true;
    }
  });
}

/** The turns the running code is within, innermost first. */
interface Turn {
  readonly what: string;
  over: boolean;
  readonly outer: Turn | undefined;
}
const turns = new AsyncLocalStorage<Turn>();

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
