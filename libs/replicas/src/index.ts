import { randomUUID } from 'node:crypto';
import { repeat, systemClock, type Clock, type Repeating } from '@rs/time';
import type { mongo } from 'mongoose';

/** A replica that has not renewed its membership for this long has stopped. */
export const REPLICA_TTL_MS = 3_000;

interface MemberDocument {
  _id: string;
  until: Date;
}

/**
 * The live replicas of one service, in its own database (docs/operations.md): each replica renews
 * its membership (a document with the time it lapses) every third of `REPLICA_TTL_MS` and
 * leaves when it stops; the members whose membership has not lapsed are the live ones. Limits
 * that protect others hold across replicas by each replica enforcing its share of them
 * (`share`), from the count its last renewal read, so the hot path makes no round trip.
 */
export class ReplicaRegistry {
  readonly id = randomUUID();
  private readonly memberships: mongo.Collection<MemberDocument>;
  private renewing: Repeating | undefined;
  private live: readonly string[] = [];

  constructor(
    db: mongo.Db,
    collection: string,
    private readonly clock: Clock = systemClock,
    private readonly onError: (error: unknown) => void = () => undefined,
  ) {
    this.memberships = db.collection<MemberDocument>(collection);
  }

  /** Renews this replica's membership at once, then every third of its lifetime. */
  async start(): Promise<void> {
    await this.renew().catch(this.onError);
    this.renewing = repeat(() => this.renew(), {
      everyMs: REPLICA_TTL_MS / 3,
      immediately: false,
      onError: this.onError,
    });
  }

  async stop(): Promise<void> {
    await this.renewing?.stop();
    await this.memberships.deleteOne({ _id: this.id }).catch(() => undefined);
  }

  /** Renews the membership and counts the live members. */
  async renew(): Promise<void> {
    await this.memberships.updateOne(
      { _id: this.id },
      { $set: { until: new Date(this.clock().getTime() + REPLICA_TTL_MS) } },
      { upsert: true },
    );
    this.live = await this.liveMembers();
  }

  /** The live members (a handful of documents: read whole, filtered here). */
  async liveMembers(): Promise<string[]> {
    const now = this.clock();
    return (await this.memberships.find().toArray()).filter((member) => member.until > now).map((member) => member._id);
  }

  /** The live members as the last renewal read them (none before the first renewal). */
  get members(): readonly string[] {
    return this.live;
  }

  /** How many replicas were live at the last renewal (at least this one). */
  get count(): number {
    return Math.max(1, this.live.length);
  }

  /**
   * Whether this replica came first among the live ones at the last renewal (ids in order):
   * the one that does what one replica does for all, such as reporting a cluster-wide gauge.
   */
  get isFirst(): boolean {
    return [...this.live, this.id].sort()[0] === this.id;
  }

  /** This replica's share of a limit that holds across all of them: at least `floor`. */
  share(limit: number, floor = 0): number {
    return Math.max(floor, limit / this.count);
  }
}
