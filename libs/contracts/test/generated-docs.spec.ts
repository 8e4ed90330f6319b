import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Parser } from '@asyncapi/parser';
import { describe, expect, it } from 'vitest';
import {
  AdjustmentBody,
  ClientBody,
  EndpointCreateBody,
  RevocationBody,
  RightCreateBody,
  SkuUpsertBody,
  SubscriptionCreateBody,
  UsageBody,
  buildAsyncApiDocument,
  buildEventsDocument,
  buildOpenApiDocument,
  AuditEvents,
  CatalogEvents,
  RightEvents,
  RightsCommands,
  SchedulerCommands,
  SubscriptionEvents,
  SubscriptionsCommands,
  ConsumptionBody,
  PlanChangeBody,
  ClockCreateBody,
  ClockAdvanceBody,
  ClockEvents,
  ReservationBody,
  CommitBody,
} from '../src/index';

/** Every event and command type the contracts define, from their schemas (not from the document's generator). */
const CONTRACT_TYPES = [
  ...Object.keys(AuditEvents),
  ...Object.keys(CatalogEvents),
  ...Object.keys(ClockEvents),
  ...Object.keys(RightEvents),
  ...Object.keys(SubscriptionEvents),
  ...Object.keys(RightsCommands),
  ...Object.keys(SubscriptionsCommands),
  ...Object.keys(SchedulerCommands),
].sort();

const docs = path.resolve(__dirname, '../../../docs');

/** Whether `value` meets a parameter's schema, for the keywords parameters use (a test fails on any other). */
function accepts(schema: Record<string, unknown>, value: unknown): boolean {
  const known = ['type', 'pattern', 'enum', 'minLength', 'maxLength', 'minimum', 'maximum', 'default'];
  expect(Object.keys(schema).filter((keyword) => !known.includes(keyword))).toEqual([]);
  if (schema.type === 'integer' && !Number.isInteger(value)) return false;
  if (schema.type === 'string' && typeof value !== 'string') return false;
  if (schema.enum && !(schema.enum as unknown[]).includes(value)) return false;
  if (typeof value === 'string') {
    if (schema.pattern && !new RegExp(schema.pattern as string, 'u').test(value)) return false;
    if (value.length < Number(schema.minLength ?? 0) || value.length > Number(schema.maxLength ?? Infinity))
      return false;
  }
  if (
    typeof value === 'number' &&
    (value < Number(schema.minimum ?? -Infinity) || value > Number(schema.maximum ?? Infinity))
  )
    return false;
  return true;
}

describe('documents generated from the contracts (npm run docs)', () => {
  it('when the API page fills in a request, then every parameter and body has an example its schema accepts', () => {
    const document = buildOpenApiDocument() as {
      paths: Record<
        string,
        Record<
          string,
          {
            parameters?: Array<Record<string, unknown>>;
            requestBody?: { content: Record<string, { schema: { $ref: string }; example?: unknown }> };
          }
        >
      >;
      components: { parameters: Record<string, { name: string; schema: Record<string, unknown>; example?: unknown }> };
    };
    const bodies = {
      RightCreateBody,
      SubscriptionCreateBody,
      SkuUpsertBody,
      ClientBody,
      RevocationBody,
      EndpointCreateBody,
      UsageBody,
      ConsumptionBody,
      ReservationBody,
      CommitBody,
      AdjustmentBody,
      PlanChangeBody,
      ClockCreateBody,
      ClockAdvanceBody,
    };
    let checked = 0;
    for (const [path, operations] of Object.entries(document.paths))
      for (const [method, operation] of Object.entries(operations)) {
        for (const listed of operation.parameters ?? []) {
          const parameter = (
            listed.$ref ? document.components.parameters[String(listed.$ref).split('/').pop()!] : listed
          ) as { name: string; schema: Record<string, unknown>; example?: unknown };
          expect(parameter.example, `${method} ${path} ${parameter.name}`).toBeDefined();
          expect(accepts(parameter.schema, parameter.example), `${method} ${path} ${parameter.name}`).toBe(true);
          checked++;
        }
        const body = operation.requestBody?.content['application/json'];
        if (body) {
          const name = body.schema.$ref.split('/').pop()! as keyof typeof bodies;
          expect(bodies[name], name).toBeDefined();
          expect(bodies[name].safeParse(body.example).success, `${method} ${path} body`).toBe(true);
          checked++;
        }
      }
    expect(checked).toBeGreaterThan(60);
  });

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
      ...Object.keys(SchedulerCommands),
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
