import { setTimeout as sleep } from 'node:timers/promises';
/** A service a test system runs: as its own process (`ServiceProcess`) or in the test's (`InProcessService`). */
export interface TestService {
  /** Its label in the system: the service's name, or `<name>#2`… for a replica. */
  readonly name: string;
  /** The service it runs. */
  readonly service: string;
  readonly port: number;
  readonly url: string;
  /** Where its metrics are scraped: `/metrics` on its port, or on its METRICS_PORT (the gateway). */
  readonly metricsUrl: string;
  /** Everything it logged, one JSON line per entry. */
  readonly logs: string[];
  /** Its process id, when it runs as its own process. */
  readonly pid?: number | undefined;
  /** Starts it; a process must be ready within `readyWithinMs` (30 s by default). */
  start(readyWithinMs?: number): Promise<void>;
  /** Changes its environment for its next start, as a rolling change of configuration does (undefined unsets). */
  reconfigure(changes: Record<string, string | undefined>): void;
  /** Graceful stop, as an orchestrator does it. */
  stop(): Promise<number | null>;
  /** A crash; only a process can crash without cleaning up. */
  kill(): Promise<number | null>;
  /** Whether `/readyz` answers 200 within `timeoutMs`. */
  becameReady(timeoutMs: number): Promise<boolean>;
}

/**
 * What both kinds share: a name, the port it was given (where it must listen) and its
 * environment, and the log lines it wrote.
 */
export abstract class LocalService implements TestService {
  protected readonly output: string[] = [];

  constructor(
    readonly name: string,
    readonly port: number,
    protected readonly env: Record<string, string>,
    /** The service it runs (several replicas run one service under different names). */
    readonly service: string = name,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get metricsUrl(): string {
    const own = this.env.METRICS_PORT;
    return own ? `http://127.0.0.1:${own}/metrics` : `${this.url}/metrics`;
  }

  get logs(): string[] {
    return this.output;
  }

  reconfigure(changes: Record<string, string | undefined>): void {
    for (const [name, value] of Object.entries(changes)) {
      if (value === undefined) delete this.env[name];
      else this.env[name] = value;
    }
  }

  /**
   * Waits, as an orchestrator does before it sends traffic, until `/readyz` answers 200 (the
   * gateway, for one, is not ready before its entitlement projection is loaded); false when
   * `timeoutMs` passed or `alive` says it stopped first.
   */
  async becameReady(timeoutMs: number, alive: () => boolean = () => true): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && alive()) {
      try {
        if ((await fetch(`${this.url}/readyz`)).status === 200) return true;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    return false;
  }

  abstract start(): Promise<void>;
  abstract stop(): Promise<number | null>;
  abstract kill(): Promise<number | null>;
}
