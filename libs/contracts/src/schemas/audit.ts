import { z } from 'zod';
import { eventFamily } from './cloud-event';
import { CONTROL_CHARACTER } from './formats';

/**
 * Who made an audited change (docs/audit.md): an admin API client (`client`, its id), or a
 * staff member signed in at an identity provider (`staff`, its `sub` there, the issuer, and
 * the `name` or `email` the token carried).
 */
export const AuditActor = z.object({
  kind: z.enum(['client', 'staff']),
  id: z.string().min(1),
  issuer: z.string().nullable(),
  name: z.string().nullable(),
});
export type AuditActor = z.infer<typeof AuditActor>;

/** `X-Audit-Reason`: why a change is made, required of staff (docs/audit.md). */
export const AUDIT_REASON_HEADER = 'x-audit-reason';
export const AuditReason = z
  .string()
  .min(1, 'must be 1 to 500 characters')
  .max(500, 'must be 1 to 500 characters')
  // Printable text only: a control character (NUL, a line break…) has no place in a log entry.
  .refine((reason) => !CONTROL_CHARACTER.test(reason), 'must be printable (no control characters)')
  .refine((reason) => reason.trim().length > 0, 'must say something');

/**
 * One entry of the audit log (docs/audit.md): written before the change was forwarded,
 * completed with its answer. `status` is null when the gateway stopped before the answer.
 */
export const AuditEntry = z.object({
  auditId: z.string().min(1),
  at: z.iso.datetime({ offset: true }),
  actor: AuditActor,
  /** `<METHOD> <route template>`, e.g. `POST /id/users/{connectId}/rights/{rightId}/suspend`. */
  action: z.string().min(1),
  /** The resource changed: the created one's when the answer names it (`Location`), else the path's. */
  subject: z.string().min(1),
  /** The grantor whose resource it was, when known (the answer's, the body's, or the actor's one grantor). */
  grantorId: z.string().nullable(),
  reason: z.string().nullable(),
  requestId: z.string().nullable(),
  traceId: z.string().nullable(),
  status: z.number().int().nullable(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

export const AuditPage = z.object({ entries: z.array(AuditEntry) });

export const AuditEventTypes = { recorded: 'audit.recorded' } as const;

/** `audit.recorded` on `platform.events`: `data` is the entry as `GET /admin/audit` shows it. */
export const AuditEvents = eventFamily(AuditEventTypes, AuditEntry);
