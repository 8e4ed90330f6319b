import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './processes';
import { REPO_ROOT } from './servers';

/** Where deploy/local/setup.sh installs Zipkin's server (from Maven Central). */
export const ZIPKIN_JAR = path.join(REPO_ROOT, '.local/tools/zipkin.jar');

/** A span as Zipkin's v2 API answers it. */
export interface ZipkinSpan {
  traceId: string;
  id: string;
  parentId?: string;
  kind?: 'CLIENT' | 'SERVER' | 'PRODUCER' | 'CONSUMER';
  name?: string;
  localEndpoint?: { serviceName?: string };
  tags?: Record<string, string>;
}

/**
 * Zipkin's server, as `npm start -- --traces` runs it: in-memory storage, its UI
 * and HTTP API on a port of its own. Services export to `spansEndpoint` with
 * OTEL_TRACES_EXPORTER=zipkin and OTEL_EXPORTER_ZIPKIN_ENDPOINT.
 */
export class ZipkinServer {
  private child: ChildProcess | undefined;
  private readonly output: string[] = [];
  port = 0;

  async start(timeoutMs = 120_000): Promise<void> {
    if (!existsSync(ZIPKIN_JAR)) throw new Error(`${ZIPKIN_JAR} is missing: run deploy/local/setup.sh`);
    this.port = await freePort();
    // As `npm start -- --traces` runs it: on loopback only (Armeria listens everywhere by default).
    const loopback = [
      '-Darmeria.ports[0].ip=127.0.0.1',
      `-Darmeria.ports[0].port=${this.port}`,
      '-Darmeria.ports[0].protocols=http',
    ];
    this.child = spawn('java', ['-Xms64m', '-Xmx256m', ...loopback, '-jar', ZIPKIN_JAR], {
      env: { PATH: process.env.PATH ?? '', STORAGE_TYPE: 'mem', QUERY_PORT: String(this.port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const collect = (chunk: Buffer) => this.output.push(chunk.toString('utf8'));
    this.child.stdout!.on('data', collect);
    this.child.stderr!.on('data', collect);
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && this.child.exitCode === null) {
      const health = await fetch(`${this.url}/health`).catch(() => undefined);
      if (health?.status === 200) return;
      await sleep(250);
    }
    await this.close();
    throw new Error(`Zipkin did not start:\n${this.output.join('').slice(-2000)}`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Services' settings to export their spans here. */
  get env(): Record<string, string> {
    return {
      OTEL_TRACES_EXPORTER: 'zipkin',
      OTEL_EXPORTER_ZIPKIN_ENDPOINT: `${this.url}/api/v2/spans`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
  }

  async trace(traceId: string): Promise<ZipkinSpan[]> {
    const response = await fetch(`${this.url}/api/v2/trace/${traceId}`);
    return response.status === 200 ? ((await response.json()) as ZipkinSpan[]) : [];
  }

  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    child.kill('SIGTERM');
    await exited;
  }
}
