import { parseTimeSpec, type TimeSpec } from '@rs/time';
import type { SubscriptionEntity, Template } from '../src/domain/subscription';

/** A time spec the unit tests know to be valid. */
export function specOf(text: string): TimeSpec {
  const parsed = parseTimeSpec(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}

/** A template of `sku`, every optional field null unless given. */
export const aTemplate = (sku: string, fields: Partial<Template> = {}): Template => ({
  sku,
  serviceProviderId: null,
  timeSpec: null,
  grantorContext: null,
  quantity: null,
  grace: null,
  ...fields,
});

/**
 * A subscription as the service holds it, for the unit tests of its rules: ACTIVE, one `news`
 * template, three daily periods from 2026-03-01 (+01:00), none issued yet, no plan change.
 */
export const aSubscription = (fields: Partial<SubscriptionEntity> = {}): SubscriptionEntity => ({
  subscriptionId: 'S1',
  userId: 'frank',
  grantorId: 'A',
  grantorContext: null,
  state: 'ACTIVE',
  rightsSpec: [aTemplate('news')],
  plan: 0,
  pendingChange: null,
  timeSpec: 'R3/2026-03-01T00:00:00+01:00/P1D',
  origTimeSpec: 'R3/2026-03-01T00:00:00+01:00/P1D',
  paymentAgreement: null,
  nextPeriod: 0,
  clockId: null,
  generation: 1,
  createdAt: new Date('2026-02-01T00:00:00Z'),
  updatedAt: new Date('2026-02-01T00:00:00Z'),
  ...fields,
});
