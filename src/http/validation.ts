// Turning a request that does not fit its route's models into one message that names the field:
// unknown fields, NUL characters, and TypeBox's validation errors (400 for the wrong shape, 422 for a
// value out of range).

import type { TSchema } from 'elysia'
import { ValueErrorType } from '@sinclair/typebox/errors'
import { DECIMAL } from './models'

const MAX_NAME_CHARS = 100

/** `messages[2].to` from a path of keys and indexes; odd keys quoted, long ones cut. */
function fieldName(parts: (string | number)[]): string {
  return parts
    .map((part, i) => {
      if (typeof part === 'number') return `[${part}]`
      const key = /^[A-Za-z_][\w-]*$/.test(part) ? part : JSON.stringify(part)
      const shown = key.length > MAX_NAME_CHARS ? `${key.slice(0, MAX_NAME_CHARS)}...` : key
      return i === 0 ? shown : `.${shown}`
    })
    .join('')
}

type Schema = TSchema & {
  type?: string
  properties?: Record<string, TSchema>
  items?: TSchema
  anyOf?: TSchema[]
  additionalProperties?: unknown
}

/**
 * The first body field that `schema` does not know, at any depth (`mediaUrl`, `messages[2].To`), or
 * null. A route without a body schema knows no field. Elysia would drop such fields silently: a
 * `mediaUrl` typo would send the message without its media, and charge for it.
 */
export function unknownField(schema: TSchema | null, value: unknown): string | null {
  const found = unknownAt((schema ?? { type: 'object', properties: {} }) as Schema, value, [])
  return found && fieldName(found)
}

function unknownAt(schema: Schema, value: unknown, at: (string | number)[]): (string | number)[] | null {
  if (value === null || typeof value !== 'object') return null
  if (schema.anyOf) {
    // A union (e.g. a nullable object): unknown only if no member knows every field.
    let first: (string | number)[] | null = null
    for (const member of schema.anyOf) {
      const found = unknownAt(member as Schema, value, at)
      if (!found) return null
      first ??= found
    }
    return first
  }
  if (Array.isArray(value)) {
    if (schema.type !== 'array' || !schema.items) return null
    for (let i = 0; i < value.length; i++) {
      const found = unknownAt(schema.items as Schema, value[i], [...at, i])
      if (found) return found
    }
    return null
  }
  if (schema.type !== 'object' || !schema.properties) return null
  const open = schema.additionalProperties !== undefined && schema.additionalProperties !== false
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const known = Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined
    if (!known) {
      if (!open) return [...at, key]
      continue
    }
    const found = unknownAt(known as Schema, child, [...at, key])
    if (found) return found
  }
  return null
}

/**
 * The first body field that its schema wants as an object or an array but that is another JSON
 * type, as a message (`variables: must be an object`), or null. Elysia would coerce it before
 * validating: a string becomes {"0": "x"}, null becomes {}, so an object schema with no required
 * field would take it. Unions decide for themselves.
 */
export function wrongContainer(schema: TSchema | null, value: unknown): string | null {
  return schema ? containerAt(schema as Schema, value, []) : null
}

function containerAt(schema: Schema, value: unknown, at: (string | number)[]): string | null {
  if (schema.anyOf) return null
  if (schema.type === 'object') {
    if (!isPlainObject(value)) return at.length > 0 ? `${fieldName(at)}: must be an object` : null
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      const known = schema.properties && Object.hasOwn(schema.properties, key) ? schema.properties[key] : undefined
      const found = known ? containerAt(known as Schema, child, [...at, key]) : null
      if (found) return found
    }
  } else if (schema.type === 'array') {
    if (!Array.isArray(value)) return `${fieldName(at)}: must be an array`
    for (let i = 0; i < value.length && schema.items; i++) {
      const found = containerAt(schema.items as Schema, value[i], [...at, i])
      if (found) return found
    }
  }
  return null
}

