import { basicCaller } from '@rs/testing';
import { describe, expect, it } from 'vitest';
import { canManage, canSee, canSubscribeFor, visibleGrantorOf } from '../src/domain/access';

const basic = basicCaller;

describe('docs/api.md "Principals and authorization": subscriptions', () => {
  it('visibility: a grantor sees the subscriptions of its grantorId; admins see all', () => {
    expect(canSee(basic('A'), { grantorId: 'A' })).toBe(true);
    expect(canSee(basic('B'), { grantorId: 'A' })).toBe(false);
    expect(canSee(basic('B', true), { grantorId: 'A' })).toBe(true);
    expect(visibleGrantorOf(basic('B'))).toBe('B');
    expect(visibleGrantorOf(basic('B', true))).toBeNull();
  });

  it("delete, activate and suspend of another grantor's subscription are refused", () => {
    expect(canManage(basic('A'), { grantorId: 'A' })).toBe(true);
    expect(canManage(basic('B'), { grantorId: 'A' })).toBe(false);
    expect(canManage(basic('B', true), { grantorId: 'A' })).toBe(true);
  });

  it("create: for the caller's own grantor unless admin", () => {
    expect(canSubscribeFor(basic('A'), 'A')).toBe(true);
    expect(canSubscribeFor(basic('A'), 'B')).toBe(false);
    expect(canSubscribeFor(basic('A', true), 'B')).toBe(true);
  });
});
