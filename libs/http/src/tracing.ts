import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { Request, RequestHandler, Response } from 'express';

const tracer = trace.getTracer('@rs/http');

/**
 * Traces every request the service answers (docs/operations.md; tracing that costs
 * little): one SERVER span, a child of the caller's `traceparent` when there is one, active
 * while the request is handled (so database and broker spans, logs and the events stored
 * in outboxes belong to it), named `<method> <route>` when it ends. In place of
 * OpenTelemetry's HTTP instrumentation, which wraps every request and response and cost a
 * quarter of the gateway's throughput (docs/performance.md); sampling stays the SDK's
 * (`OTEL_TRACES_SAMPLER`).
 */
export function traceRequests(quietPaths: ReadonlySet<string>): RequestHandler {
  return (req, res, next) => {
    if (quietPaths.has(req.path)) return next();
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const span = tracer.startSpan(
      req.method,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': req.path, 'url.scheme': req.protocol },
      },
      parent,
    );
    res.on('close', () => {
      const route = routeOf(req, res);
      span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!res.writableFinished) span.setAttribute('http.request.aborted', true);
      span.end();
    });
    context.with(trace.setSpan(parent, span), next);
  };
}

/** The route template that matched (e.g. `/catalog/skus/:sku`), or the label a router set. */
export function routeOf(req: Request, res: Response): string {
  return req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : (res.locals.routeLabel ?? 'unmatched');
}

/**
 * A CLIENT span for a call to another service, its trace context injected into `headers`;
 * `end` records the status (or the failure) and ends it.
 */
export function startClientSpan(
  method: string,
  url: URL,
  headers: Record<string, string | string[] | number | undefined>,
): { end: (status?: number) => void } {
  const span: Span = tracer.startSpan(`${method}`, {
    kind: SpanKind.CLIENT,
    attributes: {
      'http.request.method': method,
      'server.address': url.hostname,
      'server.port': Number(url.port) || (url.protocol === 'https:' ? 443 : 80),
    },
  });
  propagation.inject(trace.setSpan(context.active(), span), headers);
  let ended = false;
  return {
    end: (status) => {
      if (ended) return;
      ended = true;
      if (status === undefined || status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (status !== undefined) span.setAttribute('http.response.status_code', status);
      span.end();
    },
  };
}
