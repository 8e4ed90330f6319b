import { counter } from '@rs/telemetry/metrics';

/** docs/operations.md "Metrics": consumptions of metered rights and reservations. */
export const consumptions = counter(
  'right_consumptions_total',
  'Consumptions of metered rights (by right or by SKU) by outcome: consumed, or short (too few units left; nothing taken)',
  ['outcome'],
);
export const unitsConsumed = counter('right_units_consumed_total', 'Units consumed from metered rights');
export const reservations = counter(
  'right_reservations_total',
  'Reservations of units by outcome: held, committed, released, lapsed (not settled in time: a provider that does not commit)',
  ['outcome'],
);
