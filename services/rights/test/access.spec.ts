import { basicCaller, bearerCaller } from '@rs/testing';
import { describe, expect, it } from 'vitest';
import { canGrantFor, canManage, canSee, canUse, visibilityOf } from '../src/domain/access';

const basic = basicCaller;
const bearer = bearerCaller;
const right = { grantorId: 'A', serviceProviderId: 'SP', userId: 'alice' };

describe('docs/api.md "Principals and authorization": rights', () => {
  it('visibility: a grantor sees its own rights and those it provides the service for; admins see all', () => {
    expect(canSee(basic('A'), right)).toBe(true);
    expect(canSee(basic('SP'), right)).toBe(true);
    expect(canSee(basic('B'), right)).toBe(false);
    expect(canSee(basic('B', true), right)).toBe(true);
    expect(visibilityOf(basic('B'))).toEqual({ grantorOrProvider: 'B' });
    expect(visibilityOf(basic('B', true))).toBeNull();
  });

  it('remove, activate and suspend belong to the grantor (Basic) or an admin, not the service provider', () => {
    expect(canManage(basic('A'), right)).toBe(true);
    expect(canManage(basic('SP'), right)).toBe(false);
    expect(canManage(basic('B'), right)).toBe(false);
    expect(canManage(basic('B', true), right)).toBe(true);
    expect(canManage(bearer('A', 'alice', ['id.user.right.use']), right)).toBe(false);
  });

  it("usage: grantor, service provider, or a Bearer token with id.user.right.use for that user whose client's grantor sees the right", () => {
    expect(canUse(basic('A'), right)).toBe(true);
    expect(canUse(basic('SP'), right)).toBe(true);
    expect(canUse(basic('B'), right)).toBe(false);
    expect(canUse(bearer('A', 'alice', ['id.user.right.use']), right)).toBe(true);
    expect(canUse(bearer('SP', 'alice', ['id.user.right.use']), right)).toBe(true);
    // Another grantor's client: the same user, the right scope, and still not its right to spend.
    expect(canUse(bearer('B', 'alice', ['id.user.right.use']), right)).toBe(false);
    expect(canUse(bearer('A', 'alice', ['id.user.right.read']), right)).toBe(false);
    expect(canUse(bearer('A', 'bob', ['id.user.right.use']), right)).toBe(false);
    expect(canUse(bearer('B', 'bob', ['id.user.right.use'], true), right)).toBe(true);
  });

  it("create: for the caller's own grantor unless admin", () => {
    expect(canGrantFor(basic('A'), 'A')).toBe(true);
    expect(canGrantFor(basic('A'), 'B')).toBe(false);
    expect(canGrantFor(basic('A', true), 'B')).toBe(true);
  });
});
