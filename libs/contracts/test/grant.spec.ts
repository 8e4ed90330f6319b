import { describe, expect, it } from 'vitest';
import { grantOf, type Sku } from '../src/index';

// Service providers agree to what they serve (docs/security.md "Who may grant what").
const entry = (
  serviceProviderId: string | null,
  grantorIds: string[] | null = null,
): Pick<Sku, 'sku' | 'serviceProviderId' | 'grantorIds'> => ({ sku: 'news', serviceProviderId, grantorIds });
const provider = (result: ReturnType<typeof grantOf>) => (result.ok ? result.serviceProviderId : result.refusal.kind);

describe('who may grant a SKU, and with which provider', () => {
  it('when the catalog names a provider, then only it and the grantors it lists may grant, and the right gets it unless its grantor is it', () => {
    expect(provider(grantOf(entry('spx'), 'spx', undefined))).toBeNull(); // its own grantor: stored null
    expect(provider(grantOf(entry('spx'), 'evil', undefined))).toBe('grantor');
    expect(provider(grantOf(entry('spx'), 'evil', 'spx'))).toBe('grantor');
    expect(provider(grantOf(entry('spx', ['acme']), 'acme', undefined))).toBe('spx');
    expect(provider(grantOf(entry('spx', ['acme']), 'acme', 'spx'))).toBe('spx');
    expect(provider(grantOf(entry('spx', ['acme']), 'acme', 'acme'))).toBeNull();
  });

  it('when a grant names a provider other than its own grantor or the catalog’s, then it is refused as a bad provider, naming the field', () => {
    const refused = grantOf(entry('spx', ['acme']), 'acme', 'other');
    expect(refused).toEqual({
      ok: false,
      refusal: { kind: 'provider', reason: 'serviceProviderId: other does not serve news; name spx or leave it out' },
    });
    expect(provider(grantOf(entry(null), 'acme', 'anyone'))).toBe('provider');
  });

  it('when the catalog names no provider, then any grantor may grant unless grantorIds lists who', () => {
    expect(provider(grantOf(entry(null), 'acme', undefined))).toBeNull();
    expect(provider(grantOf(entry(null), 'acme', 'acme'))).toBeNull();
    expect(provider(grantOf(entry(null, ['acme']), 'acme', null))).toBeNull();
    expect(provider(grantOf(entry(null, ['acme']), 'globex', null))).toBe('grantor');
    expect(provider(grantOf(entry(null, []), 'acme', null))).toBe('grantor');
  });
});
