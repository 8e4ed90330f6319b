import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import { EventCollector } from './event-collector';
import { OtlpReceiver } from './otlp-receiver';
import { TestSystem, type TestSystemOptions } from './system';
import { TokenIssuer } from './token-issuer';

/** API clients to seed, each with its grantor: `clientsOf({ 'grantor-a': 'A' })`. */
export const clientsOf = (grantorOf: Record<string, string>) =>
  Object.entries(grantorOf).map(([clientId, grantorId]) => ({ clientId, grantorId }));

/** What a client sees of an answer: its status, its media type (without parameters) and its body as text. */
export async function answerOf(response: Response): Promise<{ status: number; type: string | null; text: string }> {
  return { status: response.status, type: mediaTypeOf(response), text: await response.text() };
}

const mediaTypeOf = (response: Response) => response.headers.get('content-type')?.split(';')[0]!.trim() ?? null;

/**
 * A creation's answer as a client sees it, and the created resource: its status, media type,
 * ETag and Location (the contract: 201, JSON, generation 1, the resource's `href`).
 */
export async function creationOf<T extends { href: string }>(response: Response) {
  const answer = {
    status: response.status,
    type: mediaTypeOf(response),
    etag: response.headers.get('etag'),
    location: response.headers.get('location'),
  };
  return { answer, created: (await response.json()) as T };
}

/**
 * The parties of most system tests: grantor A's and grantor B's clients and provider SP's,
 * with their Basic credentials, and the clients to seed.
 */
export const PARTIES = {
  A: TestSystem.clientAuthorization('grantor-a'),
  B: TestSystem.clientAuthorization('grantor-b'),
  SP: TestSystem.clientAuthorization('provider-sp'),
  grantors: { 'grantor-a': 'A', 'grantor-b': 'B', 'provider-sp': 'SP' } as Record<string, string>,
};

export interface SystemFixtureOptions extends TestSystemOptions {
  /** Registered through the gateway once the system runs (see `TestSystem.seed`). */
  seed?: Parameters<TestSystem['seed']>[0];
  /** Exchanges whose events are collected from the start, each with its routing key (default `#`). */
  collect?: Record<string, string>;
  /** Start a token issuer the gateway trusts, for Bearer calls. */
  bearer?: boolean;
  /** Start an OTLP receiver the services export their traces to. */
  traces?: boolean;
  /** Open a confirm channel to the broker, for a test that sends commands itself. */
  commands?: boolean;
}

/** What a test file's system fixture gives its tests, once `start` has run. */
export interface SystemFixture {
  /** For `beforeAll`: starts everything. */
  start(): Promise<void>;
  /** For `afterAll`: stops everything, in reverse order. */
  stop(): Promise<void>;
  readonly system: TestSystem;
  /** The collector of an exchange named in `collect`. */
  events(exchange: string): EventCollector;
  readonly issuer: TokenIssuer;
  readonly receiver: OtlpReceiver;
  /** The confirm channel of `commands`. */
  readonly commands: ConfirmChannel;
  /** `TestSystem.call`: a request through the gateway. */
  readonly call: TestSystem['call'];
  /** `TestSystem.json`: a request through the gateway as a well-behaved client sends it, its body. */
  readonly json: TestSystem['json'];
}

/**
 * The system a test file runs against (docs/architecture.md): the services as processes, with
 * whatever the file needs beside them (collected events, a token issuer, a trace receiver).
 * The file starts it in `beforeAll(fx.start)` and stops it in `afterAll(fx.stop)`.
 */
export function systemFixture(options: SystemFixtureOptions): SystemFixture {
  const state: {
    system?: TestSystem;
    issuer?: TokenIssuer;
    receiver?: OtlpReceiver;
    broker?: ChannelModel;
    commands?: ConfirmChannel;
    collectors: Map<string, EventCollector>;
  } = { collectors: new Map() };
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not part of this fixture, or it has not started`);
    return value;
  };

  const start = async () => {
    const env: Record<string, string> = { ...options.env };
    if (options.bearer) {
      state.issuer = new TokenIssuer();
      await state.issuer.start();
      Object.assign(env, state.issuer.env);
    }
    if (options.traces) {
      state.receiver = new OtlpReceiver();
      await state.receiver.start();
    }
    state.system = await TestSystem.start({
      ...options,
      env,
      ...(state.receiver ? { otlpEndpoint: state.receiver.endpoint } : {}),
    });
    for (const [exchange, routingKey] of Object.entries(options.collect ?? {}))
      state.collectors.set(exchange, await EventCollector.start(state.system.amqpUrl, exchange, routingKey));
    if (options.seed) await state.system.seed(options.seed);
    if (options.commands) {
      state.broker = await amqp.connect(state.system.amqpUrl);
      state.commands = await state.broker.createConfirmChannel();
    }
  };
  const stop = async () => {
    await state.broker?.close();
    for (const collector of state.collectors.values()) await collector.close();
    await state.system?.stop();
    await state.issuer?.close();
    await state.receiver?.close();
  };

  return {
    start,
    stop,
    get system() {
      return started(state.system, 'the system');
    },
    events: (exchange) => started(state.collectors.get(exchange), `events of ${exchange}`),
    get issuer() {
      return started(state.issuer, 'the token issuer');
    },
    get receiver() {
      return started(state.receiver, 'the trace receiver');
    },
    get commands() {
      return started(state.commands, 'the command channel');
    },
    call: (...request) => started(state.system, 'the system').call(...request),
    json: (...request) => started(state.system, 'the system').json(...request),
  };
}
