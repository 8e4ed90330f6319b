import { AuditEventTypes, DomainError, Exchanges, type AuditEntry, type Principal } from '@rs/contracts';
import type { Logger } from '@rs/logging';
import { changeMessage, type ListPage, type ListPosition } from '@rs/store';
import type { Clock } from '@rs/time';
import {
  auditActorOf,
  auditIdAt,
  auditListOf,
  grantorOfChange,
  listsOfEntry,
  subjectPath,
  type AuditQuery,
} from '../domain/audit';
import type { AuditStore, OpenEntry } from '../store/audit-store';

export const AUDIT_EVENT_SOURCE = '/gateway';

/** A change under way, as its entry was begun. */
export interface BegunChange {
  entry: OpenEntry;
  principal: Principal;
}

/** What the request and its answer said, to complete its entry with. */
export interface ChangeAnswer {
  /** Null: the gateway gave no answer (the client left first, or the gateway is stopping). */
  status: number | null;
  /** A creation's `Location`, the resource it made. */
  location: string | null;
  bodyGrantor: string | null;
  answerGrantor: string | null;
}

/**
 * The audit log's use cases (docs/audit.md): an entry begun before an admin client's or a
 * staff member's change is forwarded, completed with its answer (or closed without one once its
 * gateway has clearly stopped), each completed entry published as `audit.recorded`; and pages of
 * the log for those who may read it.
 */
export class AuditLog {
  constructor(
    private readonly options: {
      store: AuditStore;
      publicBaseUrl: string;
      clock: Clock;
      logger: Logger;
      /** How long an entry may wait for its request's answer (`openLeaseMs`). */
      leaseMs: number;
    },
  ) {}

  /** Records that `principal` begins the change `action` of `path` now; resolves once stored. */
  async begin(
    principal: Principal,
    change: {
      action: string;
      path: string;
      reason: string | null;
      requestId: string | null;
      traceId: string | null;
      /** The grantor the request's body names, when it is read already (a forwarded request's is). */
      bodyGrantor: string | null;
    },
  ): Promise<BegunChange> {
    const at = this.options.clock();
    const entry: OpenEntry = {
      auditId: auditIdAt(at),
      at: at.toISOString(),
      actor: auditActorOf(principal),
      action: change.action,
      subject: `${this.options.publicBaseUrl}${change.path}`,
      grantorId: grantorOfChange(principal, { bodyGrantor: change.bodyGrantor, answerGrantor: null }),
      reason: change.reason,
      requestId: change.requestId,
      traceId: change.traceId,
    };
    await this.options.store.open(entry);
    return { entry, principal };
  }

  /** Completes a begun entry with its answer. */
  async complete(begun: BegunChange, answer: ChangeAnswer): Promise<void> {
    const created = answer.status === 201 && answer.location !== null;
    const entry: AuditEntry = {
      ...begun.entry,
      subject: created ? new URL(answer.location!, this.options.publicBaseUrl).toString() : begun.entry.subject,
      grantorId: grantorOfChange(begun.principal, answer),
      status: answer.status,
    };
    await this.record(entry);
  }

  /**
   * Closes the entries a stopped gateway left begun (their requests began longer ago than any
   * request may wait): recorded with `status: null`. The events of those of their group that
   * were completed are stored again, since the stop may have come before them (at least once).
   * Returns how many entries it closed.
   */
  async closeAbandoned(): Promise<number> {
    const { store } = this.options;
    const before = new Date(this.options.clock().getTime() - this.options.leaseMs);
    let closed = 0;
    for (const { groupId, entries } of await store.begunBefore(before)) {
      const recorded = await Promise.all(entries.map((entry) => this.record({ ...entry, status: null })));
      closed += recorded.filter(Boolean).length;
      const earlier = await store.find(entries.filter((_, index) => !recorded[index]).map(({ auditId }) => auditId));
      await store.publish(earlier.map((entry) => this.recordedEvent(entry)));
      await store.removeGroups([groupId]);
    }
    if (closed > 0)
      this.options.logger.warn({ closed }, 'closed audit entries whose gateway stopped before the answer');
    return closed;
  }

  /** A page of the log as `principal` may read it (docs/audit.md). */
  async list(
    principal: Principal,
    query: AuditQuery,
    page: { after: ListPosition | null; limit: number },
  ): Promise<ListPage<AuditEntry>> {
    const chosen = auditListOf(principal, query, this.options.publicBaseUrl);
    if (!chosen.ok && chosen.reason === 'not_permitted')
      throw DomainError.notPermitted('the audit log is for admin clients and staff members');
    if (!chosen.ok) throw DomainError.invalid('grantorId: name one of your grantors');
    if (!principal.admin && chosen.grantorId !== null && !principal.staff?.grantors.includes(chosen.grantorId))
      return { items: [], last: null };
    return this.options.store.page(chosen.list, {
      grantorId: chosen.grantorId,
      ...(query.actor === undefined || chosen.list.name.startsWith('a|') ? {} : { actorId: query.actor }),
      ...(query.after === undefined ? {} : { since: query.after }),
      ...(query.before === undefined ? {} : { before: query.before }),
      margin: this.options.leaseMs + 60_000,
      after: page.after,
      limit: page.limit,
    });
  }

  /** Stores the entry as complete, in its lists, with its `audit.recorded`; false when it was already. */
  private record(entry: AuditEntry): Promise<boolean> {
    return this.options.store.complete(
      entry,
      listsOfEntry(entry, subjectPath(entry.subject, this.options.publicBaseUrl)),
      [this.recordedEvent(entry)],
    );
  }

  private recordedEvent(entry: AuditEntry) {
    return changeMessage(Exchanges.platformEvents, {
      source: AUDIT_EVENT_SOURCE,
      type: AuditEventTypes.recorded,
      subject: entry.auditId,
      sequence: 2,
      time: this.options.clock(),
      data: entry,
    });
  }
}
