import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { LocalService } from './test-service';
import { REPO_ROOT } from './servers';

const PORTS_PER_WORKER = 500;
/** Below Linux's ephemeral range (32768 and up), where no outgoing connection takes a port. */
const FIRST_PORT = 20_000;
let nextOffset = Math.floor(Math.random() * PORTS_PER_WORKER);

/**
 * A port for a service to listen on. Each test worker (`VITEST_POOL_ID`) takes ports from
 * its own range below the ephemeral ones: with `listen(0)` the port was free when asked,
 * but another file's service, or any outgoing connection, could take it before the service
 * bound it, and a test then talked to a stranger that answered its readiness probe.
 */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.VITEST_POOL_ID ?? 0);
  const base = FIRST_PORT + worker * PORTS_PER_WORKER;
  for (let attempt = 0; attempt < PORTS_PER_WORKER; attempt++) {
    const port = base + (nextOffset++ % PORTS_PER_WORKER);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${base}-${base + PORTS_PER_WORKER - 1}`);
}

/** The first of `count` consecutive free ports, in this worker's range (see `freePort`). */
export async function freePorts(count: number): Promise<number> {
  const worker = Number(process.env.VITEST_POOL_ID ?? 0);
  const base = FIRST_PORT + worker * PORTS_PER_WORKER;
  for (let attempt = 0; attempt < PORTS_PER_WORKER / count; attempt++) {
    const first = base + (nextOffset % (PORTS_PER_WORKER - count));
    nextOffset += count;
    const ports = Array.from({ length: count }, (_, i) => first + i);
    if ((await Promise.all(ports.map(canListen))).every(Boolean)) return first;
  }
  throw new Error(`no ${count} free ports in a row in ${base}-${base + PORTS_PER_WORKER - 1}`);
}

async function canListen(port: number): Promise<boolean> {
  const server = net.createServer();
  try {
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    return true;
  } catch {
    return false;
  } finally {
    await new Promise((resolve) => server.close(() => resolve(undefined)));
  }
}

/** A service running as its own process, exactly as `npm start` and the images run it. */
export class ServiceProcess extends LocalService {
  private child: ChildProcess | undefined;

  /** The running process's id (undefined before start). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  async start(readyWithinMs = 30_000): Promise<void> {
    const entry = path.join(REPO_ROOT, 'services', this.service, 'dist/main.js');
    const register = path.join(REPO_ROOT, 'libs/telemetry/dist/register.js');
    this.child = spawn(process.execPath, ['--require', register, entry], {
      env: { PATH: process.env.PATH ?? '', TZ: 'UTC', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) if (line) this.output.push(line);
      if (process.env.RS_TEST_SERVICE_LOGS) process.stderr.write(chunk);
    };
    this.child.stdout!.on('data', collect);
    this.child.stderr!.on('data', collect);
    if (await this.becameReady(readyWithinMs, () => this.child?.exitCode === null)) return;
    const tail = this.output.slice(-20).join('\n');
    await this.kill();
    throw new Error(`${this.name} did not become ready (exit code ${this.child.exitCode}):\n${tail}`);
  }

  /** Graceful stop, as an orchestrator does it (SIGTERM). */
  async stop(): Promise<number | null> {
    return this.signal('SIGTERM', 15_000);
  }

  /** A crash: SIGKILL, no chance to clean up. */
  async kill(): Promise<number | null> {
    return this.signal('SIGKILL', 5_000);
  }

  private async signal(signal: NodeJS.Signals, timeoutMs: number): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
    const exited = once(child, 'exit');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    await exited;
    clearTimeout(timer);
    return child.exitCode;
  }
}
