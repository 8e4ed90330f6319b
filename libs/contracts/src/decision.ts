/** A change a domain decided (`next`, its events…), to be written. */
export type Change<C> = { kind: 'change' } & C;

/**
 * What a domain decides a command does to an entity: each service's `domain/` returns one, with
 * what its changes carry (`C`), and its change pipeline (`changeOne`, libs/store) writes it.
 */
export type Decision<C> = Change<C> | { kind: 'unchanged' } | { kind: 'conflict'; reason: string };

export const UNCHANGED = { kind: 'unchanged' } as const;
