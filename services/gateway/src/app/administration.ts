import { DomainError, type ClientBody, type Principal } from '@rs/contracts';
import type { Clock } from '@rs/time';
import type { Authenticator } from '../auth/authenticator';
import { hashSecret } from '../auth/secrets';
import type { ApiClient, ClientStore } from '../store/client-store';
import type { RevocationStore } from '../store/revocation-store';
import type { KnownUser, UserStore } from '../store/user-store';

export interface AdministrationOptions {
  clients: ClientStore;
  users: UserStore;
  revocations: RevocationStore;
  /** Forgets what it verified of a client that changed or went. */
  authenticator: Pick<Authenticator, 'invalidate'>;
  clock: Clock;
}

/**
 * The gateway's own use cases (docs/operations.md): API clients, the user directory (docs/api.md
 * "Users") and token revocation. Every change needs an admin client's Basic credentials, and
 * each use case checks that itself: a second lock behind the edge's authorization (docs/api.md).
 */
export class Administration {
  constructor(private readonly options: AdministrationOptions) {}

  async listClients(principal: Principal | undefined): Promise<ApiClient[]> {
    requireAdmin(principal);
    return this.options.clients.list();
  }

  /** Registers or replaces a client; true when it is new. */
  async putClient(principal: Principal | undefined, clientId: string, body: ClientBody): Promise<boolean> {
    requireAdmin(principal);
    const created = await this.options.clients.put({
      clientId,
      grantorId: body.grantorId,
      admin: body.admin ?? false,
      secretHash: await hashSecret(body.secret),
    });
    this.options.authenticator.invalidate(clientId);
    return created;
  }

  async deleteClient(principal: Principal | undefined, clientId: string): Promise<void> {
    requireAdmin(principal);
    await this.options.clients.remove(clientId);
    this.options.authenticator.invalidate(clientId);
  }

  /** Refuses tokens with `jti` from now on (until they would have expired anyway); true when new. */
  async revokeToken(principal: Principal | undefined, jti: string, expiresAt: Date | undefined): Promise<boolean> {
    requireAdmin(principal);
    return this.options.revocations.revoke(jti, expiresAt);
  }

  /** Any authenticated caller may look a user up. */
  async user(connectId: string): Promise<KnownUser> {
    const user = await this.options.users.find(connectId);
    if (!user) throw DomainError.notFound(`no user ${connectId}`);
    return user;
  }

  /** A page of the directory (admins). */
  async users(principal: Principal | undefined, limit: number, after: string | undefined): Promise<KnownUser[]> {
    requireAdmin(principal);
    return this.options.users.page(limit, after);
  }

  /** Registers a user; the user as registered when new, else null. */
  async registerUser(principal: Principal | undefined, connectId: string): Promise<KnownUser | null> {
    requireAdmin(principal);
    const created = await this.options.users.register(connectId);
    return created ? { connectId, createdAt: this.options.clock() } : null;
  }

  async unregisterUser(principal: Principal | undefined, connectId: string): Promise<void> {
    requireAdmin(principal);
    await this.options.users.unregister(connectId);
  }
}

/**
 * Who calls an admin operation: an admin client with its Basic credentials, or an `admin` staff
 * member (docs/identity-providers.md "Staff"); `undefined` when no caller was authenticated
 * (never, behind the edge).
 */
function requireAdmin(principal: Principal | undefined): void {
  if (!principal?.admin || (principal.scheme !== 'basic' && principal.scheme !== 'staff'))
    throw DomainError.notPermitted('this operation needs the Basic credentials of an admin client');
}
