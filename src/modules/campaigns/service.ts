// Campaigns as the API sees them (drafts created here, run from the dashboard) and the admin API
// lists them; running them is the engine's (engine.ts).

import type { Db, Sql } from '../../db/client'
import type { Principal } from '../../http/auth'
import { ApiError, badValue } from '../../http/errors'
import type { Clock } from '../../lib/clock'
import { pageOf, type Page } from '../../lib/validate'
import { requireText } from '../../http/values'
import { requireAccount } from '../accounts/service'
import { segmentMatch } from '../templates/segments'
import { findTemplate, usableTemplate } from '../templates/catalog'
import { requireSenderOf } from '../templates/fill'
import type { Campaign, CampaignDetail, CreateCampaignBody } from './model'
import { checkParameters, isMedia, type CampaignParameters } from './wa'
import type { FillOptions } from '../templates/fill'
import { accountMedia } from '../media/service'
import { withUploadedFile } from '../messages/admission'

/** An id that can be a row of ours: ids out of bigint range would fail in the database instead. */
const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0

type CampaignRow = {
  max_price: number | null
  id: number
  name: string
  status: Campaign['status']
  template_id: number
  segment_id: number
  sender_id: number | null
  parameters: CampaignParameters | null
  schedule_at: Date | null
  created_at: Date
  started_at: Date | null
  finished_at: Date | null
  pause_reason: string | null
}

const campaignView = (row: CampaignRow) => ({
  id: row.id,
  name: row.name,
  status: row.status,
  template_id: row.template_id,
  segment_id: row.segment_id,
  sender_id: row.sender_id,
  parameters: row.parameters,
  schedule_at: row.schedule_at,
  created_at: row.created_at,
  // Extension (issue 31): shown when set.
  ...(row.max_price === null || row.max_price === undefined ? {} : { max_price: Number(row.max_price) }),
})

type CampaignView = ReturnType<typeof campaignView>

const COLUMNS = [
  'id',
  'name',
  'status',
  'segment_id',
  'sender_id',
  'schedule_at',
  'created_at',
  'started_at',
  'finished_at',
  'pause_reason',
  'max_price',
]
/** A campaign's columns; `template_id` names its account template or its WhatsApp template, whichever it has. */
const campaignColumns = (sql: Sql | Db) =>
  sql`${sql(COLUMNS)}, coalesce(template_id, wa_template_id) as template_id, template_parameters as parameters`

export async function listCampaigns(sql: Sql, principal: Principal, p: Page) {
  const [rows, [count]] = await Promise.all([
    sql<CampaignRow[]>`
      select ${campaignColumns(sql)} from campaigns where account_id = ${principal.accountId}
      order by created_at desc, id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from campaigns where account_id = ${principal.accountId}`,
  ])
  return pageOf(rows.map(campaignView), count!.n, p)
}

export async function adminListCampaigns(sql: Sql, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  return listCampaigns(sql, { accountId, keyId: 0 }, p)
}

export async function getCampaign(sql: Sql, principal: Principal, id: number) {
  return campaignDetail(sql, id, principal.accountId)
}

/** The same answer for the admin API, whatever the account. */
/** The account a campaign belongs to (for the audit log of the admin API's changes). */
export async function accountOfCampaign(sql: Sql, id: number): Promise<number> {
  const [row] = await sql<{ account_id: number }[]>`select account_id from campaigns where id = ${id}`
  if (!row) throw new ApiError('NOT_FOUND', `campaign ${id} not found`)
  return row.account_id
}

export async function adminCampaignDetail(sql: Sql, id: number) {
  return campaignDetail(sql, id, null)
}

async function campaignDetail(sql: Sql, id: number, accountId: number | null) {
  const notFound = new ApiError('NOT_FOUND', `campaign ${id} not found`)
  if (!isRowId(id)) throw notFound
  const [row] = await sql<CampaignRow[]>`
    select ${campaignColumns(sql)} from campaigns
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
    ), c as (select account_id, segment_id, total_recipients, window_closed, opted_out, missing_values, user_id_only from campaigns where id = ${id})
    select greatest(m.n, coalesce(c.total_recipients, (
        select count(*)::int from contacts ct, segments s
        where s.id = c.segment_id and ct.account_id = c.account_id and ${segmentMatch(sql, sql`s.tag`, 'ct')}
      ))) as total, m.sent, m.delivered, m.read, m.failed, c.window_closed, c.opted_out,
      c.missing_values, c.user_id_only
    from m, c`
  return {
    campaign: {
      ...campaignView(row),
      started_at: row.started_at,
      finished_at: row.finished_at,
      pause_reason: row.pause_reason,
    },
    stats: stats!,
  }
}

