export * from './amqp-client';
export * from './consumer';
export * from '@rs/telemetry/trace-context';
export * from './topology';
export { batchItemsFailed } from './metrics';
export { followClockDeletions } from './clock-deletions';
export { consumeCommands } from './command-lanes';
export * from './real-time-first';
