import type { NextFunction, Request, Response } from 'express';
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

/** Records rate, errors (by status) and latency of every request, labelled by route template. */
export function httpMetrics(req: Request, res: Response, next: NextFunction): void {
  const stop = requestDuration.startTimer();
  res.on('finish', () => {
    stop({ method: req.method, route: routeOf(req, res), status: String(res.statusCode) });
  });
  next();
}
