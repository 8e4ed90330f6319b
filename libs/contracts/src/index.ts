export * from './catalog';
export * from './cloud-event';
export * from './topology';
export * from './openapi';
export * from './events-doc';
export * from './identity';
export * from './rights';
export * from './commands';
