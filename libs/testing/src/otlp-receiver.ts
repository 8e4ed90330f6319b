import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
}
interface OtlpTraces {
  resourceSpans?: Array<{ resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }>;
}

/** OTLP/JSON ids are hex; some exporters send base64. */
const hex = (id: string | undefined) => {
  if (!id) return '';
  return /^[0-9a-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
};

/**
 * A local OTLP/HTTP (JSON) trace receiver: services export to it with
 * OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_PROTOCOL=http/json.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private server: http.Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.url === '/v1/traces') {
          try {
            this.record(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces);
          } catch {
            res.writeHead(400).end();
            return;
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = (this.server.address() as AddressInfo).port;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async close(): Promise<void> {
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private record(traces: OtlpTraces): void {
    for (const resourceSpans of traces.resourceSpans ?? []) {
      const service =
        resourceSpans.resource?.attributes?.find((attribute) => attribute.key === 'service.name')?.value.stringValue ??
        '';
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            service,
            traceId: hex(span.traceId),
            spanId: hex(span.spanId),
            parentSpanId: hex(span.parentSpanId),
            name: span.name,
            kind: span.kind,
          });
        }
      }
    }
  }
}
