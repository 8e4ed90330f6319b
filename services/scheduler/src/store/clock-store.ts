import {
  BY_ID,
  byGrantor,
  compareAndSetWrite,
  documentSchema,
  GroupCommit,
  type CollectionIndexes,
  isDuplicateKey,
  isLostCompareAndSet,
  outboxDocumentFields,
  OutboxStore,
  PENDING_EVENTS,
  type EntityUpdate,
  type OutboxEntry,
  serverLimits,
} from '@rs/store';
import type { Connection, mongo } from 'mongoose';
import type { ClockEntity } from '../domain/clock';
import { confirmPlaces, NO_PLACES, takePlaces, type ClockPlaces } from '../domain/clock-places';

/** A place asked for the object `id` on a clock holding at most `max`, at `now`. */
interface PlaceAsked {
  clockId: string;
  id: string;
  max: number;
  now: Date;
}

interface ClockDocument extends Omit<ClockEntity, 'clockId'> {
  _id: string;
  deleted: boolean;
}

/**
 * The places of a clock (domain/clock-places.ts): a document of its own, changed by
 * compare-and-set on its `generation`, so that taking a place neither contends with the
 * clock's own changes (an advance's steps) nor is undone by them. A document written before
 * places were confirmed has no `confirmed`: its `generation` was the count of places taken.
 */
interface ClockPlacesDocument {
  _id: string;
  generation: number;
  confirmed?: number;
  pending?: Array<{ id: string; at: Date }>;
}

const placesOf = (doc: ClockPlacesDocument | null): ClockPlaces =>
  doc ? { confirmed: doc.confirmed ?? doc.generation, pending: doc.pending ?? [] } : NO_PLACES;

const schema = documentSchema<ClockDocument>('clocks', {
  grantorId: 'string',
  time: 'date',
  advancingTo: 'date',
  status: 'string',
  deleted: 'flag',
  ...outboxDocumentFields,
});

/** The clocks' queries: by id, and a grantor's (its list and its limit). */
export const CLOCK_INDEXES: CollectionIndexes = {
  collection: 'clocks',
  queries: [BY_ID, byGrantor('its clocks: their list, its limit'), PENDING_EVENTS],
};

/** The places of each clock, by the clock's id. */
export const CLOCK_PLACES_INDEXES: CollectionIndexes = { collection: 'clockPlaces', queries: [BY_ID] };

const toEntity = ({ _id, deleted: _deleted, ...fields }: ClockDocument): ClockEntity => ({ clockId: _id, ...fields });

/** The scheduler's test clocks (docs/decisions/0048): each change a compare-and-set on its generation. */
export class ClockStore extends OutboxStore<ClockDocument, ClockEntity> {
  private readonly places: mongo.Collection<ClockPlacesDocument>;
  /**
   * Creations on clocks asked while places are being counted are counted together by the next
   * count: a burst of creations on one clock costs a few writes, not one after another each.
   */
  private readonly placing = new GroupCommit<PlaceAsked, boolean>((asked) => this.takePlaces(asked), 500);

  constructor(db: Connection) {
    super(db, 'Clock', schema, { tombstone: 'deleted', toEntity, indexes: CLOCK_INDEXES });
    this.places = db.db!.collection<ClockPlacesDocument>(CLOCK_PLACES_INDEXES.collection);
  }

  async find(clockId: string): Promise<ClockEntity | null> {
    return this.findLive(clockId);
  }

  /** A grantor's live clocks (every grantor's for null), oldest first. */
  async list(grantorId: string | null): Promise<ClockEntity[]> {
    const docs = await this.model
      .find({ ...(grantorId === null ? {} : { grantorId }), ...this.liveCondition }, this.hiddenFields)
      .lean<ClockDocument[]>();
    return docs.map(this.toEntity).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
  }

  /** Those of these clocks that are live (not deleted), by id. */
  async live(clockIds: readonly string[]): Promise<Map<string, ClockEntity>> {
    const found = await Promise.all(clockIds.map((clockId) => this.find(clockId)));
    return new Map(found.flatMap((clock) => (clock ? [[clock.clockId, clock] as const] : [])));
  }

  countOfGrantor(grantorId: string): Promise<number> {
    return this.model.countDocuments({ grantorId, ...this.liveCondition });
  }

