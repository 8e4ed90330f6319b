import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '../src/index';

const committed = path.resolve(__dirname, '../../../docs/openapi.json');

describe('OpenAPI document', () => {
  it('when the contracts change, then docs/openapi.json is regenerated (npm run openapi)', () => {
    expect(JSON.parse(readFileSync(committed, 'utf8'))).toEqual(buildOpenApiDocument());
  });

  it('when validated against the OpenAPI 3.1 schema, then it is valid', async () => {
    const result = await new Validator().validate(buildOpenApiDocument());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });
});
