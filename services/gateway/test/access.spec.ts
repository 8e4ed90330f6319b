import { describe, expect, it } from 'vitest';
import { acceptsBearer, answersJson, classify, grantorFilter, redirectLocation } from '../src/domain/access';

describe('spec 4 and 5: which operation a request is', () => {
  it('user paths go to their owning service with the connectId decoded, and the scope a Bearer token needs', () => {
    expect(classify('GET', '/id/users/alice%40example.com/rights')).toEqual({
      service: 'rights',
      connectId: 'alice@example.com',
      bearerScope: 'id.user.right.read',
      list: 'rights',
      adminOnly: false,
    });
    expect(classify('GET', '/id/users/alice/subs/S1')).toMatchObject({
      service: 'subscriptions',
      bearerScope: 'id.user.sub.read',
      list: null,
    });
    expect(classify('POST', '/id/users/alice/rights/R1/usage')).toMatchObject({ bearerScope: 'id.user.right.use' });
    expect(classify('POST', '/id/users/alice/rights')).toMatchObject({ bearerScope: null, list: null });
    expect(classify('GET', '/catalog/skus/news')).toMatchObject({ service: 'catalog', adminOnly: true });
    expect(classify('GET', '/admin/clients')).toBeNull();
  });

  it('DESIGN.md 3 "Challenges": Bearer is accepted only where spec 5 gives it a scope (and to read a user)', () => {
    expect(acceptsBearer('GET', '/id/users/alice')).toBe(true);
    expect(acceptsBearer('PUT', '/id/users/alice')).toBe(false);
    expect(acceptsBearer('GET', '/id/users/alice/rights/R1')).toBe(true);
    expect(acceptsBearer('POST', '/id/users/alice/rights/R1/usage')).toBe(true);
    expect(acceptsBearer('POST', '/id/users/alice/rights/R1/suspend')).toBe(false);
    expect(acceptsBearer('DELETE', '/id/users/alice/subs/S1')).toBe(false);
    expect(acceptsBearer('GET', '/catalog/skus')).toBe(false);
    expect(acceptsBearer('GET', '/admin/clients')).toBe(false);
  });

  it('DESIGN.md 3 "Content negotiation": operations that answer JSON, and every subscription operation', () => {
    expect(answersJson('GET', '/id/users/alice/rights')).toBe(true);
    expect(answersJson('POST', '/id/users/alice/rights')).toBe(true);
    expect(answersJson('POST', '/id/users/alice/rights/R1/suspend')).toBe(false);
    expect(answersJson('DELETE', '/id/users/alice/rights/R1')).toBe(false);
    expect(answersJson('POST', '/id/users/alice/subs/S1/suspend')).toBe(true);
    expect(answersJson('DELETE', '/id/users/alice/subs/S1')).toBe(true);
    expect(answersJson('PUT', '/admin/clients/app')).toBe(true);
    expect(answersJson('PUT', '/admin/revoked-tokens/jti-1')).toBe(false);
  });
});

describe('spec 5 rule 2 and DESIGN.md 3 "307"', () => {
  it('the grantor filter is found whatever the case of its name', () => {
    expect(grantorFilter(new URLSearchParams('GRANTORID=A&limit=5'))).toBe('A');
    expect(grantorFilter(new URLSearchParams('limit=5'))).toBeNull();
  });

  it("the redirect keeps every parameter and adds the caller's grantor under the name of the list", () => {
    expect(
      redirectLocation('https://api.example.com', '/id/users/alice/rights?limit=5&active=now', 'rights', 'A'),
    ).toBe('https://api.example.com/id/users/alice/rights?limit=5&active=now&grantorId=A');
    expect(redirectLocation('https://api.example.com/rs', '/id/users/alice/subs', 'subscriptions', 'B')).toBe(
      'https://api.example.com/rs/id/users/alice/subs?grantorid=B',
    );
  });
});
