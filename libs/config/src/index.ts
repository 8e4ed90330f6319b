import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Configuration is read from the environment once, at start, and validated with zod
 * (docs/architecture.md section 6). A bad value stops the service with a message naming the variable.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig<T extends z.ZodType>(schema: T, env: NodeJS.ProcessEnv = process.env): z.infer<T> {
  const result = schema.safeParse(env);
  if (result.success) {
    refuseShippedSecrets(env);
    return result.data;
  }
  const problems = result.error.issues.map((issue) => {
    const variable = issue.path.join('.') || '(environment)';
    return `${variable}: ${issue.message}`;
  });
  throw new ConfigError(`invalid configuration\n  ${problems.join('\n  ')}`);
}

/** Secrets shipped in this repository (README, compose, Kubernetes placeholders, development keys). */
const SHIPPED_SECRET = /change-?me|replace[_-]?me|development-only/i;
const SECRET_VARIABLE = /(?:_SECRET|_SECRET_KEY)(?:_PREVIOUS)?$/;

/**
 * In production, a secret variable set to a value this repository ships (a README example,
 * a compose default, a Kubernetes placeholder) stops the service at start, naming the variable:
 * such a value is public (docs/api.md).
 */
export function refuseShippedSecrets(env: NodeJS.ProcessEnv): void {
  if ((env.NODE_ENV ?? 'production') !== 'production') return;
  const shipped = Object.entries(env)
    .filter(([name, value]) => SECRET_VARIABLE.test(name) && value !== undefined && SHIPPED_SECRET.test(value))
    .map(([name]) => `${name}: is a default or placeholder shipped with the platform; set a secret of your own`);
  if (shipped.length > 0) throw new ConfigError(`invalid configuration\n  ${shipped.join('\n  ')}`);
}

export type ServiceName = 'gateway' | 'subscriptions' | 'rights' | 'catalog' | 'scheduler' | 'webhooks';

/** Default ports of the internal services; the gateway's is GATEWAY_PORT (docs/operations.md). */
export const DEFAULT_PORTS: Record<ServiceName, number> = {
  gateway: 8080,
  subscriptions: 8081,
  rights: 8082,
  catalog: 8083,
  scheduler: 8084,
  webhooks: 8085,
};

const port = z.coerce.number().int().min(0).max(65535);
const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    `must be a URL with scheme ${protocols.map((p) => p.replace(':', '')).join(' or ')}`,
  );

