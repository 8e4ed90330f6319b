import { actsFor, changesFor, DomainError, newId, type EndpointCreateBody, type Principal } from '@rs/contracts';
import { untilStored, RACE_LOST, type ListPage, type ListPosition } from '@rs/store';
import { type Sealer } from '@rs/sealing';
import { systemClock, type Clock } from '@rs/time';
import { EVENT_TYPES, invalidPatterns } from '../domain/endpoint';
import { newSecret } from '../domain/signature';
import { checkTargetUrl } from '../domain/target';
import { resolveTarget, TargetRefused } from '../net/sender';
import type { Delivery, DeliveryStore } from '../store/delivery-store';
import type { Endpoint, EndpointStore } from '../store/endpoint-store';
import type { EndpointDirectory } from './dispatcher';

/** docs/api.md: the old secret keeps signing beside the new one this long after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/**
 * The webhooks API (docs/api.md): a client manages the endpoints of its own grantor, an
 * admin any; another grantor's endpoint is not found. Secrets are sealed at rest and shown
 * only in the answer that made them.
 */
export class EndpointUseCases implements EndpointDirectory {
  constructor(
    private readonly endpoints: EndpointStore,
    private readonly deliveries: DeliveryStore,
    private readonly sealer: Sealer,
    private readonly options: {
      allowPrivateTargets: boolean;
      retryNow: (delivery: Delivery) => Promise<void>;
      /** WEBHOOK_MAX_ENDPOINTS: endpoints one grantor may have (docs/api.md). */
      maxPerGrantor: number;
    },
    private readonly clock: Clock = systemClock,
  ) {}

  async create(principal: Principal, body: EndpointCreateBody): Promise<{ endpoint: Endpoint; secret: string }> {
    const target = checkTargetUrl(body.url, this.options.allowPrivateTargets);
    if (!target.ok) throw DomainError.invalid(target.reason);
    const events = body.events ?? ['*'];
    const unknown = invalidPatterns(events);
    if (unknown.length > 0)
      throw DomainError.invalid(
        `events: unknown pattern ${unknown.join(', ')}; use event types (${EVENT_TYPES.join(', ')}), <family>.* or *`,
      );
    try {
      await resolveTarget(target.url.hostname.replace(/^\[|\]$/g, ''), this.options.allowPrivateTargets);
    } catch (error) {
      if (error instanceof TargetRefused) throw DomainError.invalid(`url: ${error.message}`);
      throw error;
    }
    const grantorId = principal.admin ? null : principal.grantorId;
    if (grantorId !== null && !managesFor(principal, grantorId)) throw DomainError.notPermitted(NOT_MANAGER);
    // docs/api.md "Per-grantor limits" (two creates at once may both pass: one over, never more).
    if ((await this.endpoints.countOfGrantor(grantorId)) >= this.options.maxPerGrantor)
      throw DomainError.conflict(
        `a grantor may have at most ${this.options.maxPerGrantor} webhook endpoints; delete one to register another`,
      );
    const now = this.clock();
    const secret = newSecret();
    const endpoint: Endpoint = {
      endpointId: newId(now.getTime()),
      grantorId,
      url: target.url.toString(),
      events,
      description: body.description ?? null,
      clocks: body.clocks ?? false,
      secrets: [{ sealed: this.sealer.seal(secret), createdAt: now, retiresAt: null }],
      createdAt: now,
      generation: 1,
    };
    await this.endpoints.insert(endpoint);
    return { endpoint, secret };
  }

