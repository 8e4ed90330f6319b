import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { REDACTED_PATHS } from '../src/index';

describe('logger redaction', () => {
  it('when a record carries credentials, then they are written as [redacted]', () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const logger = pino({ redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, sink);
    logger.info({ req: { headers: { authorization: 'Basic YWRtaW46c2VjcmV0' } }, client: { secret: 's3cret' } }, 'x');
    const record = JSON.parse(lines[0]!);
    expect(record.req.headers.authorization).toBe('[redacted]');
    expect(record.client.secret).toBe('[redacted]');
    expect(lines[0]).not.toContain('s3cret');
  });
});
