export * from './amqp-client';
export * from './consumer';
export * from './outbox';
export * from './trace-context';
export * from './document-lock';
export * from './topology';
