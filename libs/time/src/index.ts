export * from './time-interval';
export * from './time-spec';
export * from './repeat';
export * from './clock';
