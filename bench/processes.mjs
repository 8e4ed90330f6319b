// The processes a benchmark's system runs, seen from /proc: each service's (found by what it
// runs, so a build of an earlier commit is measured the same way) and each server's, their CPU
// seconds and peak memory; and a machine-wide `perf` profile of a window (docs/performance.md).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * A benchmark's service processes by name, found by what they run (`services/<name>/dist/…`)
 * among its children (a replica's name is its service's: one of them is kept): an older build's test system, measured beside today's
 * (docs/performance.md), names none of its processes.
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

/** CPU seconds (user + system) a process has used so far, from /proc (100 ticks a second); 0 once gone. */
function cpuOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** CPU seconds each service and server has used since `before` (a `cpuSeconds()`). */
export function spentSince(before) {
  const now = cpuSeconds();
  return Object.fromEntries(
    Object.entries(now).map(([name, used]) => [name, Number((used - (before[name] ?? 0)).toFixed(2))]),
  );
}

/** The servers' processes by what they run (PostgreSQL's backends come and go: summed by name). */
const SERVER_COMMANDS = {
  ferretdb: /^ferretdb$/,
  postgres: /^postgres$/,
  rabbitmq: /^(beam\.smp|erl_child_setup|epmd)$/,
};

/** CPU seconds each service process, and each server (all its processes), has used so far. */
export function cpuSeconds() {
  const used = {};
  for (const [name, service] of serviceProcesses()) used[name] = cpuOf(service.pid);
  used.bench = cpuOf(process.pid);
  for (const name of Object.keys(SERVER_COMMANDS)) used[name] = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let command;
    try {
      command = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      continue;
    }
    const server = Object.keys(SERVER_COMMANDS).find((name) => SERVER_COMMANDS[name].test(command));
    if (server) used[server] += cpuOf(pid);
  }
  return used;
}

/**
 * With BENCH_PERF_OUT, samples every process of the machine with `perf` from the due second to
 * the last event (or while creating, with BENCH_PERF_PHASE=create), into that file (`perf report --sort comm,dso,sym`); the services' JavaScript is
 * named when they run with `--perf-basic-prof` (BENCH_SERVICE_ENV's NODE_OPTIONS).
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
