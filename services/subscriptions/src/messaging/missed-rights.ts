import type { Logger } from '@rs/logging';
import { counter } from '@rs/telemetry/metrics';
import type { MissedRights } from '../app/renewals';

/**
 * Rights renewal came too late to issue (docs/api.md "Renewal": a right that would already
 * have ended is never issued). Each is a paid right its user never had; the alert
 * RenewalRightsMissed (docs/operations.md) fires on any.
 */
const missedRights = counter(
  'renewal_rights_missed_total',
  'Rights never issued because their renewal came after they had ended, per right',
);

/** Counts the rights and names their subscriptions in the log, where an operator finds them. */
export function reportMissedRights(missed: readonly MissedRights[], logger: Logger): void {
  for (const one of missed) {
    missedRights.inc(one.rights);
    logger.warn(one, 'renewal came after rights of this subscription had ended: they were never issued');
  }
}
