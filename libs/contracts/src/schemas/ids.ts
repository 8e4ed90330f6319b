import { randomBytes } from 'node:crypto';
import { ulid, type PRNG } from 'ulid';

const POOL_BYTES = 4096;
let pool = randomBytes(POOL_BYTES);
let next = 0;

/**
 * Cryptographic randomness drawn from a pooled buffer: the ulid library asks its PRNG once
 * per character (16 per id), and a `getRandomValues` call each was a visible share of the
 * rights service's CPU when creating rights (docs/performance.md, "Measurements behind the code"). Bytes are uniform on 0..255, and 256 is a
 * multiple of ULID's 32 symbols, so each character stays uniform.
 */
const pooledRandom: PRNG = () => {
  if (next === POOL_BYTES) {
    pool = randomBytes(POOL_BYTES);
    next = 0;
  }
  return pool[next++]! / 256;
};

/** A new identifier (docs/api.md "Identifiers"): a ULID, ordered by `time`. */
export const newId = (time: number = Date.now()): string => ulid(time, pooledRandom);
