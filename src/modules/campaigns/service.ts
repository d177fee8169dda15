// Campaigns as the API sees them (drafts created here, run from the dashboard), and the templates
// and segments they are built from (admin API).

import type { Db, Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import { formatTimestamp } from '../../lib/time'
import { MAX_BODY_CHARS, pageOf, requireTimestamp, type Page } from '../../lib/validate'
import { PLACEHOLDERS, unknownPlaceholders } from '../../lib/template'
import { segmentMatch } from './engine'
import { bindingsOf, requireBindingsFit, requireNotRunning } from '../templates/bindings'
import type { Campaign, CampaignDetail, CreateCampaignBody, CreateSegmentBody, CreateTemplateBody, Segment, Template } from './model'

const MAX_NAME = 200
const MAX_TAG = 100

function requireText(value: string, field: string, max = MAX_NAME): string {
  const trimmed = value.trim()
  if (!trimmed) throw badValue(`${field}: must not be empty`)
  if (trimmed.length > max) throw badValue(`${field}: must be at most ${max} characters`)
  return trimmed
}

/** An id that can be a row of ours: ids out of bigint range would fail in the database instead. */
const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0

type CampaignRow = {
  id: number
  name: string
  status: Campaign['status']
  template_id: number
  segment_id: number
  schedule_at: Date | null
  created_at: Date
  started_at: Date | null
  finished_at: Date | null
  pause_reason: string | null
}

const campaignView = (row: CampaignRow, tz: string): Campaign => ({
  id: row.id,
  name: row.name,
  status: row.status,
  template_id: row.template_id,
  segment_id: row.segment_id,
  schedule_at: formatTimestamp(row.schedule_at, tz),
  created_at: formatTimestamp(row.created_at, tz)!,
})

const CAMPAIGN_COLUMNS = [
  'id',
  'name',
  'status',
  'template_id',
  'segment_id',
  'schedule_at',
  'created_at',
  'started_at',
  'finished_at',
  'pause_reason',
]

export async function listCampaigns(sql: Sql, tz: string, principal: Principal, p: Page) {
  const [rows, [count]] = await Promise.all([
    sql<CampaignRow[]>`
      select ${sql(CAMPAIGN_COLUMNS)} from campaigns where account_id = ${principal.accountId}
      order by created_at desc, id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from campaigns where account_id = ${principal.accountId}`,
  ])
  return pageOf(
    rows.map((r) => campaignView(r, tz)),
    count!.n,
    p,
  )
}

export async function adminListCampaigns(sql: Sql, tz: string, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  return listCampaigns(sql, tz, { accountId, keyId: 0 }, p)
}

export async function getCampaign(sql: Sql, tz: string, principal: Principal, id: number): Promise<CampaignDetail> {
  return campaignDetail(sql, tz, id, principal.accountId)
}

/** The same answer for the admin API, whatever the account. */
export async function adminCampaignDetail(sql: Sql, tz: string, id: number): Promise<CampaignDetail> {
  return campaignDetail(sql, tz, id, null)
}

async function campaignDetail(sql: Sql, tz: string, id: number, accountId: number | null): Promise<CampaignDetail> {
  const notFound = new ApiError('NOT_FOUND', `campaign ${id} not found`)
  if (!isRowId(id)) throw notFound
  const [row] = await sql<CampaignRow[]>`
    select ${sql(CAMPAIGN_COLUMNS)} from campaigns
    where id = ${id} ${accountId === null ? sql`` : sql`and account_id = ${accountId}`}`
  if (!row) throw notFound
  // Counted from the messages themselves, so the numbers follow every status report without a counter
  // to keep in step. total is the recipients: fixed when sending starts, the segment's size before that.
  const [stats] = await sql<CampaignDetail['stats'][]>`
    with m as (
      select count(*)::int as n,
        (count(*) filter (where status in ('sent', 'delivered', 'read')))::int as sent,
        (count(*) filter (where status in ('delivered', 'read')))::int as delivered,
        (count(*) filter (where status = 'read'))::int as read,
        (count(*) filter (where status = 'failed'))::int as failed
      from messages where campaign_id = ${id}
    ), c as (select account_id, segment_id, total_recipients from campaigns where id = ${id})
    select greatest(m.n, coalesce(c.total_recipients, (
        select count(*)::int from contacts ct, segments s
        where s.id = c.segment_id and ct.account_id = c.account_id and ${segmentMatch(sql, sql`s.tag`, 'ct')}
      ))) as total, m.sent, m.delivered, m.read, m.failed
    from m, c`
  return {
    campaign: {
      ...campaignView(row, tz),
      started_at: formatTimestamp(row.started_at, tz),
      finished_at: formatTimestamp(row.finished_at, tz),
      pause_reason: row.pause_reason,
    },
    stats: stats!,
  }
}

function optionalScheduleAt(value: string | undefined, tz: string): Date | null {
  if (value === undefined) return null
  const at = requireTimestamp(value, 'schedule_at', tz)
  // Second precision: the current second still counts as now, not the past.
  if (at.getTime() < Math.floor(Date.now() / 1000) * 1000) throw badValue('schedule_at: must not be in the past')
  return at
}

/** `keyId` null: created in the dashboard, by no API key. */
export async function createCampaign(
  sql: Sql,
  tz: string,
  principal: { accountId: number; keyId: number | null },
  input: CreateCampaignBody,
): Promise<Campaign> {
  const name = requireText(input.name, 'name')
  const scheduleAt = optionalScheduleAt(input.schedule_at, tz)
  const account = principal.accountId
  const [found] = await sql<{ template: boolean; segment: boolean }[]>`
    select
      exists (select 1 from templates where id = ${isRowId(input.template_id) ? input.template_id : 0} and account_id = ${account}) as template,
      exists (select 1 from segments where id = ${isRowId(input.segment_id) ? input.segment_id : 0} and account_id = ${account}) as segment`
  if (!found!.template) throw badValue(`template_id: template ${input.template_id} does not exist`)
  if (!found!.segment) throw badValue(`segment_id: segment ${input.segment_id} does not exist`)
  // Templates and segments in use are never deleted, and the composite foreign keys keep them in the account.
  const [row] = await sql<CampaignRow[]>`
    insert into campaigns (account_id, api_key_id, name, template_id, segment_id, schedule_at)
    values (${account}, ${principal.keyId}, ${name}, ${input.template_id}, ${input.segment_id}, ${scheduleAt})
    returning ${sql(CAMPAIGN_COLUMNS)}`
  return campaignView(row!, tz)
}

// Admin: templates and segments.

async function requireAccount(sql: Sql, id: number): Promise<void> {
  const [row] = isRowId(id) ? await sql`select 1 from accounts where id = ${id}` : []
  if (!row) throw new ApiError('NOT_FOUND', `account ${id} not found`)
}

function requireKnownPlaceholders(body: string): void {
  const unknown = unknownPlaceholders(body)
  if (unknown.length > 0) {
    throw badValue(
      `body: unknown placeholder ${unknown.map((p) => `{{${p}}}`).join(', ')}; use ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}`,
    )
  }
}

type TemplateRow = { id: number; name: string; body: string; created_at: Date }
const templateView = (row: TemplateRow, tz: string, bindings: Template['bindings']): Template => ({
  ...row,
  created_at: formatTimestamp(row.created_at, tz)!,
  bindings,
})
/** Templates with their bindings (one more query for all of them). */
async function withBindings(sql: Db, tz: string, rows: TemplateRow[]): Promise<Template[]> {
  const bindings = await bindingsOf(
    sql,
    tz,
    rows.map((r) => r.id),
  )
  return rows.map((r) => templateView(r, tz, bindings.get(r.id)!))
}

export async function createTemplate(sql: Sql, tz: string, accountId: number, input: CreateTemplateBody): Promise<Template> {
  const name = requireText(input.name, 'name')
  if (input.body.trim().length === 0) throw badValue('body: must not be empty')
  if (input.body.length > MAX_BODY_CHARS) throw badValue(`body: must be at most ${MAX_BODY_CHARS} characters`)
  requireKnownPlaceholders(input.body)
  await requireAccount(sql, accountId)
  const [row] = await sql<TemplateRow[]>`
    insert into templates (account_id, name, body) values (${accountId}, ${name}, ${input.body})
    returning id, name, body, created_at`
  return templateView(row!, tz, [])
}

export async function listTemplates(sql: Sql, tz: string, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  const [rows, [count]] = await Promise.all([
    sql<TemplateRow[]>`
      select id, name, body, created_at from templates where account_id = ${accountId}
      order by created_at desc, id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from templates where account_id = ${accountId}`,
  ])
  return pageOf(await withBindings(sql, tz, rows), count!.n, p)
}

const ofAccount = (sql: Db, accountId: number | undefined) => (accountId === undefined ? sql`` : sql`and account_id = ${accountId}`)

export async function getTemplate(sql: Sql, tz: string, id: number, accountId?: number): Promise<Template> {
  const [row] = isRowId(id)
    ? await sql<TemplateRow[]>`select id, name, body, created_at from templates where id = ${id} ${ofAccount(sql, accountId)}`
    : []
  if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
  return (await withBindings(sql, tz, [row]))[0]!
}

/**
 * A template changes only while no scheduled, sending or paused campaign uses it, and its text keeps
 * the placeholders its bindings use. `accountId`: only a template of that account (else 404), for the dashboard.
 */
export async function updateTemplate(
  sql: Sql,
  tz: string,
  id: number,
  input: { name?: string; body?: string },
  accountId?: number,
): Promise<Template> {
  const name = input.name === undefined ? undefined : requireText(input.name, 'name')
  if (input.body !== undefined) {
    if (input.body.trim().length === 0) throw badValue('body: must not be empty')
    if (input.body.length > MAX_BODY_CHARS) throw badValue(`body: must be at most ${MAX_BODY_CHARS} characters`)
    requireKnownPlaceholders(input.body)
  }
  return sql.begin(async (tx) => {
    const [row] = isRowId(id)
      ? await tx<TemplateRow[]>`select id from templates where id = ${id} ${ofAccount(tx, accountId)} for update`
      : []
    if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
    await requireNotRunning(tx, id)
    if (input.body !== undefined) await requireBindingsFit(tx, id, input.body)
    const [updated] = await tx<TemplateRow[]>`
      update templates set name = coalesce(${name ?? null}, name), body = coalesce(${input.body ?? null}, body)
      where id = ${id} returning id, name, body, created_at`
    return (await withBindings(tx, tz, [updated!]))[0]!
  })
}

/** A template is deleted only when no campaign refers to it. */
export async function deleteTemplate(sql: Sql, id: number, accountId?: number): Promise<{ deleted: true }> {
  return sql.begin(async (tx) => {
    const [row] = isRowId(id) ? await tx`select id from templates where id = ${id} ${ofAccount(tx, accountId)} for update` : []
    if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
    const [used] = await tx`select id from campaigns where template_id = ${id} limit 1`
    if (used) throw new ApiError('CONFLICT', `template ${id} is used by campaign ${used.id}`)
    await tx`delete from templates where id = ${id}`
    return { deleted: true as const }
  })
}

type SegmentRow = { id: number; name: string; tag: string; created_at: Date; contact_count: number }
const segmentView = (row: SegmentRow, tz: string): Segment => ({ ...row, created_at: formatTimestamp(row.created_at, tz)! })
const contactCount = (sql: Sql) => sql`(
  select count(*)::int from contacts ct where ct.account_id = s.account_id and ${segmentMatch(sql, sql`s.tag`, 'ct')}
) as contact_count`

export async function getSegment(sql: Sql, tz: string, id: number): Promise<Segment> {
  const [row] = isRowId(id)
    ? await sql<SegmentRow[]>`select s.id, s.name, s.tag, s.created_at, ${contactCount(sql)} from segments s where s.id = ${id}`
    : []
  if (!row) throw new ApiError('NOT_FOUND', `segment ${id} not found`)
  return segmentView(row, tz)
}

export async function createSegment(sql: Sql, tz: string, accountId: number, input: CreateSegmentBody): Promise<Segment> {
  const name = requireText(input.name, 'name')
  const tag = requireText(input.tag, 'tag', MAX_TAG)
  // Contact tags arrive comma-separated, so no contact can carry a tag with a comma.
  if (tag.includes(',')) throw badValue('tag: must not contain a comma')
  await requireAccount(sql, accountId)
  const [row] = await sql<{ id: number }[]>`
    insert into segments (account_id, name, tag) values (${accountId}, ${name}, ${tag})
    returning id`
  return getSegment(sql, tz, row!.id)
}

export async function listSegments(sql: Sql, tz: string, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  const [rows, [count]] = await Promise.all([
    sql<SegmentRow[]>`
      select s.id, s.name, s.tag, s.created_at, ${contactCount(sql)} from segments s where s.account_id = ${accountId}
      order by s.created_at desc, s.id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from segments where account_id = ${accountId}`,
  ])
  return pageOf(
    rows.map((r) => segmentView(r, tz)),
    count!.n,
    p,
  )
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
