// Segments: an account's contacts selected by one tag (case-insensitive), counted live.

import type postgres from 'postgres'
import type { Db, Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { requireText } from '../../http/values'
import { pageOf, type Page } from '../../lib/validate'
import { requireAccount } from '../accounts/service'
import { isRowId, ofAccount } from './service'
import type { CreateSegmentBody } from './model'

export const MAX_TAG = 100

/** Contacts of a segment: the account's contacts carrying the tag, case-insensitive. */
export const segmentMatch = (sql: Db, tag: string | postgres.PendingQuery<postgres.Row[]>, contact = 'c') =>
  sql`exists (select 1 from unnest(${sql(contact)}.tags) as t(tag) where lower(t.tag) = lower(${tag}))`

type SegmentRow = { id: number; name: string; tag: string; created_at: Date; contact_count: number }
const contactCount = (sql: Db) => sql`(
  select count(*)::int from contacts ct where ct.account_id = s.account_id and ${segmentMatch(sql, sql`s.tag`, 'ct')}
) as contact_count`

export async function getSegment(sql: Db, id: number): Promise<SegmentRow> {
  const [row] = isRowId(id)
    ? await sql<SegmentRow[]>`select s.id, s.name, s.tag, s.created_at, ${contactCount(sql)} from segments s where s.id = ${id}`
    : []
  if (!row) throw new ApiError('NOT_FOUND', `segment ${id} not found`)
  return row
}

export async function createSegment(sql: Db, accountId: number, input: CreateSegmentBody) {
  const name = requireText(input.name, 'name')
  const tag = requireText(input.tag, 'tag', MAX_TAG)
  // Contact tags arrive comma-separated, so no contact can carry a tag with a comma.
  if (tag.includes(',')) throw badValue('tag: must not contain a comma')
  await requireAccount(sql, accountId)
  const [row] = await sql<{ id: number }[]>`
    insert into segments (account_id, name, tag) values (${accountId}, ${name}, ${tag})
    returning id`
  return getSegment(sql, row!.id)
}

export async function listSegments(sql: Sql, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  const [rows, [count]] = await Promise.all([
    sql<SegmentRow[]>`
      select s.id, s.name, s.tag, s.created_at, ${contactCount(sql)} from segments s where s.account_id = ${accountId}
      order by s.created_at desc, s.id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from segments where account_id = ${accountId}`,
  ])
  return pageOf(rows, count!.n, p)
}

/** A segment is deleted only when no campaign refers to it. `accountId`: only a segment of that account (else 404). */
export async function deleteSegment(sql: Sql, id: number, accountId?: number): Promise<{ deleted: true }> {
  return sql.begin(async (tx) => {
    const [row] = isRowId(id) ? await tx`select id from segments where id = ${id} ${ofAccount(tx, accountId)} for update` : []
    if (!row) throw new ApiError('NOT_FOUND', `segment ${id} not found`)
    const [used] = await tx`select id from campaigns where segment_id = ${id} limit 1`
    if (used) throw new ApiError('CONFLICT', `segment ${id} is used by campaign ${used.id}`)
    await tx`delete from segments where id = ${id}`
    return { deleted: true as const }
  })
}
