export * from './document-lock';
export * from './documents';
export * from './outbox';
export * from './retry';
export * from './server-limits';
export * from './schema';
export * from './history';
export * from './sealed';
