export * from './relay';
export * from './publish';
