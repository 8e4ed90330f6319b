import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { InternalTokenKeys, InternalTokenSigner, verifyInternalToken } from '../src/index';

const OLD = 'o'.repeat(32);
const NEW = 'n'.repeat(32);
const principal = { clientId: 'c1', grantorId: 'G', admin: false, scheme: 'basic' as const, scopes: [], subject: null };

describe('internal tokens through a rotation (docs/operations.md)', () => {
  it('when pods at every step of a rotation call each other, then each accepts what the others sign, and only a pod without the key refuses', async () => {
    // Step 1 adds the new key as the previous one (accepted, not used); step 2 swaps them; step 3 drops the old.
    const steps = [
      { current: OLD, previous: null },
      { current: OLD, previous: NEW },
      { current: NEW, previous: OLD },
      { current: NEW, previous: null },
    ];
    for (let i = 0; i < steps.length - 1; i++) {
      // During a rolling change pods of step i and step i+1 run side by side.
      const pair = [steps[i]!, steps[i + 1]!] as const;
      for (const [signer, verifier] of [pair, [pair[1], pair[0]]] as const) {
        const token = await new InternalTokenSigner(signer.current, 'gateway').tokenFor(principal, 'rights');
        await expect(verifyInternalToken(new InternalTokenKeys(verifier), token, 'rights')).resolves.toEqual(principal);
      }
    }
    const signedOld = await new InternalTokenSigner(OLD, 'gateway').tokenFor(principal, 'rights');
    await expect(verifyInternalToken(new InternalTokenKeys(steps[3]!), signedOld, 'rights')).rejects.toThrow();
  });

  it('when a token names no key of the ring (no kid, another kid) or is not a token, then it is refused, even signed with a key of the ring', async () => {
    const withoutKid = await new SignJWT({ cid: 'c1', sch: 'basic' })
      .setProtectedHeader({ alg: 'HS256' })
      .setIssuer('rs-internal')
      .setAudience('rs-rights')
      .setIssuedAt()
      .setExpirationTime('60s')
      .sign(new TextEncoder().encode(OLD));
    const keys = new InternalTokenKeys({ current: NEW, previous: OLD });
    await expect(verifyInternalToken(keys, withoutKid, 'rights')).rejects.toThrow('names no key');
    const forged = await new SignJWT({ cid: 'admin', adm: true })
      .setProtectedHeader({ alg: 'HS256', kid: 'anything' })
      .setIssuer('rs-internal')
      .setAudience('rs-rights')
      .setExpirationTime('60s')
      .sign(new TextEncoder().encode('x'.repeat(32)));
    await expect(verifyInternalToken(keys, forged, 'rights')).rejects.toThrow();
    await expect(verifyInternalToken(keys, 'not a token', 'rights')).rejects.toThrow();
  });

  it('when a token addressed to one service is presented to another, then the other refuses it', async () => {
    const keys = new InternalTokenKeys(NEW);
    const forRights = await new InternalTokenSigner(NEW, 'gateway').tokenFor(principal, 'rights');
    await expect(verifyInternalToken(keys, forRights, 'rights')).resolves.toEqual(principal);
    for (const other of ['catalog', 'subscriptions', 'webhooks', 'scheduler'])
      await expect(verifyInternalToken(keys, forRights, other), other).rejects.toThrow();
  });
});
