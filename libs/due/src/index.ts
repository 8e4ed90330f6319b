export * from './seconds';
export * from './second-sweeper';
