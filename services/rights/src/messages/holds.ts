import { CommandTypes, Exchanges, type RightsSettleBatch, type SchedulerHoldData } from '@rs/contracts';
import { changeMessage, type OutboxEntry } from '@rs/store';
import { lapsesAt, type ConsumptionRecord } from '../domain/consumption';
import { EVENT_SOURCE } from './events';

/** A command about a record, on the `commands` exchange, stored with the record's write that makes it. */
const recordCommand = <Data>(record: ConsumptionRecord, type: string, time: Date, data: Data): OutboxEntry =>
  changeMessage<Data>(Exchanges.commands, {
    source: EVENT_SOURCE,
    type,
    subject: record.consumptionId,
    sequence: record.generation,
    time,
    data,
  });

/**
 * `scheduler.hold`: the scheduler is told when a record's holds lapse, and commands
 * `rights.settle` then (docs/decisions/0045); stored with the record, in its one write.
 */
export const holdMessage = (record: ConsumptionRecord): OutboxEntry =>
  recordCommand<SchedulerHoldData>(record, CommandTypes.schedulerHold, record.createdAt, {
    consumptionId: record.consumptionId,
    connectId: record.userId,
    until: lapsesAt(record).toISOString(),
    ...(record.clock ? { clockId: record.clock.clockId } : {}),
  });

/**
 * `rights.settle` of a committed record, to this service itself: its holds are applied within
 * seconds even when the request that committed it failed before applying them (a database
 * fault, a crash), instead of staying held until their time is up (docs/decisions/0051).
 * Stored with the commit, in its one write; applying a hold applied already changes nothing.
 */
export const appliedMessage = (record: ConsumptionRecord): OutboxEntry =>
  recordCommand<RightsSettleBatch>(record, CommandTypes.rightsSettle, record.updatedAt, {
    items: [{ consumptionId: record.consumptionId, connectId: record.userId }],
  });
