import { RightEventTypes } from '@rs/contracts';
import { HistoryLog } from '@rs/store';
import type { mongo } from 'mongoose';

export const RIGHT_HISTORY = 'right_history';

/** The changes of rights (docs/api.md "History"): every right event but the announcement to a provider. */
export const rightHistory = (db: mongo.Db, retentionDays?: number): HistoryLog =>
  new HistoryLog(
    db,
    RIGHT_HISTORY,
    new Set(Object.values(RightEventTypes).filter((type) => type !== RightEventTypes.serviceAnnounce)),
    { kind: 'system', id: 'rights' },
    retentionDays,
  );