/** The first field (or query parameter) whose key or text holds U+0000, which PostgreSQL text cannot store. */
export function nulField(value: unknown, at: (string | number)[] = []): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? fieldName(at) || 'body' : null
  if (value === null || typeof value !== 'object') return null
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value)
  for (const [key, child] of entries) {
    if (typeof key === 'string' && key.includes('\u0000')) return fieldName([...at, key])
    const found = nulField(child, [...at, key])
    if (found) return found
  }
  return null
}

type ValidationIssue = {
  path?: string
  type?: number
  message?: string
  schema?: { type?: string; anyOf?: unknown; pattern?: string; minimum?: number; maximum?: number }
}
export type ValidationFailure = { type?: string; value?: unknown; all?: ValidationIssue[] }

const RANGE_ERRORS = new Set<number>([
  ValueErrorType.IntegerMaximum,
  ValueErrorType.IntegerMinimum,
  ValueErrorType.IntegerExclusiveMaximum,
  ValueErrorType.IntegerExclusiveMinimum,
  ValueErrorType.NumberMaximum,
  ValueErrorType.NumberMinimum,
  ValueErrorType.NumberExclusiveMaximum,
  ValueErrorType.NumberExclusiveMinimum,
])

const isPlainObject = (v: unknown) => v !== null && typeof v === 'object' && !Array.isArray(v)

function valueAt(root: unknown, parts: string[]): unknown {
  let value: unknown = root
  for (const part of parts) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

const named = (parts: string[]) => fieldName(parts.map((p) => (/^\d+$/.test(p) ? Number(p) : p)))

/**
 * Status and message for a validation error of the body, query or path. `rawBody` is the body as
 * parsed: Elysia's error holds a cleaned copy, in which a non-object body has become {}.
 */
export function describeValidation(error: ValidationFailure, rawBody: unknown): { status: 400 | 422; message: string } {
  const shape = (message: string) => ({ status: 400 as const, message })
  // (`all` is a getter of Elysia's error: read it, do not spread the error)
  const issues = error.all ?? []
  const value = error.type === 'body' && rawBody !== undefined ? rawBody : error.value
  const where = error.type === 'query' ? 'query' : error.type === 'params' ? 'path' : 'body'
  const issue = issues.find((i) => i.type === ValueErrorType.ObjectAdditionalProperties) ?? issues[0]
  if (!issue?.path) return shape(where === 'body' ? 'body must be a JSON object' : `${where} is not valid`)
  if (where === 'body' && !isPlainObject(value)) return shape('body must be a JSON object')
  const parts = issue.path.split('/').filter(Boolean)
  // The first container on the path that is not what the schema needs is the one to name.
  for (let i = 1; i < parts.length; i++) {
    const container = valueAt(value, parts.slice(0, i))
    const wantsArray = /^\d+$/.test(parts[i]!)
    if (wantsArray ? !Array.isArray(container) : !isPlainObject(container)) {
      const name = named(parts.slice(0, i))
      return shape(container === undefined ? `${name}: is required` : `${name}: must be ${wantsArray ? 'an array' : 'an object'}`)
    }
  }
  const name = named(parts)
  if (issue.type === ValueErrorType.ObjectAdditionalProperties) return shape(`${name}: unknown field`)
  if (valueAt(value, parts) === undefined) return shape(`${name}: is required`)
  // An integer out of range, alone or as the integer member of a union (a nullable id): 422.
  const field = valueAt(value, parts)
  const ranged =
    issue.type !== undefined && RANGE_ERRORS.has(issue.type)
      ? issue.schema
      : Number.isInteger(field)
        ? (issue.schema?.anyOf as ValidationIssue['schema'][] | undefined)?.find((member) => member?.type === 'integer')
        : undefined
  if (ranged) return { status: 422, message: `${name}: must be from ${ranged.minimum ?? '-∞'} to ${ranged.maximum ?? '∞'}` }
  const type = issue.schema?.pattern === DECIMAL || issue.schema?.anyOf ? 'integer' : issue.schema?.type
  if (type === 'integer' || type === 'number') return shape(`${name}: must be an integer`)
  if (type) return shape(`${name}: must be ${type === 'array' || type === 'object' ? 'an' : 'a'} ${type}`)
  return shape(`${name}: ${issue.message ?? 'is not valid'}`)
}
