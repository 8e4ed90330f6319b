import { hash, randomUUID } from 'node:crypto';
import { AuditReason, type AuditActor, type AuditEntry, type Principal } from '@rs/contracts';
import { parseDuration } from '@rs/time';
import { env } from '@rs/config';

/**
 * The audit log's rules (docs/audit.md): which requests it records, who their actor is, what
 * they are about, and in which lists an entry is found. Pure.
 */

const READS = new Set(['GET', 'HEAD']);

/** A change by an admin client or a staff member: what the log records. */
export function isAudited(method: string, principal: Principal | undefined): boolean {
  return principal !== undefined && !READS.has(method) && isAdminOrStaff(principal);
}

/** The actor of an audited change: the staff member as their identity provider names them, or the admin client. */
export function auditActorOf(principal: Principal): AuditActor {
  if (principal.scheme === 'staff' && principal.person)
    return {
      kind: 'staff',
      id: principal.person.subject,
      issuer: principal.person.issuer,
      name: principal.person.name,
    };
  return { kind: 'client', id: principal.clientId, issuer: null, name: null };
}

/**
 * `X-Audit-Reason` as sent: required of staff (400 without), optional for admin clients. Text
 * beyond ASCII comes percent-encoded (a header carries bytes, not characters); anything that
 * does not decode is taken as it is.
 */
export function reasonOf(
  header: string | undefined,
  principal: Principal,
): { ok: true; reason: string | null } | { ok: false; message: string } {
  if (header === undefined || header === '')
    return principal.scheme === 'staff'
      ? { ok: false, message: 'X-Audit-Reason: a staff member says why they make a change (1 to 500 characters)' }
      : { ok: true, reason: null };
  let text = header;
  try {
    text = decodeURIComponent(header);
  } catch {
    // Not percent-encoding: the reason is the header as it is.
  }
  const parsed = AuditReason.safeParse(text);
  if (!parsed.success) return { ok: false, message: `X-Audit-Reason: ${parsed.error.issues[0]?.message ?? 'invalid'}` };
  return { ok: true, reason: parsed.data };
}

/**
 * A new entry's id: the instant in base 36 then random letters, so that ids sort by time and
 * match the keyset cursor's syntax.
 */
export function auditIdAt(at: Date): string {
  // 16 random hex digits: those of a random UUID that are not its version or variant (Node
  // draws UUIDs from a cache of random bytes, where a call for 8 bytes was a system call each).
  const uuid = randomUUID();
  return `${at.getTime().toString(36).padStart(9, '0')}${uuid.slice(24)}${uuid.slice(0, 4)}`;
}

/**
 * The grantor an entry is about, from what the request and its answer said: the body's
 * `grantorId` (a creation), the grantor of the right the answer changed, else a staff
 * member's only grantor. Null when none says (an admin's change of a subscription).
 */
export function grantorOfChange(
  principal: Principal,
  said: { bodyGrantor: string | null; answerGrantor: string | null },
): string | null {
  const only = principal.staff?.grantors.length === 1 ? principal.staff.grantors[0]! : null;
  return said.bodyGrantor ?? said.answerGrantor ?? only;
}

/** The `grantorId` a JSON request body names, if it does. */
export function grantorOfBody(body: Buffer): string | null {
  if (body.length === 0 || body.length > 64 * 1024) return null;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { grantorId?: unknown } | null;
    return typeof parsed?.grantorId === 'string' ? parsed.grantorId : null;
  } catch {
    return null;
  }
}

/** The path of a subject given as an href of this gateway or as a path: what its lists are keyed by. */
export function subjectPath(subject: string, publicBaseUrl: string): string {
  const base = publicBaseUrl.replace(/\/$/, '');
  const path = subject.startsWith(base) ? subject.slice(base.length) : subject;
  return path.split('?')[0]!.replace(/\/+$/, '') || '/';
}

/** A list's party as a token lists accept, whatever its text (ids and paths may hold any character). */
const token = (text: string) => hash('sha256', text, 'base64url').slice(0, 22);

