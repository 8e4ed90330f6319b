import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  env,
  internalTokenSecrets,
  loadConfig,
  mongoTarget,
  redactUrl,
  serviceEnvShape,
} from '../src/index';

describe('loadConfig', () => {
  const schema = z.object({ ...serviceEnvShape('catalog'), PORT: env.port.default(8083) });

  it('when variables are absent, then the documented defaults apply', () => {
    const cfg = loadConfig(schema, {});
    expect(cfg.MONGODB_URL).toBe('mongodb://127.0.0.1:27017');
    expect(cfg.AMQP_URL).toBe('amqp://guest:guest@127.0.0.1:5672');
    expect(cfg.PORT).toBe(8083);
    expect(cfg.NODE_ENV).toBe('production');
  });

  it('when a base URL ends with slashes, then paths can be appended to it as it is', () => {
    const bases = z.object({ PUBLIC_BASE_URL: env.baseUrl.default('http://localhost:8080') });
    expect(loadConfig(bases, { PUBLIC_BASE_URL: 'https://api.example.com/rs//' }).PUBLIC_BASE_URL).toBe(
      'https://api.example.com/rs',
    );
    expect(loadConfig(bases, {}).PUBLIC_BASE_URL).toBe('http://localhost:8080');
    expect(() => loadConfig(bases, { PUBLIC_BASE_URL: 'ftp://x/' })).toThrow(/PUBLIC_BASE_URL: must be a URL/);
  });

  it('when AMQP_URL names the nodes of a cluster, then it is accepted as it is, and a bad node is refused', () => {
    const nodes = 'amqp://u:p@rabbit-0:5672,amqps://u:p@rabbit-1:5671';
    expect(loadConfig(schema, { AMQP_URL: nodes }).AMQP_URL).toBe(nodes);
    expect(() => loadConfig(schema, { AMQP_URL: `${nodes},http://rabbit-2` })).toThrow(
      /AMQP_URL: must be a URL with scheme amqp or amqps, or several separated by commas/,
    );
    expect(redactUrl(nodes)).toBe('amqp://u:***@rabbit-0:5672,amqps://u:***@rabbit-1:5671');
  });

  it('when a variable is bad, then the error names it', () => {
    expect(() => loadConfig(schema, { AMQP_URL: 'http://x', PORT: 'eighty' })).toThrow(ConfigError);
    try {
      loadConfig(schema, { AMQP_URL: 'http://x', PORT: 'eighty' });
    } catch (error) {
      expect((error as Error).message).toMatch(/AMQP_URL: must be a URL with scheme amqp or amqps/);
      expect((error as Error).message).toMatch(/PORT:/);
    }
  });

  it('when the service has its own MongoDB URL, then its path names the database', () => {
    const cfg = loadConfig(schema, { CATALOG_MONGODB_URL: 'mongodb://db:27017/cat_test' });
    expect(mongoTarget('catalog', cfg)).toEqual({ url: 'mongodb://db:27017/cat_test', dbName: 'cat_test' });
    expect(mongoTarget('catalog', loadConfig(schema, {}))).toEqual({
      url: 'mongodb://127.0.0.1:27017',
      dbName: 'rs_catalog',
    });
  });

  it('when NODE_ENV is production, then INTERNAL_TOKEN_SECRET is required', () => {
    expect(() => internalTokenSecrets({ NODE_ENV: 'production' })).toThrow(/INTERNAL_TOKEN_SECRET/);
    expect(internalTokenSecrets({ NODE_ENV: 'development' }).current).toHaveLength(49);
    expect(() => loadConfig(schema, { INTERNAL_TOKEN_SECRET: 'short' })).toThrow(
      /INTERNAL_TOKEN_SECRET: must be at least 32/,
    );
  });

  it('when a secret is rotated, then its _PREVIOUS companion is read beside it, checked as strictly, and ignored when it equals the current one', () => {
    const current = 'c'.repeat(32);
    const previous = 'p'.repeat(32);
    const cfg = loadConfig(schema, { INTERNAL_TOKEN_SECRET: current, INTERNAL_TOKEN_SECRET_PREVIOUS: previous });
    expect(internalTokenSecrets(cfg)).toEqual({ current, previous });
    expect(internalTokenSecrets({ ...cfg, INTERNAL_TOKEN_SECRET_PREVIOUS: current })).toEqual({
      current,
      previous: null,
    });
    expect(() => loadConfig(schema, { INTERNAL_TOKEN_SECRET_PREVIOUS: 'short' })).toThrow(
      /INTERNAL_TOKEN_SECRET_PREVIOUS: must be at least 32/,
    );
  });
});
