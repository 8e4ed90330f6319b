import { ConnectId, DomainError, type Principal, type RouteOwner } from '@rs/contracts';
import {
  authorize,
  budgetOf,
  grantorFilter,
  listRule,
  redirectLocation,
  type Budget,
  type Operation,
  type Refusal,
} from '../domain/access';
import type { KnownUser } from '../store/user-store';

/** A service the gateway forwards to (every route owner but the gateway itself). */
export type ForwardedService = Exclude<RouteOwner, 'gateway'>;

/**
 * What the edge does with a request it has classified and authenticated (docs/security.md): refuse it (with the challenge its refusal names), redirect it (307, a list without
 * the caller's grantor filter), forward it to the service that owns it, as `caller` and
 * spending `budget`, or answer it itself (a route the gateway owns).
 */
export type Routing =
  | { kind: 'refuse'; refusal: Refusal }
  | { kind: 'redirect'; location: string }
  | { kind: 'forward'; service: ForwardedService; caller: Principal; budget: Budget }
  | { kind: 'answer' };

/** What the edge knows of a request when it routes it. */
export interface RoutedRequest {
  operation: Operation;
  /** The authenticated caller; undefined on an open route (the JWKS). */
  principal: Principal | undefined;
  /** The request's path and query, as received (`originalUrl`). */
  url: string;
  /** The address whose budget an open route spends. */
  sourceAddress: string;
}

/** A route the gateway answers itself: one object for every such request. */
const ANSWER: Routing = { kind: 'answer' };

/**
 * The gateway's forwarding use case (docs/api.md): the one decision of who may call what, the
 * user check of `/id/users/{connectId}…` (404 for an unknown user), the list rule of rules
 * 2 and 5, and whose budget the call spends. The HTTP layer carries out what it decides.
 */
export class Forwarding {
  constructor(
    private readonly options: {
      users: { find(connectId: string): Promise<KnownUser | null> };
      publicBaseUrl: string;
      /** Who an open route reaches its service as: the gateway itself. */
      gateway: Principal;
    },
  ) {}

  async route(request: RoutedRequest): Promise<Routing> {
    const { operation, principal } = request;
    if (principal === undefined) {
      // An open route reaches its service as the gateway, spending its source address's budget.
      if (operation.owner === 'gateway') return ANSWER;
      const budget = budgetOf(undefined, request.sourceAddress);
      return { kind: 'forward', service: operation.owner, caller: this.options.gateway, budget };
    }
    const refusal = authorize(operation, principal);
    if (refusal) return { kind: 'refuse', refusal };
    if (operation.owner === 'gateway') return ANSWER;
    if (operation.connectId !== null) await this.requireUser(operation.connectId);
    const filter = operation.list === null ? null : grantorFilter(new URL(request.url, 'http://gateway').searchParams);
    if (filter === 'twice') throw DomainError.invalid('query parameter grantorId must be given once');
    const rule = listRule(operation, principal, filter);
    if (rule && 'redirectWith' in rule)
      return {
        kind: 'redirect',
        location: redirectLocation(this.options.publicBaseUrl, request.url, operation.list!, rule.redirectWith),
      };
    if (rule) return { kind: 'refuse', refusal: rule };
    const budget = budgetOf(principal, request.sourceAddress);
    return { kind: 'forward', service: operation.owner, caller: principal, budget };
  }

  /** A path naming a user the directory does not know is 404 (docs/behaviours.md). */
  private async requireUser(connectId: string): Promise<void> {
    const parsed = ConnectId.safeParse(connectId);
    if (!parsed.success) throw DomainError.invalid(`connectId: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    if (!(await this.options.users.find(parsed.data))) throw DomainError.notFound(`no user ${connectId}`);
  }
}
