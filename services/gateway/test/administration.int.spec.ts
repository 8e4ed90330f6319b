import { DomainError } from '@rs/contracts';
import { createLogger } from '@rs/logging';
import { basicCaller, bearerCaller, testDatabase, type TestDatabase } from '@rs/testing';
import { manualClock } from '@rs/time';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Administration } from '../src/app/administration';
import { ClientStore } from '../src/store/client-store';
import { RevocationStore } from '../src/store/revocation-store';
import { UserStore } from '../src/store/user-store';

// The gateway's own use cases with their real stores on the real database, in this process:
// each checks the admin principal itself, whatever the edge let through (docs/api.md).

const clock = manualClock('2026-03-01T00:00:00Z');
let database: TestDatabase;
let clients: ClientStore;
let users: UserStore;
let administration: Administration;
const invalidated: string[] = [];

beforeAll(async () => {
  database = await testDatabase('gateway_administration');
  clients = new ClientStore(database.db, clock);
  users = new UserStore(database.db, 0, clock);
  const revocations = new RevocationStore(database.db, {
    logger: createLogger('administration-test', 'silent'),
    minimumMs: 3_600_000,
    refreshMs: 60_000,
    clock,
  });
  administration = new Administration({
    clients,
    users,
    revocations,
    authenticator: { invalidate: (clientId) => void invalidated.push(clientId) },
    clock,
  });
});
afterAll(async () => {
  await database?.drop();
});

const notPermitted = (error: unknown) => error instanceof DomainError && error.code === 'not_permitted';
const body = { secret: 'a-secret-of-sixteen', grantorId: 'X', admin: true };

describe('the gateway administration checks the admin principal itself', () => {
  it('when a non-admin client, an admin Bearer token or no caller asks for an admin operation, then it is refused and nothing changes', async () => {
    for (const caller of [basicCaller('A'), bearerCaller('A', 'alice', ['id.user.right.read'], true), undefined]) {
      await expect(administration.putClient(caller, 'pwn', body)).rejects.toSatisfy(notPermitted);
      await expect(administration.deleteClient(caller, 'pwn')).rejects.toSatisfy(notPermitted);
      await expect(administration.listClients(caller)).rejects.toSatisfy(notPermitted);
      await expect(administration.users(caller, 10, undefined)).rejects.toSatisfy(notPermitted);
      await expect(administration.registerUser(caller, 'mallory')).rejects.toSatisfy(notPermitted);
      await expect(administration.unregisterUser(caller, 'alice')).rejects.toSatisfy(notPermitted);
      await expect(administration.revokeToken(caller, 'jti-1', undefined)).rejects.toSatisfy(notPermitted);
    }
    expect(await clients.find('pwn')).toBeNull();
    expect(await users.find('mallory')).toBeNull();
    expect(invalidated).toEqual([]);
  });

  it('when an admin client registers a client and a user, then both exist, the client is created once and its verified secret forgotten', async () => {
    const admin = basicCaller('ADMIN', true);
    expect(await administration.putClient(admin, 'acme', body)).toBe(true);
    expect(await administration.putClient(admin, 'acme', { ...body, admin: false })).toBe(false);
    expect(await clients.find('acme')).toMatchObject({ clientId: 'acme', grantorId: 'X', admin: false });
    expect(invalidated).toEqual(['acme', 'acme']);
    expect(await administration.registerUser(admin, 'bob')).toEqual({ connectId: 'bob', createdAt: clock() });
    expect(await administration.registerUser(admin, 'bob')).toBeNull();
    expect(await administration.user('bob')).toMatchObject({ connectId: 'bob' });
    await expect(administration.user('nobody')).rejects.toSatisfy(
      (error: unknown) => error instanceof DomainError && error.code === 'not_found',
    );
  });

  it('when the same client, user or token is written by several admin requests at once, then one creates it, none fails, and it is stored once', async () => {
    const admin = basicCaller('ADMIN', true);
    const atOnce = <T>(write: () => Promise<T>) => Promise.all(Array.from({ length: 8 }, write));
    const created = {
      client: await atOnce(() => administration.putClient(admin, 'at-once', body)),
      user: await atOnce(() => administration.registerUser(admin, 'carol')),
      revocation: await atOnce(() => administration.revokeToken(admin, 'jti-at-once', undefined)),
    };
    expect(created.client.filter(Boolean)).toHaveLength(1);
    expect(created.user.filter(Boolean)).toEqual([{ connectId: 'carol', createdAt: clock() }]);
    expect(created.revocation.filter(Boolean)).toHaveLength(1);
    expect(await clients.find('at-once')).toMatchObject({ clientId: 'at-once', grantorId: 'X' });
    expect(await administration.user('carol')).toMatchObject({ connectId: 'carol' });
    expect(await database.db.collection('revoked_tokens').countDocuments({ _id: 'jti-at-once' } as never)).toBe(1);
  });
});
