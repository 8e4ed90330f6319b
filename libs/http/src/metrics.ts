import type { Request, Response } from 'express';
import client from 'prom-client';
import { histogram } from '@rs/telemetry/metrics';
import { routeOf } from './tracing';

/**
 * One Prometheus registry per process (prom-client's default), served at /metrics
 * (docs/operations.md). Libraries register their own counters on it.
 */
export const metricsRegistry = client.register;

let defaultsCollected = false;
export function initMetrics(service: string): void {
  metricsRegistry.setDefaultLabels({ service });
  if (!defaultsCollected) {
    client.collectDefaultMetrics();
    defaultsCollected = true;
  }
}

const requestDuration = histogram(
  'http_request_duration_seconds',
  'HTTP request latency by method, route and status',
  ['method', 'route', 'status'],
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
);

/**
 * Records one answered request: rate, errors (by status) and latency, labelled by route
 * template. Called by the request's one `finish` listener (app.ts), which also writes its log line.
 */
export function recordRequest(req: Request, res: Response, seconds: number): void {
  requestDuration.observe({ method: req.method, route: routeOf(req, res), status: String(res.statusCode) }, seconds);
}