  async list(principal: Principal): Promise<Endpoint[]> {
    const grantors = principal.scheme === 'staff' ? (principal.staff?.grantors ?? []) : [principal.grantorId];
    const mine = principal.admin
      ? await this.endpoints.live()
      : (await Promise.all(grantors.map((grantorId) => this.endpoints.ofGrantor(grantorId)))).flat();
    return mine
      .filter((endpoint) => mayRead(principal, endpoint))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  get(principal: Principal, endpointId: string): Promise<Endpoint> {
    return this.find(endpointId, (endpoint) => mayRead(principal, endpoint));
  }

  /** An endpoint the caller may retry deliveries of: its grantor's client, its `write` staff, an admin; to anyone else it does not exist. */
  private changeable(principal: Principal, endpointId: string): Promise<Endpoint> {
    return this.find(endpointId, (endpoint) => mayChange(principal, endpoint));
  }

  /**
   * An endpoint the caller may delete or give a new secret: its grantor's client or an admin.
   * Its grantor's staff, who see it, are refused; to anyone else it does not exist.
   */
  private async managed(principal: Principal, endpointId: string): Promise<Endpoint> {
    const endpoint = await this.changeable(principal, endpointId);
    if (!principal.admin && !managesFor(principal, endpoint.grantorId!)) throw DomainError.notPermitted(NOT_MANAGER);
    return endpoint;
  }

  private async find(endpointId: string, may: (endpoint: Endpoint) => boolean): Promise<Endpoint> {
    const endpoint = await this.endpoints.find(endpointId);
    if (!endpoint || !may(endpoint)) throw DomainError.notFound(`no webhook endpoint ${endpointId}`);
    return endpoint;
  }

  async remove(principal: Principal, endpointId: string): Promise<void> {
    await this.managed(principal, endpointId);
    if (!(await this.endpoints.delete(endpointId))) throw DomainError.notFound(`no webhook endpoint ${endpointId}`);
  }

  /** A new secret; the ones in use keep signing for ROTATION_OVERLAP_MS, older ones are dropped. */
  async rotate(principal: Principal, endpointId: string): Promise<{ endpoint: Endpoint; secret: string }> {
    await this.managed(principal, endpointId);
    const secret = newSecret();
    return untilStored(`endpoint ${endpointId}`, async () => {
      const endpoint = await this.managed(principal, endpointId);
      const now = this.clock();
      const retiresAt = new Date(now.getTime() + ROTATION_OVERLAP_MS);
      const secrets = [
        ...endpoint.secrets
          .filter((kept) => kept.retiresAt === null || kept.retiresAt > now)
          .map((kept) => ({ ...kept, retiresAt: kept.retiresAt ?? retiresAt })),
        { sealed: this.sealer.seal(secret), createdAt: now, retiresAt: null },
      ];
      if (!(await this.endpoints.replaceSecrets(endpoint, secrets))) return RACE_LOST;
      return { endpoint: { ...endpoint, secrets, generation: endpoint.generation + 1 }, secret };
    });
  }

  async deliveriesPage(
    principal: Principal,
    endpointId: string,
    limit: number,
    after: ListPosition | null,
  ): Promise<ListPage<Delivery>> {
    await this.get(principal, endpointId);
    return this.deliveries.page(endpointId, limit, after);
  }

  /** Makes the delivery pending and attempts it at once. */
  async retry(principal: Principal, endpointId: string, deliveryId: string): Promise<void> {
    await this.changeable(principal, endpointId);
    const delivery = await this.deliveries.retryNow(endpointId, deliveryId, this.clock());
    if (!delivery) throw DomainError.notFound(`no delivery ${deliveryId} of webhook endpoint ${endpointId}`);
    await this.options.retryNow(delivery);
  }

  /**
   * For the dispatcher: a live endpoint with the secrets that sign now (two during a
   * rotation). Kept a second, so a burst of deliveries reads and opens them once; a deletion
   * or rotation reaches every replica within that second.
   */
  async withSecrets(endpointId: string, now: Date): Promise<{ endpoint: Endpoint; secrets: string[] } | null> {
    const cached = this.opened.get(endpointId);
    if (cached && cached.until > now.getTime()) return cached.value;
    const endpoint = await this.endpoints.find(endpointId);
    const value = endpoint && {
      endpoint,
      secrets: endpoint.secrets
        .filter((secret) => secret.retiresAt === null || secret.retiresAt > now)
        .map((secret) => this.sealer.open(secret.sealed)),
    };
    this.opened.set(endpointId, { value, until: now.getTime() + 1_000 });
    return value;
  }

  private readonly opened = new Map<
    string,
    { value: { endpoint: Endpoint; secrets: string[] } | null; until: number }
  >();

  async grantorOf(endpointId: string): Promise<string | null | undefined> {
    return (await this.endpoints.find(endpointId))?.grantorId;
  }

  async liveIds(): Promise<string[]> {
    return (await this.endpoints.live()).map((endpoint) => endpoint.endpointId);
  }
}

/**
 * Managing endpoints and their secrets is for the grantor's own API client and admins: a staff
 * member with `write` retries deliveries, but a lasting feed of every event and the key that
 * signs it are not support actions (docs/identity-providers.md "Issuers stay in their lane").
 */
const NOT_MANAGER = 'webhook endpoints are managed by their grantor’s API client or an admin';
const managesFor = (principal: Principal, grantorId: string) =>
  principal.admin || (principal.scheme !== 'staff' && changesFor(principal, grantorId));

/** An endpoint is its grantor's (its client's, and its staff's) and the admins'. */
const mayRead = (principal: Principal, endpoint: Endpoint) => principal.admin || actsFor(principal, endpoint.grantorId);
const mayChange = (principal: Principal, endpoint: Endpoint) =>
  principal.admin || (endpoint.grantorId !== null && changesFor(principal, endpoint.grantorId));
