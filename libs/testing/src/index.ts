export * from './event-collector';
export * from './otlp-receiver';
export * from './processes';
export * from './rabbit-admin';
export * from './servers';
export * from './system';
export * from './token-issuer';
export * from './principals';