function optionalScheduleAt(at: Date | undefined, now: Date): Date | null {
  if (at === undefined) return null
  // Second precision: the current second still counts as now, not the past.
  if (at.getTime() < Math.floor(now.getTime() / 1000) * 1000) throw badValue('schedule_at: must not be in the past')
  return at
}

/**
 * The `from` a campaign of `templateId` goes from when none is given: a WhatsApp template's own sender
 * (undefined: the account's default, as for an account template or none found).
 */
export async function templateSenderOf(sql: Db, accountId: number, templateId: number): Promise<string | undefined> {
  if (!isRowId(templateId)) return undefined
  const wa = await usableTemplate(sql, accountId, templateId)
  return wa?.sender_id == null ? undefined : String(wa.sender_id)
}

/** `keyId` null: created in the dashboard, by no API key. */
export async function createCampaign(
  sql: Db,
  clock: Pick<Clock, 'now'>,
  principal: { accountId: number; keyId: number | null },
  /** `schedule_at` as read at the edge (`YYYY-MM-DD HH:MM:SS` in the service time zone). */
  input: Omit<CreateCampaignBody, 'schedule_at'> & { schedule_at?: Date },
  /** The sender `from` named (or the account's default), resolved by the caller; null: the deployment's. */
  senderId: number | null = null,
  /** Where an uploaded file's signed link starts (a Twilio template's header media, templates/fill.ts). */
  fill: FillOptions = {},
): Promise<CampaignView> {
  const name = requireText(input.name, 'name')
  const scheduleAt = optionalScheduleAt(input.schedule_at, clock.now())
  const account = principal.accountId
  const [found] = await sql<{ template: boolean; segment: boolean }[]>`
    select
      exists (select 1 from templates where id = ${isRowId(input.template_id) ? input.template_id : 0} and account_id = ${account}) as template,
      exists (select 1 from segments where id = ${isRowId(input.segment_id) ? input.segment_id : 0} and account_id = ${account}) as segment`
  // A WhatsApp template the account may use (issue 30): from its own sender, its parameters mapped.
  let wa = found!.template || !isRowId(input.template_id) ? null : await usableTemplate(sql, account, input.template_id)
  // From another of the account's senders (the caller checked it is one): that sender's template of the same
  // name and language when it has one, as a single send does (messages/service.ts templateForSender).
  if (wa && (wa.sender_id ?? null) !== (senderId ?? null)) wa = (await findTemplate(sql, senderId, wa.name, wa.language)) ?? wa
  if (!found!.template && !wa) throw badValue(`template_id: template ${input.template_id} does not exist`)
  if (!found!.segment) throw badValue(`segment_id: segment ${input.segment_id} does not exist`)
  if (!wa && input.parameters !== undefined)
    throw badValue(`parameters: only with a WhatsApp template (template ${input.template_id} is an account template)`)
  let parameters: CampaignParameters | null = null
  if (wa) {
    requireSenderOf(wa, senderId)
    parameters = checkParameters(wa, input.parameters, fill)
    // A media header's uploaded file: the account's own (404 for another's), of the header's kind (422).
    const media = parameters.header
    if (isMedia(media) && media.media_id !== undefined) {
      const files = await accountMedia(sql, account, [media.media_id])
      parameters.header = withUploadedFile({ ...media, media_id: media.media_id }, files, 'parameters.header.media_id')
    }
  }
  // Templates and segments in use are never deleted, and the composite foreign keys keep them in the account.
  const [row] = await sql<CampaignRow[]>`
    insert into campaigns (account_id, api_key_id, name, template_id, wa_template_id, template_parameters, segment_id, schedule_at, sender_id,
                           max_price)
    values (${account}, ${principal.keyId}, ${name}, ${wa ? null : input.template_id}, ${wa ? wa.id : null},
            ${parameters === null ? null : JSON.stringify(parameters)}::text::jsonb, ${input.segment_id}, ${scheduleAt}, ${senderId},
            ${input.max_price ?? null})
    returning ${campaignColumns(sql)}`
  return campaignView(row!)
}
