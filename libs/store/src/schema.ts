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
  return new Schema<D>(definition, { collection, versionKey: false, minimize: false });
}
