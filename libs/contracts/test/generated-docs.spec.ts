import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import {
  buildEventsDocument,
  buildOpenApiDocument,
  CatalogEvents,
  RightEvents,
  RightsCommands,
  SubscriptionEvents,
} from '../src/index';

const docs = path.resolve(__dirname, '../../../docs');

describe('documents generated from the contracts (npm run docs)', () => {
  it('when the contracts change, then docs/openapi.json is regenerated', () => {
    expect(JSON.parse(readFileSync(path.join(docs, 'openapi.json'), 'utf8'))).toEqual(buildOpenApiDocument());
  });

  it('when validated against the OpenAPI 3.1 schema, then the document is valid', async () => {
    const result = await new Validator().validate(buildOpenApiDocument());
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('when the event contracts change, then docs/events.md is regenerated and names every event type', () => {
    const committed = readFileSync(path.join(docs, 'events.md'), 'utf8');
    expect(committed).toBe(buildEventsDocument());
    for (const type of [
      ...Object.keys(CatalogEvents),
      ...Object.keys(RightEvents),
      ...Object.keys(RightsCommands),
      ...Object.keys(SubscriptionEvents),
    ])
      expect(committed).toContain(`### \`${type}\``);
  });
});
