import path from 'node:path';
import { Writable } from 'node:stream';
import { REPO_ROOT } from './servers';

/** A service a test system runs: as its own process (`ServiceProcess`) or in the test's (`InProcessService`). */
export interface TestService {
  /** Its label in the system: the service's name, or `<name>#2`… for a replica. */
  readonly name: string;
  /** The service it runs. */
  readonly service: string;
  readonly port: number;
  readonly url: string;
  /** Everything it logged, one JSON line per entry. */
  readonly logs: string[];
  /** Its process id, when it runs as its own process. */
  readonly pid?: number | undefined;
  start(): Promise<void>;
  /** Graceful stop, as an orchestrator does it. */
  stop(): Promise<number | null>;
  /** A crash; only a process can crash without cleaning up. */
  kill(): Promise<number | null>;
}

interface Running {
  port: number;
  stop(): Promise<void>;
}
type Start = (env: NodeJS.ProcessEnv, options?: { logTo?: NodeJS.WritableStream }) => Promise<Running>;

/**
 * A service started in the test's own process with its `start(env, options)` (the same
 * function its `main.ts` runs), on the same real servers: no process to spawn and load, so a
 * file that tests behaviour through the API starts in a fraction of the time. Its log lines
 * are kept (and echoed with RS_TEST_SERVICE_LOGS). Process faults (kills, replicas, traces
 * exported by the telemetry preload) need `ServiceProcess`.
 */
export class InProcessService implements TestService {
  private running: Running | undefined;
  private readonly output: string[] = [];

  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
    readonly service: string = name,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get logs(): string[] {
    return this.output;
  }

  async start(): Promise<void> {
    const entry = path.join(REPO_ROOT, 'services', this.service, 'dist/service.js');
    const { start } = (await import(entry)) as { start: Start };
    let partial = '';
    const logTo = new Writable({
      write: (chunk: Buffer, _encoding, done) => {
        const lines = (partial + chunk.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line) this.output.push(line);
        if (process.env.RS_TEST_SERVICE_LOGS) process.stderr.write(chunk);
        done();
      },
    });
    this.running = await start({ TZ: 'UTC', ...this.env }, { logTo });
    if (this.running.port !== this.port)
      throw new Error(`${this.name} listens on ${this.running.port}, not on the port it was given (${this.port})`);
  }

  async stop(): Promise<number | null> {
    const running = this.running;
    this.running = undefined;
    await running?.stop();
    return running ? 0 : null;
  }

  kill(): Promise<number | null> {
    return Promise.reject(
      new Error(`${this.name} runs in the test's process and cannot crash: run its test system with processes`),
    );
  }
}
