// Loaded with `node --require @rs/telemetry/register dist/main.js`, before the app.
import path from 'node:path';
import { startTelemetry } from './index';

// services/<name>/dist/main.js names the service when OTEL_SERVICE_NAME does not.
const entry = process.argv[1] ?? '';
const serviceName = path.basename(path.dirname(path.dirname(entry))) || 'rights-and-subscriptions';
startTelemetry(serviceName);
