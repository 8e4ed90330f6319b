import { Schema, type SchemaDefinitionProperty } from 'mongoose';

/**
 * The kinds of field a stored document has, a word each, so that every collection of every
 * service is declared the same way. Without `?`, a field is required; with it,
 * it is null until set. `flag` is a boolean that is false until set; `json` is any JSON.
 */
export type FieldKind =
  'string' | 'string?' | 'number' | 'number?' | 'boolean' | 'flag' | 'date' | 'json' | 'json?' | 'json[]';

const DEFINITIONS: Record<FieldKind, SchemaDefinitionProperty> = {
  string: { type: String, required: true },
  'string?': { type: String, default: null },
  number: { type: Number, required: true },
  'number?': { type: Number, default: null },
  boolean: { type: Boolean, required: true },
  flag: { type: Boolean, default: false },
  date: { type: Date, required: true },
  json: { type: Schema.Types.Mixed, required: true },
  'json?': { type: Schema.Types.Mixed, default: null },
  'json[]': { type: Schema.Types.Mixed, default: [] },
};

/** What a field holds until set, for the kinds that hold something: made fresh, and recognized. */
interface Unset {
  value: () => null | false | [];
  is: (value: unknown) => boolean;
}
const NULL: Unset = { value: () => null, is: (value) => value === null };
const UNSET: Partial<Record<FieldKind, Unset>> = {
  'string?': NULL,
  'number?': NULL,
  'json?': NULL,
  flag: { value: () => false, is: (value) => value === false },
  'json[]': { value: () => [], is: (value) => Array.isArray(value) && value.length === 0 },
};

/**
 * A collection's fields that hold a value until set (null, false, an empty list), and how a
 * document is stored without them and read with them back (docs/decisions/0078): FerretDB
 * converts every field of every row it writes or reads, so a right without its unset fields
 * is inserted about a quarter faster. A missing field matches a filter on null in MongoDB and
 * in FerretDB alike (`{ clockId: null }` finds both), so no query changes.
 */
export class UnsetFields {
  private readonly byName: ReadonlyMap<string, Unset>;

  constructor(private readonly fields: ReadonlyArray<readonly [name: string, unset: Unset]>) {
    this.byName = new Map(fields);
  }

  /** `doc` as stored: without the fields that still hold what they hold until set. */
  leftOut<D extends object>(doc: D): D {
    const fields = doc as Record<string, unknown>;
    if (!this.fields.some(([name, { is }]) => is(fields[name]))) return doc;
    // Copied field by field rather than deleted from a copy: an object that lost properties
    // becomes a slower dictionary for everything that reads it next (the driver's serializer).
    const stored: Record<string, unknown> = {};
    for (const name of Object.keys(fields)) {
      const value = fields[name];
      if (!this.byName.get(name)?.is(value)) stored[name] = value;
    }
    return stored as D;
  }

  /** `doc` as read, with every field it was stored without back at its unset value (in place). */
  restored<D extends object>(doc: D): D {
    const fields = doc as Record<string, unknown>;
    for (const [name, { value }] of this.fields) if (!(name in fields)) fields[name] = value();
    return doc;
  }
}

const UNSET_FIELDS = new WeakMap<Schema, UnsetFields>();

/** The fields of a `documentSchema` that hold a value until set (none for another schema). */
export const unsetFieldsOf = (schema: Schema): UnsetFields => UNSET_FIELDS.get(schema) ?? new UnsetFields([]);

/** The mongoose definition of one field. */
const field = (kind: FieldKind): SchemaDefinitionProperty => DEFINITIONS[kind];

/**
 * The schema of one collection: `_id` is the document's string key (the resource's id);
 * the other fields by kind, or, for the few that need more, as mongoose definitions.
 * No version key: concurrency is the stores' own compare-and-set on `generation`.
 */
export function documentSchema<D>(
  collection: string,
  fields: Record<string, FieldKind | SchemaDefinitionProperty>,
): Schema<D> {
  const definition = Object.fromEntries(
    Object.entries({ _id: 'string', ...fields }).map(([name, kind]) => [
      name,
      typeof kind === 'string' ? field(kind as FieldKind) : kind,
    ]),
  );
  const schema = new Schema<D>(definition, { collection, versionKey: false, minimize: false });
  const unset = Object.entries(fields).flatMap(([name, kind]) => {
    const value = typeof kind === 'string' ? UNSET[kind as FieldKind] : undefined;
    return value ? [[name, value] as const] : [];
  });
  UNSET_FIELDS.set(schema, new UnsetFields(unset));
  return schema;
}
