// The processes a benchmark's system runs, seen from /proc: each service's (found by what it
// runs, so a build of an earlier commit is measured the same way) and each server's, their CPU
// seconds and peak memory; and a machine-wide `perf` profile of a window (docs/performance.md).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { cpuMeter, pidsOf } from './system.mjs';

/**
 * A benchmark's service processes by name, found by what they run (`services/<name>/dist/…`)
 * among its children (a replica's name is its service's: one of them is kept): an older
 * build's test system, measured beside today's (docs/performance.md), names none of its processes.
 */
export function serviceProcesses() {
  const found = new Map();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1]) !== process.pid) continue;
      const service = /services\/([a-z-]+)\/dist\//.exec(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
      if (service) found.set(service[1], { pid });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Peak resident memory (VmHWM) of each service process, in MB. */
export function peakMemory() {
  const peaks = {};
  for (const [name, service] of serviceProcesses()) {
    const status = readFileSync(`/proc/${service.pid}/status`, 'utf8');
    peaks[name] = Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)[1]) / 1024);
  }
  return peaks;
}

/** Every process a benchmark's run spends the machine on, by name (a list of pids each): for `cpuMeter`. */
const machineProcesses = () => ({
  ...Object.fromEntries([...serviceProcesses()].map(([name, { pid }]) => [name, [pid]])),
  bench: [process.pid],
  ferretdb: pidsOf('ferretdb'),
  postgres: pidsOf('postgres'),
  rabbitmq: pidsOf('beam.smp'),
});
const meter = cpuMeter(machineProcesses);

/** CPU seconds each service process, this benchmark and each server (all its processes) have used so far. */
export const cpuSeconds = meter.cpuNow;

/** CPU seconds each of them has used since `before` (a `cpuSeconds()`), to the hundredth. */
export function spentSince(before) {
  return Object.fromEntries(
    Object.entries(meter.spent(before, cpuSeconds())).map(([name, seconds]) => [name, Number(seconds.toFixed(2))]),
  );
}

/**
 * With BENCH_PERF_OUT, samples every process of the machine with `perf` from the due second to
 * the last event (or while creating, with BENCH_PERF_PHASE=create), into that file (`perf
 * report --sort comm,dso,sym`); the services' JavaScript is named when they run with
 * `--perf-basic-prof` (BENCH_SERVICE_ENV's NODE_OPTIONS).
 */
export function profileMachine() {
  const out = process.env.BENCH_PERF_OUT;
  if (!out) return undefined;
  const perf = spawn('perf', ['record', '-q', '-e', 'cpu-clock', '-F', '499', '-a', '-g', '-o', out], {
    stdio: 'ignore',
  });
  return {
    stop: () => {
      const exited = new Promise((resolve) => perf.once('exit', resolve));
      perf.kill('SIGINT');
      return exited;
    },
  };
}
