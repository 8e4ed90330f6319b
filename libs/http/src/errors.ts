import { isTransient } from '@rs/store';
import { STATUS_CODES } from 'node:http';
import { DomainError, type DomainErrorCode } from '@rs/contracts';
import type { Request, Response } from 'express';

/**
 * The one error type of every service. `status` is what the client gets; `headers`
 * carry challenges (WWW-Authenticate) and Retry-After. Messages are written for the
 * client: they say which field is wrong and why, never internals.
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  /** Machine-readable, in RFC 9457 bodies: the domain's code, or one named after the status. */
  readonly code: string;
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
    code?: string,
  ) {
    super(message);
    this.code = code ?? STATUS_CODE_NAMES[status] ?? (status >= 500 ? 'internal' : 'error');
  }
}

const STATUS_CODE_NAMES: Record<number, string> = {
  400: 'invalid',
  401: 'unauthenticated',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  409: 'conflict',
  412: 'precondition_failed',
  413: 'too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'too_many_requests',
  503: 'unavailable',
  504: 'upstream_timeout',
};

const DOMAIN_STATUS: Record<DomainErrorCode, number> = {
  invalid: 400,
  not_permitted: 401,
  not_found: 404,
  conflict: 409,
  precondition_failed: 412,
  unavailable: 503,
};

/** A use case's DomainError as the contract answers it (docs/api.md). */
export function fromDomainError(error: DomainError, realm: string): AppError {
  const headers: Record<string, string> = {};
  if (error.code === 'not_permitted') headers['WWW-Authenticate'] = basicChallenge(realm);
  if (error.code === 'unavailable') headers['Retry-After'] = retryAfter(error.retryAfterSeconds ?? 5);
  return new AppError(DOMAIN_STATUS[error.code], error.message, headers, error.code);
}

export const badRequest = (message: string) => new AppError(400, message);
export const unauthorized = (message: string, challenge: string) =>
  new AppError(401, message, { 'WWW-Authenticate': challenge });
/** docs/api.md "Challenges": missing or bad Basic credentials. */
export const basicChallenge = (realm: string) => `Basic realm="${realm}", charset="UTF-8"`;
/** docs/api.md "Routes match exactly": a path whose percent-encoding does not decode. */
export const malformedPath = () => badRequest('the path has malformed percent-encoding');
export const notFound = (message = 'not found') => new AppError(404, message);
export const methodNotAllowed = (allowed: string[]) =>
  new AppError(405, `method not allowed; allowed: ${allowed.join(', ')}`, { Allow: allowed.join(', ') });
export const conflict = (message: string) => new AppError(409, message);
export const preconditionFailed = (message: string) => new AppError(412, message);
export const notAcceptable = (message: string) => new AppError(406, message);
export const payloadTooLarge = (message: string) => new AppError(413, message);
export const unsupportedMediaType = (message: string) => new AppError(415, message);
/** `Retry-After` in whole seconds, at least 1. */
const retryAfter = (seconds: number) => String(Math.max(1, Math.ceil(seconds)));
export const tooManyRequests = (message: string, retryAfterSeconds: number) =>
  new AppError(429, message, { 'Retry-After': retryAfter(retryAfterSeconds) });
export const serviceUnavailable = (message: string, retryAfterSeconds = 5) =>
  new AppError(503, message, { 'Retry-After': retryAfter(retryAfterSeconds) });

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** docs/api.md "Error bodies": 401 and 404 are text/html, everything else text/plain. */
const HTML_STATUSES = new Set([401, 404]);

/**
 * docs/api.md "Content negotiation": whether the request's `Accept` admits JSON (a missing
 * one is `*\/*`; quality values count, `q=0` excludes).
 */
export function admitsJson(req: Request): boolean {
  return req.accepts(['application/json', 'application/problem+json']) !== false;
}

export function sendError(req: Request, res: Response, error: AppError): void {
  const title = STATUS_CODES[error.status] ?? 'Error';
  res.status(error.status);
  res.set(error.headers);
  if (
    error.status !== 406 &&
    req.accepts(['text/html', 'text/plain', 'application/problem+json']) === 'application/problem+json'
  ) {
    // RFC 9457 bodies for clients that ask for them (docs/api.md).
    res
      .type('application/problem+json')
      .send(
        JSON.stringify({ type: 'about:blank', title, status: error.status, detail: error.message, code: error.code }),
      );
    return;
  }
  if (HTML_STATUSES.has(error.status)) {
    const heading = `${error.status} ${escapeHtml(title)}`;
    res
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html>\n<html><head><title>${heading}</title></head><body><h1>${heading}</h1><p>${escapeHtml(error.message)}</p></body></html>\n`,
      );
    return;
  }
  res.type('text/plain; charset=utf-8').send(`${error.message}\n`);
}

interface BodyParserError {
  type?: string;
  status?: number;
  /** http-errors: set on the client errors the parser raises (4xx). */
  expose?: boolean;
  message?: string;
}

/** Maps what body-parser and express throw to the contract's statuses; anything else is a 500. */
export function toAppError(error: unknown, realm = 'rights'): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof DomainError) return fromDomainError(error, realm);
  // Express decodes path parameters once; malformed percent-encoding is the client's (docs/api.md).
  if (error instanceof URIError) return malformedPath();
  const parserError = error as BodyParserError;
  switch (parserError?.type) {
    case 'entity.parse.failed':
      return badRequest('request body is not valid JSON');
    case 'entity.too.large':
      return payloadTooLarge('request body is too large');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return unsupportedMediaType(parserError.message ?? 'unsupported body encoding');
    case 'request.aborted':
    case 'request.size.invalid':
      return badRequest('request body was incomplete');
  }
  // The database is down, restarting or hanging (docs/security.md): nothing was acknowledged, and
  // a retry in a moment may well succeed.
  if (isTransient(error)) return serviceUnavailable('a dependency is unavailable; try again shortly', 2);
  // Any other refusal of a body by its parser is the client's.
  if (parserError?.expose === true) return badRequest('request body could not be read');
  return new AppError(500, 'internal error');
}
