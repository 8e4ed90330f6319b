/**
 * What can go wrong in a use case, as the domain says it: the one error use
 * cases raise. Only libs/http turns it into a status, a challenge and a body; `code` is
 * machine-readable and appears in RFC 9457 bodies (`code`).
 */
export type DomainErrorCode =
  /** A field or parameter is wrong: 400 (docs/api.md). */
  | 'invalid'
  /** The caller may not do this to this resource (docs/api.md "Principals and authorization"): 401 with the Basic challenge. */
  | 'not_permitted'
  /** No such resource, or one the caller may not see: 404. */
  | 'not_found'
  /** The resource's state does not allow it: 409. */
  | 'conflict'
  /** If-Match names another generation: 412. */
  | 'precondition_failed'
  /** A dependency is unavailable; try again after `retryAfterSeconds`: 503. */
  | 'unavailable';

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: DomainErrorCode,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }

  static invalid = (message: string) => new DomainError('invalid', message);
  static notPermitted = (message: string) => new DomainError('not_permitted', message);
  static notFound = (message: string) => new DomainError('not_found', message);
  static conflict = (message: string) => new DomainError('conflict', message);
  static preconditionFailed = (message: string) => new DomainError('precondition_failed', message);
  static unavailable = (message: string, retryAfterSeconds = 5) =>
    new DomainError('unavailable', message, retryAfterSeconds);
}
