import { describe, expect, it } from 'vitest';
import { Sealer } from '../src/index';

const OLD = 'o'.repeat(32);
const NEW = 'n'.repeat(32);
const PURPOSE = 'rs-test-secrets';

describe('Sealer, rotated (docs/operations.md)', () => {
  it('when a secret is sealed, then it records its key and opens again; another purpose or key does not open it', () => {
    const sealer = new Sealer(OLD, PURPOSE);
    const sealed = sealer.seal('whsec_abc');
    expect(sealed.kid).toBe(sealer.keyId);
    expect(JSON.stringify(sealed)).not.toContain('whsec_abc');
    expect(sealer.open(sealed)).toBe('whsec_abc');
    expect(() => new Sealer(OLD, 'rs-other').open(sealed)).toThrow();
    expect(() => new Sealer(NEW, PURPOSE).open(sealed)).toThrow(/neither the current nor the previous/);
  });

  it('when keys rotate, then every step opens what the others sealed: the new key accepted, then sealing, then alone', () => {
    const before = new Sealer(OLD, PURPOSE);
    const accepting = new Sealer({ current: OLD, previous: NEW }, PURPOSE); // step 1: the new key accepted
    const sealing = new Sealer({ current: NEW, previous: OLD }, PURPOSE); // step 2: the new key seals
    const after = new Sealer({ current: NEW, previous: null }, PURPOSE); // step 3: the old key gone
    const old = before.seal('first');
    const fresh = sealing.seal('second');
    for (const sealer of [accepting, sealing]) {
      expect(sealer.open(old)).toBe('first');
      expect(sealer.open(fresh)).toBe('second');
    }
    expect(sealing.isCurrent(old)).toBe(false); // what the re-seal step seals again
    expect(sealing.isCurrent(fresh)).toBe(true);
    expect(after.open(sealing.seal(sealing.open(old)))).toBe('first');
    expect(() => after.open(old)).toThrow();
  });

  it('when a value was sealed before keys had ids, then the current key and then the previous one are tried', () => {
    const { kid: _, ...legacy } = new Sealer(OLD, PURPOSE).seal('legacy');
    expect(new Sealer({ current: NEW, previous: OLD }, PURPOSE).open(legacy)).toBe('legacy');
    expect(new Sealer({ current: NEW, previous: OLD }, PURPOSE).isCurrent(legacy)).toBe(false);
    expect(() => new Sealer(NEW, PURPOSE).open(legacy)).toThrow();
  });
});