  /**
   * Takes one of a clock's places for the object `id` about to be created on it: false once it
   * holds `max` (TEST_CLOCK_MAX_OBJECTS). A compare-and-set of the clock's places (on FerretDB its
   * guard makes it exact: docs/decisions/0046), of all the places asked of a clock meanwhile at once.
   */
  takePlace(clockId: string, id: string, max: number, now: Date): Promise<boolean> {
    return this.placing.add({ clockId, id, max, now });
  }

  /** Confirms the places of objects `ids` of a clock, now that their creation was seen (domain/clock-places.ts). */
  async confirmPlaces(clockId: string, ids: readonly string[]): Promise<void> {
    await this.changePlaces(clockId, (places) => ({ next: confirmPlaces(places, ids), answer: undefined }));
  }

  private async takePlaces(asked: ReadonlyArray<PlaceAsked>): Promise<boolean[]> {
    const byClock = new Map<string, number[]>();
    asked.forEach(({ clockId }, index) => byClock.set(clockId, [...(byClock.get(clockId) ?? []), index]));
    const granted = asked.map(() => false);
    await Promise.all(
      [...byClock].map(async ([clockId, indexes]) => {
        const { max, now } = asked[indexes[0]!]!;
        const taken = await this.changePlaces(clockId, (places) => {
          const { next, granted } = takePlaces(
            places,
            indexes.map((index) => asked[index]!.id),
            max,
            now,
          );
          return { next, answer: granted };
        });
        taken.forEach((given, at) => (granted[indexes[at]!] = given));
      }),
    );
    return granted;
  }

  /**
   * Changes a clock's places as `decide` says (`next` null: nothing to write, as when a full
   * clock refuses), by compare-and-set on their generation, read again until it holds; resolves
   * with the decision's answer.
   */
  private async changePlaces<A>(
    clockId: string,
    decide: (places: ClockPlaces) => { next: ClockPlaces | null; answer: A },
  ): Promise<A> {
    const stamped = !(await serverLimits(this.places.db)).usesDriverIndexes;
    for (;;) {
      const doc = await this.places.findOne({ _id: clockId });
      const { next, answer } = decide(placesOf(doc));
      if (!next) return answer;
      const places = { confirmed: next.confirmed, pending: [...next.pending] };
      if (await this.writePlaces(clockId, doc?.generation ?? 0, places, stamped)) return answer;
    }
  }

  /** Writes a clock's places if they are still at `generation`; false when another process was first. */
  private async writePlaces(
    clockId: string,
    generation: number,
    places: Pick<ClockPlacesDocument, 'confirmed' | 'pending'>,
    stamped: boolean,
  ): Promise<boolean> {
    try {
      if (generation === 0) {
        await this.places.insertOne({ _id: clockId, generation: 1, ...places });
        return true;
      }
      const change = { id: clockId, generation, set: { generation: generation + 1, ...places }, outbox: [] };
      const { filter, update } = compareAndSetWrite(change, {}, stamped);
      return (await this.places.updateOne(filter, update as never)).modifiedCount === 1;
    } catch (error) {
      if (isDuplicateKey(error) || isLostCompareAndSet(error)) return false;
      throw error;
    }
  }

  /** A deleted clock's count goes with it (docs/decisions/0048). */
  async forgetPlaces(clockId: string): Promise<void> {
    await this.places.deleteOne({ _id: clockId });
  }

  /** Stores a new clock with its events (through the outbox). */
  insert(clock: ClockEntity, outbox: OutboxEntry[]): Promise<boolean> {
    const { clockId, ...fields } = clock;
    const doc: ClockDocument = { _id: clockId, ...fields, deleted: false };
    return this.documents.insert(doc, outbox);
  }

  /**
   * Stores `next` with its events if the clock is still at `current`'s generation; a change that
   * `removes` it deletes it.
   */
  update({ current, next, outbox, removes }: EntityUpdate<ClockEntity>): Promise<boolean> {
    const { clockId: _id, ...fields } = next;
    return this.documents.compareAndSet({
      id: current.clockId,
      generation: current.generation,
      set: { ...fields, deleted: removes },
      outbox,
    });
  }
}
