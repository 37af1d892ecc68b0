/*
 * TypeBox builders for what it has none of, used by the policy schema's definition
 * (schema-def.ts, schema-def-egress.ts): a `$ref` into `$defs` typed as what it names, and a
 * plain `enum`.
 */
import { Type, type SchemaOptions, type Static, type TSchema, type TUnsafe } from '@sinclair/typebox';

/** A `$ref` to `$defs/NAME`, typed as `definition` (the schema stored under that name below). */
export function ref<T extends TSchema>(name: string, _definition: T, options: SchemaOptions = {}): TUnsafe<Static<T>> {
  return Type.Unsafe<Static<T>>({ $ref: `#/$defs/${name}`, ...options });
}

/** `{enum: [...]}` (TypeBox's own unions of literals become `anyOf`, which reads worse in messages). */
export function oneOfValues<const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ enum: [...values], ...options });
}
