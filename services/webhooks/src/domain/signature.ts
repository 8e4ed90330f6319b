import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signatures (docs/api.md): `v1,` + base64 HMAC-SHA256 of
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the secret's decoded bytes.
 */
const PREFIX = 'whsec_';

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes. */
export function newSecret(): string {
  return PREFIX + randomBytes(32).toString('base64');
}

export function sign(secret: string, webhookId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${webhookId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one signature per secret in use (two during a rotation), space-separated. */
export function signatureHeader(
  secrets: readonly string[],
  webhookId: string,
  timestamp: number,
  body: string,
): string {
  return secrets.map((secret) => sign(secret, webhookId, timestamp, body)).join(' ');
}
