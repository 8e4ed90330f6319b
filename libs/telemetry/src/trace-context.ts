import { context, propagation, ROOT_CONTEXT, trace, type Context } from '@opentelemetry/api';

export type TraceCarrier = Record<string, string>;

/** The W3C trace context (traceparent, tracestate) of the active span, to travel with a message. */
export function currentTraceCarrier(): TraceCarrier {
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function contextFrom(carrier: Record<string, unknown> | undefined): Context {
  const strings: TraceCarrier = {};
  for (const [key, value] of Object.entries(carrier ?? {})) {
    if (typeof value === 'string') strings[key] = value;
    else if (Buffer.isBuffer(value)) strings[key] = value.toString('utf8');
  }
  return propagation.extract(ROOT_CONTEXT, strings);
}

/** The id of the active trace, or null outside one (tracing off). */
export function currentTraceId(): string | null {
  return trace.getSpan(context.active())?.spanContext().traceId ?? null;
}