/**
 * A list of the log: its name, and the owner whose counter numbers it. The log's own lists (all,
 * a grantor's, an actor's) share one owner, whose counter holds a position per grantor and per
 * actor; a resource's lists are owned by the object at the top of its path (`/id/users/alice`,
 * `/catalog/skus/news`), so that no counter grows with every resource ever changed and each
 * stays as small as one user's or one object's resources.
 */
export interface AuditList {
  owner: string;
  name: string;
}

const LOG_OWNER = 'audit';
const logList = (name: string): AuditList => ({ owner: LOG_OWNER, name });
/** The list of every entry. */
export const ALL_ENTRIES = logList('all');
export const grantorList = (grantorId: string) => logList(`g|${token(grantorId)}`);
export const actorList = (actorId: string) => logList(`a|${token(actorId)}`);
export const subjectList = (path: string): AuditList => ({
  owner: `audit|${token(path.split('/').slice(0, 4).join('/'))}`,
  name: `s|${token(path)}`,
});

/**
 * The lists an entry is found in: all, its grantor's, its actor's, and one per resource its
 * subject lies under (`/id/users/alice`, `/id/users/alice/rights`, …), so that the log of a user
 * or of a resource is one list.
 */
export function listsOfEntry(entry: Pick<AuditEntry, 'actor' | 'grantorId'>, path: string): AuditList[] {
  const segments = path.split('/').filter(Boolean);
  const under = segments.slice(1).map((_, i) => `/${segments.slice(0, i + 2).join('/')}`);
  return [
    ALL_ENTRIES,
    actorList(entry.actor.id),
    ...(entry.grantorId === null ? [] : [grantorList(entry.grantorId)]),
    ...under.map(subjectList),
  ];
}

/** What a reader asks of the log (`GET /admin/audit`). */
export interface AuditQuery {
  actor?: string;
  subject?: string;
  grantorId?: string;
  after?: Date;
  before?: Date;
}

/**
 * Which list a query reads (the narrowest it names), and what it filters by besides. A reader
 * who is not an admin reads only their grantors' entries: one grantor at a time, the one they
 * name or their only one.
 */
export function auditListOf(
  principal: Principal,
  query: AuditQuery,
  publicBaseUrl: string,
): { ok: true; list: AuditList; grantorId: string | null } | { ok: false; reason: 'not_permitted' | 'name_grantor' } {
  let grantorId = query.grantorId ?? null;
  if (!isAdminOrStaff(principal)) return { ok: false, reason: 'not_permitted' };
  if (!principal.admin) {
    const grantors = principal.staff?.grantors ?? [];
    if (grantorId === null && grantors.length !== 1) return { ok: false, reason: 'name_grantor' };
    grantorId ??= grantors[0]!;
  }
  if (query.subject !== undefined)
    return { ok: true, list: subjectList(subjectPath(query.subject, publicBaseUrl)), grantorId };
  if (query.actor !== undefined) return { ok: true, list: actorList(query.actor), grantorId };
  if (grantorId !== null) return { ok: true, list: grantorList(grantorId), grantorId };
  return { ok: true, list: ALL_ENTRIES, grantorId };
}

/**
 * An admin client, however it authenticates (Basic, or a Bearer token its issuer may name it in),
 * or a staff member: whose changes the log records, and who read it (the admin routes take no
 * user's token, docs/api.md).
 */
function isAdminOrStaff(principal: Principal): boolean {
  return principal.scheme === 'staff' || principal.admin;
}

/**
 * AUDIT_RETENTION (docs/audit.md): an ISO 8601 duration of whole days or more (`P400D` by
 * default, `P1Y`…), as days.
 */
export const AuditRetention = env.parsed(
  'P400D',
  (text) => {
    const parsed = parseDuration(text);
    const days = parsed.ok ? Math.floor(parsed.value.as('days')) : 0;
    return days >= 1 && days <= 36_500 ? days : undefined;
  },
  'must be an ISO 8601 duration from P1D to P100Y, e.g. P400D',
);

/**
 * How long after its start an entry may still be completed by its request: the longest a
 * forwarded request waits for its answer, with a margin. An entry still open after that was
 * left by a gateway that stopped, and is closed with `status: null`.
 */
export const openLeaseMs = (upstreamTimeoutMs: number) => upstreamTimeoutMs + 15_000;