export const env = {
  nodeEnv: z.enum(['development', 'test', 'production']).default('production'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  port,
  httpUrl: url(['http:', 'https:']),
  /** A base URL that paths are appended to: the one place its trailing slash is dropped. */
  baseUrl: url(['http:', 'https:']).transform((value) => value.replace(/\/+$/, '')),
  mongoUrl: url(['mongodb:', 'mongodb+srv:']),
  /** A broker, or the nodes of a cluster separated by commas (tried in turn; docs/decisions/0033). */
  amqpUrl: z
    .string()
    .refine(
      (value) => value.split(',').every((one) => url(['amqp:', 'amqps:']).safeParse(one.trim()).success),
      'must be a URL with scheme amqp or amqps, or several separated by commas',
    ),
  /** AUTH_REALM: the realm of every challenge (docs/api.md), quoted in a header. */
  realm: z
    .string()
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII')
    .refine((realm) => !/["\\]/.test(realm), 'must not contain quotes or backslashes')
    .default('rights'),
  /** Shared key of the internal tokens (docs/api.md); at least 32 characters. */
  secret: z.string().min(32, 'must be at least 32 characters'),
  /** Text that `parse` reads into a value (`undefined`: refused, saying `message`); `fallback` when unset. */
  parsed: <T>(fallback: string, parse: (text: string) => T | undefined, message: string) =>
    z
      .string()
      .default(fallback)
      .transform((text, ctx) => {
        const value = parse(text);
        if (value !== undefined) return value;
        ctx.addIssue({ code: 'custom', message });
        return z.NEVER;
      }),
};

/**
 * What every service reads beside its own variables: the address its servers listen on
 * (BIND_ADDRESS; `npm start` gives 127.0.0.1 so that nothing but the machine reaches them).
 */
export const listenEnvShape = {
  BIND_ADDRESS: z
    .string()
    .refine((address) => isIP(address) !== 0, 'must be an IPv4 or IPv6 address')
    .default('0.0.0.0'),
};

/** The base URL of another service, by default where `npm start` runs it (docs/operations.md). */
export const serviceUrl = (service: ServiceName) => env.baseUrl.default(`http://127.0.0.1:${DEFAULT_PORTS[service]}`);

/**
 * Where a service that keeps rights or subscriptions finds the catalog (its SKU directory) and
 * the scheduler (the times of the test clocks they may live on: docs/decisions/0048).
 */
export const directoriesEnvShape = {
  CATALOG_URL: serviceUrl('catalog'),
  SCHEDULER_URL: serviceUrl('scheduler'),
};

/** Variables of a service that answers the public API behind the gateway (its links, its challenges). */
/**
 * How long a service keeps the history of its resources (docs/operations.md, docs/decisions/0032):
 * records older than this many days go. Unset: kept for as long as the database.
 */
export const historyEnvShape = {
  HISTORY_RETENTION_DAYS: z.coerce.number().int().min(1).max(36_500).optional(),
} as const;

export const publicApiShape = {
  PUBLIC_BASE_URL: env.baseUrl.default(`http://localhost:${DEFAULT_PORTS.gateway}`),
  AUTH_REALM: env.realm,
} as const;

/**
 * Variables every backend service reads. `<SERVICE>_MONGODB_URL` overrides `MONGODB_URL`
 * for one service (docs/operations.md); the database name then comes from its path.
 */
export function serviceEnvShape(service: ServiceName) {
  const upper = service.toUpperCase();
  return {
    NODE_ENV: env.nodeEnv,
    LOG_LEVEL: env.logLevel,
    MONGODB_URL: env.mongoUrl.default('mongodb://127.0.0.1:27017'),
    [`${upper}_MONGODB_URL`]: env.mongoUrl.optional(),
    AMQP_URL: env.amqpUrl.default('amqp://guest:guest@127.0.0.1:5672'),
    INTERNAL_TOKEN_SECRET: env.secret.optional(),
    INTERNAL_TOKEN_SECRET_PREVIOUS: env.secret.optional(),
    PORT: env.port.default(DEFAULT_PORTS[service]),
  } as const;
}

/** Only for NODE_ENV=development or test: fixed keys so that `npm start` works out of the box. */
export const DEVELOPMENT_SECRETS = {
  INTERNAL_TOKEN_SECRET: 'development-only-internal-token-secret-do-not-use',
  RIGHT_TOKEN_KEY_SECRET: 'development-only-right-token-key-secret-do-not-use',
  WEBHOOK_SECRET_KEY: 'development-only-webhook-secret-key-do-not-use',
} as const;

/**
 * docs/operations.md: a secret that is required outside development (INTERNAL_TOKEN_SECRET, the key
 * of the internal tokens; RIGHT_TOKEN_KEY_SECRET, which encrypts the right-token keys at
 * rest; WEBHOOK_SECRET_KEY, which encrypts the webhook endpoints' secrets). Returns the key to use, or throws naming the variable.
 */
export function requiredSecret(
  cfg: { NODE_ENV: string } & Partial<Record<SecretName, string | undefined>>,
  name: SecretName,
): string {
  const value = cfg[name];
  if (value) return value;
  if (cfg.NODE_ENV === 'production') {
    throw new ConfigError(`invalid configuration\n  ${name}: required when NODE_ENV is production`);
  }
  return DEVELOPMENT_SECRETS[name];
}

/**
 * A secret and, while it is being rotated out, the one before it (`<NAME>_PREVIOUS`, docs/operations.md): the current one signs and seals; the previous one is still accepted (tokens) or
 * still opens what it sealed, never used to sign or seal.
 */
export interface SecretRing {
  current: string;
  previous: string | null;
}

type SecretName = keyof typeof DEVELOPMENT_SECRETS;

/** The ring of a secret `requiredSecret` reads, with its `_PREVIOUS` companion. */
export function secretRing(
  cfg: { NODE_ENV: string } & Partial<Record<SecretName | `${SecretName}_PREVIOUS`, string | undefined>>,
  name: SecretName,
): SecretRing {
  const current = requiredSecret(cfg, name);
  const previous = cfg[`${name}_PREVIOUS`] ?? null;
  return { current, previous: previous === current ? null : previous };
}

export const internalTokenSecrets = (cfg: {
  NODE_ENV: string;
  INTERNAL_TOKEN_SECRET?: string | undefined;
  INTERNAL_TOKEN_SECRET_PREVIOUS?: string | undefined;
}) => secretRing(cfg, 'INTERNAL_TOKEN_SECRET');

/** Each service's own database on MONGODB_URL (docs/operations.md); the gateway's is `identity`. */
export const DATABASE_NAMES: Record<ServiceName, string> = {
  gateway: 'rs_identity',
  subscriptions: 'rs_subscriptions',
  rights: 'rs_rights',
  catalog: 'rs_catalog',
  scheduler: 'rs_scheduler',
  webhooks: 'rs_webhooks',
};

export interface MongoTarget {
  url: string;
  dbName: string;
}

/** The database a service owns: its DATABASE_NAMES entry on MONGODB_URL, or the path of `<SERVICE>_MONGODB_URL`. */
export function mongoTarget(service: ServiceName, cfg: Record<string, unknown>): MongoTarget {
  const own = cfg[`${service.toUpperCase()}_MONGODB_URL`];
  if (typeof own === 'string') {
    const dbName = decodeURIComponent(new URL(own).pathname.replace(/^\//, ''));
    return { url: own, dbName: dbName || DATABASE_NAMES[service] };
  }
  return { url: String(cfg.MONGODB_URL), dbName: DATABASE_NAMES[service] };
}

/** A URL fit for logs and error messages: its password replaced. */
export function redactUrl(url: string): string {
  if (url.includes(',')) return url.split(',').map(redactUrl).join(',');
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(invalid URL)';
  }
}
