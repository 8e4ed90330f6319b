export * from './amqp-client';
export * from './consumer';
export * from './trace-context';
export * from './topology';
