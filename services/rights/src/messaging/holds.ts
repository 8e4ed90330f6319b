import { CommandTypes, Exchanges, type SchedulerHoldData } from '@rs/contracts';
import { changeMessage, type OutboxEntry } from '@rs/store';
import { lapsesAt, type ConsumptionRecord } from '../domain/consumption';
import { EVENT_SOURCE } from './events';

/**
 * `scheduler.hold`: the scheduler is told when a record's holds lapse, and commands
 * `rights.settle` then (docs/decisions/0045); stored with the record, in its one write.
 */
export const holdMessage = (record: ConsumptionRecord): OutboxEntry =>
  changeMessage<SchedulerHoldData>(Exchanges.commands, {
    source: EVENT_SOURCE,
    type: CommandTypes.schedulerHold,
    subject: record.consumptionId,
    sequence: record.generation,
    time: record.createdAt,
    data: {
      consumptionId: record.consumptionId,
      connectId: record.userId,
      until: lapsesAt(record).toISOString(),
      ...(record.clock ? { clockId: record.clock.clockId } : {}),
    },
  });
