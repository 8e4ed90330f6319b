/** A task run again and again until stopped. */
export interface Repeating {
  /** No new run starts; resolves when the run under way (if any) has ended. */
  stop(): Promise<void>;
}

export interface RepeatOptions {
  /** Pause between the end of one run and the start of the next. */
  everyMs: number;
  /** Pause after a failed run (default `everyMs`): sooner, to retry a dependency that was down. */
  retryMs?: number;
  /** Run first at once (default) or only after `everyMs`. */
  immediately?: boolean;
  /** A failed run is reported here and does not stop the repetition. */
  onError: (error: unknown) => void;
}

/**
 * The one loop of the platform's background work (outbox polls, sweeps, rebuilds,
 * heartbeats, refreshes): one run at a time, never overlapping, the next timed from the end
 * of the last. Its timers do not keep the process alive.
 */
export function repeat(task: () => unknown, options: RepeatOptions): Repeating {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(run, delayMs);
    timer.unref();
  };
  const run = () => {
    running = (async () => {
      let failed = false;
      try {
        await task();
      } catch (error) {
        failed = true;
        // A run the stop cut short (its process closing what it used) is no failure to report.
        if (!stopped) options.onError(error);
      }
      schedule(failed ? (options.retryMs ?? options.everyMs) : options.everyMs);
    })();
  };
  if (options.immediately ?? true) run();
  else schedule(options.everyMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
