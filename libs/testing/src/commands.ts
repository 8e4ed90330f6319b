import { CommandTypes, createCloudEvent, Exchanges, type RightsIssueData } from '@rs/contracts';
import amqp from 'amqplib';

/**
 * A `rights.issue` command as the subscriptions service sends it for one period (docs/api.md
 * "Renewal"): one template of SKU `news` by default, for grantor A.
 */
export function rightsIssue(
  command: Pick<RightsIssueData, 'subscriptionId' | 'connectId' | 'periodStart'> & {
    timeInterval: string;
    grantorId?: string;
    sku?: string;
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
    grantorId: command.grantorId ?? 'A',
    periodStart: command.periodStart,
    dueAt: command.periodStart,
    rights: templates.map((template, templateIndex) => ({
      templateIndex,
      sku: command.sku ?? 'news',
      serviceProviderId: template.serviceProviderId ?? null,
      grantorContext: template.grantorContext ?? null,
      timeInterval: command.timeInterval,
      state,
      quantity: null,
      grace: null,
    })),
  };
}

/**
 * Issues `count` rights as renewal issues them (docs/architecture.md "Scale"): `rights.issue`
 * commands of `perCommand` templates each, published to the commands exchange with
 * confirms. Command `c` is for `connectIdOf(c)` and has the subscription id `<prefix><c>`.
 */
export async function issueRightsInBulk(
  amqpUrl: string,
  options: {
    prefix: string;
    count: number;
    perCommand: number;
    grantorId: string;
    sku: string;
    timeInterval: string;
    connectIdOf: (command: number) => string;
  },
): Promise<void> {
  const connection = await amqp.connect(amqpUrl);
  try {
    const channel = await connection.createConfirmChannel();
    for (let c = 0; c < Math.ceil(options.count / options.perCommand); c++) {
      const subscriptionId = `${options.prefix}${c}`;
      const command = createCloudEvent<RightsIssueData>({
        source: '/bench',
        type: CommandTypes.rightsIssue,
        subject: subscriptionId,
        data: rightsIssue({
          subscriptionId,
          connectId: options.connectIdOf(c),
          grantorId: options.grantorId,
          sku: options.sku,
          periodStart: '2026-01-01T00:00:00Z',
          timeInterval: options.timeInterval,
          more: Array.from({ length: options.perCommand - 1 }, () => ({})),
        }),
      });
      channel.publish(Exchanges.commands, command.type, Buffer.from(JSON.stringify(command)), { persistent: true });
    }
    await channel.waitForConfirms();
  } finally {
    await connection.close();
  }
}
