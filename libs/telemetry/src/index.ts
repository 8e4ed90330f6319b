import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK, type NodeSDKConfiguration } from '@opentelemetry/sdk-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

type SpanProcessor = NonNullable<NodeSDKConfiguration['spanProcessors']>[number];

let sdk: NodeSDK | undefined;

/**
 * With OTEL_TRACES_EXPORTER=none the SDK would register no tracer at all, and trace
 * context would stop at this process. A processor that drops every span keeps spans
 * (and so traceparent headers and the trace ids in logs) flowing without exporting them.
 */
const propagateOnly: SpanProcessor = {
  onStart: () => undefined,
  onEnd: () => undefined,
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};
const tracesExportDisabled = () =>
  (process.env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .includes('none');

/**
 * Starts the OpenTelemetry SDK (docs/operations.md). It must run before express, mongodb and
 * amqplib are loaded, which is why services start with `--require @rs/telemetry/register`.
 * Exporters, sampling (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`; parent-based by
 * default, so a trace sampled at the gateway is kept whole downstream) and endpoints come
 * from the standard OTEL_* variables.
 *
 * What is traced costs little: HTTP requests are traced by libs/http (one SERVER
 * span per request, one CLIENT span per call to another service), not by OpenTelemetry's
 * HTTP and Express instrumentations, which wrapped every request, response and middleware
 * layer; messages by @rs/messaging (one span per publish, one per message or batch handled);
 * one span per database command, from the driver only.
 */
export function startTelemetry(serviceName: string): void {
  if (sdk || process.env.OTEL_SDK_DISABLED === 'true') return;
  sdk = new NodeSDK({
    ...(tracesExportDisabled() ? { spanProcessors: [propagateOnly] } : {}),
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME ?? serviceName }),
    instrumentations: [
      // The statement's shape only: the default serializer walks every value of the
      // command (every document of an insertMany) to mask it, on every call.
      new MongoDBInstrumentation({ dbStatementSerializer: statementShape }),
      // No amqplib instrumentation: @rs/messaging makes the PRODUCER span of every publish
      // and the CONSUMER span of every message or batch handled, and carries the trace
      // context in the headers itself. The instrumentation made a second span of each, and
      // injected the headers twice (docs/performance.md, "Measurements behind the code").
    ],
  });
  sdk.start();
}

/** `{"find":"?","filter":"?",…}`: which parts a database command has, never their values. */
function statementShape(command: Record<string, unknown>): string {
  return JSON.stringify(Object.fromEntries(Object.keys(command).map((key) => [key, '?'])));
}

/** Flushes pending spans; called last during graceful shutdown. */
export async function shutdownTelemetry(): Promise<void> {
  const running = sdk;
  sdk = undefined;
  await running?.shutdown().catch(() => undefined);
}
