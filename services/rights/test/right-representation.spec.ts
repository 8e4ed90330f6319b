import { describe, expect, it } from 'vitest';
import { aRight } from './right-fixture';
import { isActive, representation, type RightEntity } from '../src/domain/right';

const right = (fields: Partial<RightEntity> = {}): RightEntity =>
  aRight({
    userId: 'alice@example.com',
    start: new Date('2026-03-01T00:00:00Z'),
    end: new Date('2026-04-01T00:00:00Z'),
    timeInterval: '2026-03-01T01:00:00+01:00/2026-04-01T02:00:00+02:00',
    ...fields,
  });

describe('docs/api.md `active`: state ACTIVE and now inside the interval', () => {
  it('when now is at the start, inside, at the end, or the state is not ACTIVE, then active says so', () => {
    expect(isActive(right(), new Date('2026-03-01T00:00:00Z'))).toBe(true);
    expect(isActive(right(), new Date('2026-03-15T00:00:00Z'))).toBe(true);
    expect(isActive(right(), new Date('2026-04-01T00:00:00Z'))).toBe(false);
    expect(isActive(right(), new Date('2026-02-28T23:59:59Z'))).toBe(false);
    expect(isActive(right({ state: 'SUSPENDED' }), new Date('2026-03-15T00:00:00Z'))).toBe(false);
  });
});

describe('docs/api.md "href and links" and "Rights"', () => {
  it('then the links are self, user, use and the suspend action, plus its subscription when it has one', () => {
    const view = representation(
      right({ subscriptionId: 'S1' }),
      'https://api.example.com',
      new Date('2026-03-15T00:00:00Z'),
    );
    const user = 'https://api.example.com/id/users/alice%40example.com';
    expect(view.link).toEqual([
      { rel: 'self', href: `${user}/rights/R1`, type: null, idref: null },
      { rel: 'user', href: user, type: null, idref: null },
      { rel: 'use', href: `${user}/rights/R1/usage`, type: null, idref: null },
      { rel: 'suspend', href: `${user}/rights/R1/suspend`, type: 'action', idref: null },
      { rel: 'subscription', href: `${user}/subs/S1`, type: null, idref: null },
    ]);
    expect(view).toMatchObject({ generation: '1', active: true, timeInterval: right().timeInterval });
  });
});
