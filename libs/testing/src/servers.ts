import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

/** Root of the repository (this file is libs/testing/{src,dist}/servers.*). */
export const REPO_ROOT = path.resolve(__dirname, '../../..');

export interface TestServers {
  mongoUrl: string;
  amqpUrl: string;
  /** RabbitMQ management API, for per-file vhosts and for closing connections in failure tests. */
  managementUrl: string;
  stop(): Promise<void>;
}

const canConnect = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });

/** The management API beside an AMQP URL: same host and credentials, port 15672. */
export function managementUrlFor(amqpUrl: string): string {
  const url = new URL(amqpUrl);
  const user = decodeURIComponent(url.username || 'guest');
  const password = decodeURIComponent(url.password || 'guest');
  return `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${url.hostname}:15672`;
}

function dockerEngineConfigured(): boolean {
  return Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');
}

/**
 * Real servers for the tests, in the order of docs/architecture.md section 7:
 * 1. MONGODB_URL and AMQP_URL when set;
 * 2. else containers from testcontainers when a Docker engine answers;
 * 3. else the locally installed servers (deploy/local), started when not running.
 */
export async function provideTestServers(): Promise<TestServers> {
  if (process.env.MONGODB_URL && process.env.AMQP_URL) {
    return {
      mongoUrl: process.env.MONGODB_URL,
      amqpUrl: process.env.AMQP_URL,
      managementUrl: process.env.RABBITMQ_MANAGEMENT_URL ?? managementUrlFor(process.env.AMQP_URL),
      stop: async () => undefined,
    };
  }
  if (dockerEngineConfigured()) {
    const fromContainers = await startContainers().catch(() => null);
    if (fromContainers) return fromContainers;
  }
  return startLocalServers();
}

/**
 * `provideTestServers`, with their URLs handed to this process's environment, where the test
 * systems and services started from it read them (vitest's global setup, the benches, the fuzzer).
 */
export async function useTestServers(): Promise<TestServers> {
  const servers = await provideTestServers();
  process.env.MONGODB_URL = servers.mongoUrl;
  process.env.AMQP_URL = servers.amqpUrl;
  process.env.RABBITMQ_MANAGEMENT_URL = servers.managementUrl;
  return servers;
}

async function startContainers(): Promise<TestServers> {
  const { MongoDBContainer } = await import('@testcontainers/mongodb');
  const { RabbitMQContainer } = await import('@testcontainers/rabbitmq');
  const [mongo, rabbit] = await Promise.all([
    new MongoDBContainer('mongo:8').start(),
    new RabbitMQContainer('rabbitmq:4-management').withExposedPorts(5672, 15672).start(),
  ]);
  const amqpUrl = rabbit.getAmqpUrl();
  const management = `http://guest:guest@${rabbit.getHost()}:${rabbit.getMappedPort(15672)}`;
  return {
    mongoUrl: `${mongo.getConnectionString()}/?directConnection=true`,
    amqpUrl,
    managementUrl: management,
    async stop() {
      await Promise.all([mongo.stop(), rabbit.stop()]);
    },
  };
}

async function startLocalServers(): Promise<TestServers> {
  const mongoUrl = 'mongodb://127.0.0.1:27017';
  const amqpUrl = 'amqp://guest:guest@127.0.0.1:5672';
  if (!(await canConnect('127.0.0.1', 27017)) || !(await canConnect('127.0.0.1', 5672))) {
    const script = path.join(REPO_ROOT, 'deploy/local/start-servers.sh');
    try {
      await promisify(execFile)('bash', [script], { timeout: 180_000 });
    } catch (error) {
      const detail = (error as { stderr?: string }).stderr ?? (error as Error).message;
      throw new Error(
        `no MONGODB_URL/AMQP_URL, no Docker engine, and the local servers could not be started.\n` +
          `Run deploy/local/setup.sh once. ${detail}`,
        { cause: error },
      );
    }
  }
  return { mongoUrl, amqpUrl, managementUrl: managementUrlFor(amqpUrl), stop: async () => undefined };
}
