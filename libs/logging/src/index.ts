import { context, trace } from '@opentelemetry/api';
import pino from 'pino';

export type Logger = pino.Logger;

/** Paths never written to the log (docs/operations.md): credentials and tokens. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'headers.authorization',
  'authorization',
  'secret',
  'password',
  'token',
  '*.secret',
  '*.password',
  '*.token',
  '*.INTERNAL_TOKEN_SECRET',
  '*.ADMIN_CLIENT_SECRET',
];

/** Where log lines go when not to stdout (a test that runs services in its own process keeps them). */
export type LogDestination = pino.DestinationStream;

/**
 * One JSON line per record with the service name, and the trace and span ids of the
 * active OpenTelemetry span, so a log line leads to its trace.
 */
export function createLogger(
  service: string,
  level: string = process.env.LOG_LEVEL ?? 'info',
  destination?: LogDestination,
): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    mixin() {
      const span = trace.getSpan(context.active());
      if (!span) return {};
      const { traceId, spanId } = span.spanContext();
      return { trace_id: traceId, span_id: spanId };
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
