import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Parser } from '@asyncapi/parser';
import { describe, expect, it } from 'vitest';
import {
  buildAsyncApiDocument,
  buildEventsDocument,
  buildOpenApiDocument,
  CatalogEvents,
  RightEvents,
  RightsCommands,
  SubscriptionEvents,
  SubscriptionsCommands,
} from '../src/index';

/** Every event and command type the contracts define, from their schemas (not from the document's generator). */
const CONTRACT_TYPES = [
  ...Object.keys(CatalogEvents),
  ...Object.keys(RightEvents),
  ...Object.keys(SubscriptionEvents),
  ...Object.keys(RightsCommands),
  ...Object.keys(SubscriptionsCommands),
].sort();

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

  it('when the contracts change, then docs/asyncapi.json is regenerated', () => {
    expect(JSON.parse(readFileSync(path.join(docs, 'asyncapi.json'), 'utf8'))).toEqual(buildAsyncApiDocument());
  });

  it('when parsed by the AsyncAPI parser, then the document is valid AsyncAPI 3.0 and names every event and command type of the contracts', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(buildAsyncApiDocument()));
    // Severity 0 is an error (1 a warning, 2 information, 3 a hint).
    expect(diagnostics.filter((diagnostic) => diagnostic.severity === 0)).toEqual([]);
    expect(document).toBeDefined();
    const named = new Set(
      document!
        .messages()
        .all()
        .map((message) => message.name()),
    );
    expect([...named].sort()).toEqual(CONTRACT_TYPES);
    // Every event and command is published by someone, and every command queue is consumed.
    const sent = new Set(
      document!
        .operations()
        .filterBySend()
        .flatMap((operation) =>
          operation
            .messages()
            .all()
            .map((message) => message.name()),
        ),
    );
    expect([...sent].sort()).toEqual(CONTRACT_TYPES);
    expect(document!.operations().filterByReceive().length).toBeGreaterThan(0);
  });
});
