import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './servers';

export async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A service running as its own process, exactly as `npm start` and the images run it. */
export class ServiceProcess {
  private child: ChildProcess | undefined;
  private readonly output: string[] = [];

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    /** The service this process runs (several replicas run one service under different names). */
    readonly service: string = name,
  ) {}

  /** The running process's id (undefined before start). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Everything the process wrote, one JSON log line per entry. */
  get logs(): string[] {
    return this.output;
  }

  async start(timeoutMs = 30_000): Promise<void> {
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
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) break;
      try {
        const response = await fetch(`${this.url}/readyz`);
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
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
