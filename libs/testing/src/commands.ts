import type { RightsIssueData } from '@rs/contracts';

/**
 * A `rights.issue` command as the subscriptions service sends it for one period (DESIGN.md 3
 * "Renewal"): one template of SKU `news` by default, for grantor A.
 */
export function rightsIssue(
  command: Pick<RightsIssueData, 'subscriptionId' | 'connectId' | 'periodStart'> & {
    timeInterval: string;
    state?: 'ACTIVE' | 'SUSPENDED';
    grantorContext?: string | null;
    /** More templates after the first (templateIndex 1, 2, …). */
    more?: Array<{ serviceProviderId?: string | null; grantorContext?: string | null }>;
  },
): RightsIssueData {
  const state = command.state ?? 'ACTIVE';
  const templates = [
    { serviceProviderId: null, grantorContext: command.grantorContext ?? null },
    ...(command.more ?? []),
  ];
  return {
    subscriptionId: command.subscriptionId,
    connectId: command.connectId,
    grantorId: 'A',
    periodStart: command.periodStart,
    rights: templates.map((template, templateIndex) => ({
      templateIndex,
      sku: 'news',
      serviceProviderId: template.serviceProviderId ?? null,
      grantorContext: template.grantorContext ?? null,
      timeInterval: command.timeInterval,
      state,
    })),
  };
}
