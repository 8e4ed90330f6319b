export * from './app';
export * from './errors';
export * from './internal-token';
export * from './lifecycle';
export * from './metrics';
export * from './server';
export * from './request';
