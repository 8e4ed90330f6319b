import path from 'node:path';
import { Writable } from 'node:stream';
import { REPO_ROOT } from './servers';
import { LocalService } from './test-service';

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
export class InProcessService extends LocalService {
  private running: Running | undefined;

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
