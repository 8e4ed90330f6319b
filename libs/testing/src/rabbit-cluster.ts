import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './servers';

const SCRIPT = path.join(REPO_ROOT, 'deploy/local/rabbit-cluster.sh');
const run = (...args: string[]) => promisify(execFile)('bash', [SCRIPT, ...args], { timeout: 180_000 });

/**
 * The three-node RabbitMQ cluster of deploy/local/rabbit-cluster.sh (nodes 1-3 on AMQP ports
 * 5691-5693), for the tests a cluster operator trusts: a node stopped under load.
 */
export const RabbitCluster = {
  /** Every node, in order, as AMQP_URL lists a cluster. */
  amqpUrl: [5691, 5692, 5693].map((port) => `amqp://guest:guest@127.0.0.1:${port}`).join(','),
  managementUrl: 'http://guest:guest@127.0.0.1:15692',
  amqpUrlOf: (node: number) => `amqp://guest:guest@127.0.0.1:${5690 + node}`,
  start: () => run('start'),
  stopNode: (node: number) => run('stop-node', String(node)),
  startNode: (node: number) => run('start-node', String(node)),
  stop: () => run('stop'),
};
