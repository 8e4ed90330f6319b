import type { IncomingHttpHeaders } from 'node:http';
import type { Principal } from '@rs/contracts';
import { currentTraceId } from '@rs/telemetry/trace-context';
import type { Request, Response } from 'express';
import type { AuditLog } from '../app/audit';
import { projectedRightsOf } from './projected-rights';

/**
 * The audit log's side of a request (docs/audit.md): its entry is begun before the change is
 * forwarded or answered, and completed once the client has the answer (or left): with its
 * status, the resource a creation made, and the grantor the answer names.
 */
export class AuditedRequests {
  /** The grantor of the right a forwarded answer changed, by response (its projection header says). */
  private readonly answerGrantors = new WeakMap<Response, string>();

  constructor(private readonly log: AuditLog) {}

  /** Begins the entry of `req`; resolves once it is stored, so that no change goes unrecorded. */
  async record(
    req: Request,
    res: Response,
    principal: Principal,
    reason: string | null,
    bodyGrantor: () => string | null,
  ): Promise<void> {
    const begun = await this.log.begin(principal, {
      action: `${req.method} ${res.locals.operation.route.path}`,
      path: new URL(req.originalUrl, 'http://gateway').pathname,
      reason,
      requestId: res.locals.requestId ?? null,
      traceId: currentTraceId(),
      bodyGrantor: bodyGrantor(),
    });
    res.once('close', () => {
      const location = res.getHeader('location');
      this.log
        .complete(begun, {
          status: res.headersSent ? res.statusCode : null,
          location: typeof location === 'string' ? location : null,
          bodyGrantor: bodyGrantor(),
          answerGrantor: this.answerGrantors.get(res) ?? null,
        })
        .catch((error: unknown) =>
          res.locals.log?.warn({ err: error }, 'cannot complete an audit entry yet; the sweep will close it'),
        );
    });
  }

  /** What the service's answer to an audited request said of the right it changed. */
  answeredBy(res: Response, headers: IncomingHttpHeaders): void {
    const [right] = projectedRightsOf(headers);
    if (right) this.answerGrantors.set(res, right.grantorId);
  }
}
