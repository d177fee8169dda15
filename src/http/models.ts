// Models shared by every route: ids and integers in paths, query strings and JSON bodies, the page
// query (limit/offset), the date range of lists, and the list answer.
//
// Path and query integers are plain decimal digits: Elysia's t.Integer also takes "0x10", "1e3" and
// " 1". Ids, offsets and JSON integers stay within JavaScript's safe integers (2^53 - 1), well inside
// PostgreSQL's bigint, so no value beyond the 64-bit range ever reaches SQL.

import { t, type TSchema } from 'elysia'
import { Type, type IntegerOptions } from '@sinclair/typebox'
import { ApiError } from './errors'

export const MAX_INTEGER = Number.MAX_SAFE_INTEGER

export const DECIMAL = '^-?[0-9]+$'

/**
 * A record id in the path (or a query string). One that cannot name a row (0, negative, beyond
 * 2^53 - 1) is 404 NOT_FOUND, like any other id that names no row; one that is not a decimal
 * integer is 400.
 */
export const Id = (field = 'id', description = 'Record id') =>
  t
    .Transform(t.String({ pattern: DECIMAL, description: `${description} (a positive decimal integer)`, examples: ['42'] }))
    .Decode((text) => {
      const value = Number(text)
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new ApiError('NOT_FOUND', `${field} ${text.length > 30 ? `${text.slice(0, 30)}...` : text} not found`)
      }
      return value
    })
    .Encode((value) => String(value))

export const IdParams = t.Object({ id: Id() })

/** A decimal integer in a query string; its range is the route's rule (e.g. `page`), so 422 names it. */
export const QueryInteger = (description: string) =>
  t
    .Transform(t.String({ pattern: DECIMAL, description }))
    .Decode((text) => Number(text))
    .Encode((value) => String(value))

export const pageFields = {
  limit: t.Optional(QueryInteger('Records per page, 1 to 200, default 50')),
  offset: t.Optional(QueryInteger('Records to skip (not pages), default 0')),
}
/** The one page query of every list: `{limit, offset}`, checked by `page()` in lib/validate. */
export const PageQuery = t.Object(pageFields)

export const dateRangeFields = (what: string) => ({
  date_from: t.Optional(
    t.String({
      description: `${what} lower bound (inclusive), YYYY-MM-DD HH:MM:SS in the service time zone`,
      examples: ['2026-01-01 00:00:00'],
    }),
  ),
  date_to: t.Optional(
    t.String({
      description: `${what} upper bound (inclusive: the whole second, so 10:00:00 includes 10:00:00.7), YYYY-MM-DD HH:MM:SS`,
      examples: ['2026-01-31 23:59:59'],
    }),
  ),
})

/**
 * An integer in a JSON body: a JSON number (Elysia's t.Integer also takes "100", right for query
 * strings only), at most 2^53 - 1 either way; outside that range it is a 422 naming the field.
 */
export const JsonInteger = (options: IntegerOptions = {}) => Type.Integer({ minimum: -MAX_INTEGER, maximum: MAX_INTEGER, ...options })

/** A record id in a JSON body: 1 to 2^53 - 1. */
export const JsonId = (options: IntegerOptions = {}) => JsonInteger({ minimum: 1, ...options })

/** The page fields of every list answer besides `items`. */
export const listFields = {
  total: Type.Integer({ description: 'Every record that matches, across all pages' }),
  limit: Type.Integer(),
  offset: Type.Integer(),
  has_more: t.Boolean({ description: 'Records follow this page: `offset + items.length < total`' }),
}

export const listOf = <T extends TSchema>(item: T) => t.Object({ items: t.Array(item), ...listFields })
