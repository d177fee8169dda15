// Running campaigns. A run fixes its recipients (the segment's contacts at that moment), then the
// campaign worker sends in batches: one transaction locks the account row, charges what the balance
// can pay at the current price, records the batch's messages (at most one per campaign and contact)
// and advances the cursor; the batch is then handed over through the shared pool, like bulk. When the
// balance runs out the campaign pauses with a reason; resume continues after a top-up. A campaign
// created through the API with a key that has a daily spend cap counts against that cap like the
// key's sends: when the cap leaves no room for a message, it pauses with that reason (resume it the
// next day in TIMEZONE, or after the cap is raised). Campaigns without a key have no cap.
// A template bound to an approved template of the provider in use is sent as that template, with
// each contact's values in the bound order; every message records its rendered text either way.
// A campaign of a WhatsApp template (issue 30) fills each recipient's parameters from its mapping
// (wa.ts) with the send's own code; a recipient whose value is missing is skipped, uncharged, and
// counted (missing_values); so is a contact known only by a WhatsApp user id when the sender is not Meta's
// (user_id_only). Before a batch is charged its template must be approved: otherwise the
// campaign pauses (TEMPLATE_NOT_APPROVED...) and the scheduler resumes it once the template is approved.

import type { Deps } from '../../deps'
import type { Db, Sql } from '../../db/client'
import { nowOf } from '../../db/now'
import type { Clock } from '../../lib/clock'
import { errorKind, log } from '../../lib/log'
import { ApiError } from '../../http/errors'
import { renderTemplate } from '../../lib/template'
import { isUserId } from '../../lib/user-id'
import { chargeRecorded, lockForCharge, refundFailed, type Lease } from '../ledger/service'
import { outgoingOf } from '../messages/content'
import type { RichContent, StoredTemplate } from '../../providers/provider'
import { segmentMatch } from '../templates/segments'
import { checksWindow, closedWindowsOf } from '../messages/window'
import { aboveMax, categoryOf, priceCapPause } from '../messages/admission'
import { hasRoom, takeForCampaign } from '../budgets/guard'
import { optedOutAmong } from '../optouts/service'
import { getTemplateRow } from '../templates/catalog'
import type { Attributes } from '../contacts/service'
import { fillForContact, type CampaignParameters } from './wa'
import type { FillOptions } from '../templates/fill'
import { linkStart } from '../media/signing'
import { healthPause, restrictedSql, type Restricted } from '../senders/health'

const CAMPAIGN_BATCH = 500
const LEASE_SECONDS = 60

type CampaignState = { id: number; status: string; schedule_at: Date | null }

async function lockCampaign(sql: Db, id: number): Promise<CampaignState> {
  const [row] = await sql<CampaignState[]>`select id, status, schedule_at from campaigns where id = ${id} for update`
  if (!row) throw new ApiError('NOT_FOUND', `campaign ${id} not found`)
  return row
}

/** Moves a campaign to `sending`, fixing its recipients. `sql` must be the transaction holding its lock. */
async function startSending(sql: Db, clock: Clock, id: number): Promise<void> {
  await sql`
    with c as (select account_id, segment_id from campaigns where id = ${id}),
    s as (select tag from segments where id = (select segment_id from c)),
    recipients as (
      select count(*)::int as n, coalesce(max(c2.id), 0) as max_id
      from contacts c2 where c2.account_id = (select account_id from c)
        and ${segmentMatch(sql, sql`(select tag from s)`, 'c2')}
    )
    update campaigns set status = 'sending', started_at = coalesce(started_at, ${nowOf(sql, clock)}), pause_reason = null,
      total_recipients = recipients.n, max_contact_id = recipients.max_id
    from recipients where campaigns.id = ${id}`
}

/** POST /admin/v1/campaigns/{id}/run: a draft starts now, or at its schedule_at when that is in the future. */
export async function runCampaign(deps: Deps, id: number): Promise<void> {
  await deps.sql.begin(async (tx) => {
    const campaign = await lockCampaign(tx, id)
    if (campaign.status !== 'draft') throw new ApiError('CONFLICT', `campaign ${id} is ${campaign.status}; only a draft can be run`)
    if (campaign.schedule_at && campaign.schedule_at.getTime() > deps.clock.now().getTime()) {
      await tx`update campaigns set status = 'scheduled' where id = ${id}`
    } else {
      await startSending(tx, deps.clock, id)
    }
  })
  deps.wake('campaign-runner')
}

export async function resumeCampaign(deps: Deps, id: number): Promise<void> {
  await deps.sql.begin(async (tx) => {
    const campaign = await lockCampaign(tx, id)
    if (campaign.status !== 'paused')
      throw new ApiError('CONFLICT', `campaign ${id} is ${campaign.status}; only a paused campaign can be resumed`)
    await tx`update campaigns set status = 'sending', pause_reason = null where id = ${id}`
  })
  deps.wake('campaign-runner')
}

export async function cancelCampaign(deps: Deps, id: number): Promise<void> {
  await deps.sql.begin(async (tx) => {
    const campaign = await lockCampaign(tx, id)
    if (campaign.status === 'sent' || campaign.status === 'cancelled') {
      throw new ApiError('CONFLICT', `campaign ${id} is already ${campaign.status}`)
    }
    await tx`update campaigns set status = 'cancelled', finished_at = ${nowOf(tx, deps.clock)}, lease_token = null, lease_until = null where id = ${id}`
    // Its messages set aside for their template (handoff.ts) will not be sent: refunded now.
    const aside = await tx<{ id: number }[]>`
      select id from messages where campaign_id = ${id} and set_aside_at is not null and status = 'queued'`
    await refundFailed(
      tx,
      aside.map((m) => ({ id: Number(m.id), errorCode: null, errorMessage: SET_ASIDE_CANCELLED })),
      deps.config.timezone,
      deps.clock,
    )
  })
}

const SET_ASIDE_CANCELLED = 'its campaign was cancelled while its WhatsApp template was not approved: never sent, refunded'
const SET_ASIDE_EXPIRED = "its WhatsApp template was not approved again within the message's validity: never sent, refunded"

/**
 * Scheduler step: the messages a hand-off set aside because their campaign's WhatsApp template was no
 * longer approved (handoff.ts) go back to recovery once it is approved again (their lease made long
 * expired: the next recovery step hands them over, at the sender's pace); those whose validity ran out
 * first are refunded. The count of both.
 */
export async function releaseSetAside(
  sql: Sql,
  clock: Clock,
  config: { timezone: string; handoffLeaseSeconds: number; messageValiditySeconds: number },
): Promise<number> {
  const now = nowOf(sql, clock)
  const expired = await sql<{ id: number }[]>`
    select id from messages where set_aside_at is not null and status = 'queued'
      and coalesce(valid_until, created_at + make_interval(secs => ${config.messageValiditySeconds})) <= ${now}`
  const refunded = await refundFailed(
    sql,
    expired.map((m) => ({ id: Number(m.id), errorCode: null, errorMessage: SET_ASIDE_EXPIRED })),
    config.timezone,
    clock,
  )
  const released = await sql`
    update messages m set set_aside_at = null, handoff_until = ${now} - make_interval(secs => ${2 * config.handoffLeaseSeconds + 1})
    where m.set_aside_at is not null and m.status = 'queued'
      and exists (select 1 from wa_templates w where w.id = (m.provider_template->>'templateId')::bigint and w.status = 'approved')
    returning m.id`
  return refunded.ids.length + released.length
}

/** The pause reason of a campaign paused by its sender's messaging limit (takeForCampaign writes it). */
const LIMIT_PAUSE = 'MESSAGING_LIMIT%'

/**
 * Scheduler step: resumes the campaigns paused by their sender's messaging limit whose budget has room
 * again. Only those: a campaign paused for another reason (balance, a disabled sender, an operator)
 * waits for its operator.
 */
export async function resumeLimitedCampaigns(sql: Sql, clock: Clock, messagingLimit: number | null): Promise<number> {
  const paused = await sql<{ id: number; sender_id: number | null }[]>`
    select id, sender_id from campaigns where status = 'paused' and pause_reason like ${LIMIT_PAUSE} order by id limit 100`
  let resumed = 0
  for (const c of paused) {
    if (!(await hasRoom(sql, clock, messagingLimit, c.sender_id))) continue
    const [row] = await sql`
      update campaigns set status = 'sending', pause_reason = null
      where id = ${c.id} and status = 'paused' and pause_reason like ${LIMIT_PAUSE} returning id`
    if (row) resumed++
  }
  return resumed
}

/** The pause reason of a campaign paused because its WhatsApp template is not approved (nextBatch writes it). */
const TEMPLATE_PAUSE = 'TEMPLATE_NOT_APPROVED%'

/**
 * Scheduler step: resumes the campaigns paused because their WhatsApp template was not approved, once
 * it is approved again (Meta's notice, a sync, an operator): the template's status is read here, so
 * whichever path approved it, the campaign goes on.
 */
export async function resumeTemplateCampaigns(sql: Sql): Promise<number> {
  const rows = await sql`
    update campaigns c set status = 'sending', pause_reason = null
    from wa_templates w
    where w.id = c.wa_template_id and w.status = 'approved' and c.status = 'paused' and c.pause_reason like ${TEMPLATE_PAUSE}
    returning c.id`
  return rows.length
}

/**
 * Scheduler step: resumes the campaigns paused because Meta flagged or restricted their sender
 * (healthPause), once it is neither flagged nor restricted (unflagged, the restriction lifted or expired)
 * and not disabled.
 */
export async function resumeHealthyCampaigns(sql: Sql, clock: Clock): Promise<number> {
  const rows = await sql`
    update campaigns c set status = 'sending', pause_reason = null
    from senders s
    where s.id = c.sender_id and c.status = 'paused'
      and (c.pause_reason like 'SENDER_FLAGGED%' or c.pause_reason like 'SENDER_RESTRICTED%')
      and not s.quality_flagged and s.disabled_at is null and ${restrictedSql(sql, sql`s.restrictions`, nowOf(sql, clock))} is null
    returning c.id`
  return rows.length
}

/** Scheduler step: starts every scheduled campaign whose time has come. */
export async function startDueCampaigns(sql: Sql, clock: Clock): Promise<number> {
  const due = await sql<{ id: number }[]>`
    select id from campaigns where status = 'scheduled' and schedule_at <= ${nowOf(sql, clock)} order by schedule_at limit 100`
  let started = 0
  for (const { id } of due) {
    const ok = await sql.begin(async (tx) => {
      const [row] = await tx`select 1 from campaigns where id = ${id} and status = 'scheduled' for update skip locked`
      if (!row) return false
      await startSending(tx, clock, id)
      return true
    })
    if (ok) started++
  }
  return started
}

type BatchMessage = { id: number; phone: string; body: string; provider_template: StoredTemplate | null; content: RichContent | null }
/** `settleFirst`: the campaign would end (or pause) now, but messages of it are still being handed over. */
type Batch = { messages: BatchMessage[]; lease: Lease; done: boolean; settleFirst?: boolean }

/**
 * Charges and records the next batch of a campaign this worker holds the lease of. Returns the
 * messages to hand over, and whether the campaign stopped (finished, paused, cancelled or lost). With
 * `handingOver`, it neither finishes nor pauses the campaign (`settleFirst`): a campaign is `sent` or
 * `paused` only once its messages have their outcomes.
 */
async function nextBatch(
  sql: Sql,
  clock: Clock,
  tz: string,
  provider: string,
  campaignId: number,
  leaseToken: string,
  lease: Lease,
  validitySeconds: number,
  handingOver: boolean,
  /** The sender is held to the 24-hour window (messages/window.ts). */
  windowChecked: boolean,
  messagingLimit: number | null,
  /** The sender's provider reaches a customer by WhatsApp user id (Meta). */
  reachesUserIds: boolean,
  /** Where an uploaded file's signed link starts (a Twilio template's header media, templates/fill.ts). */
  fill: FillOptions = {},
): Promise<Batch> {
  const stop = { messages: [], lease, done: true }
  const settleFirst = { messages: [], lease, done: false, settleFirst: true }
  return sql.begin(async (tx) => {
    const now = nowOf(tx, clock)
    const [campaign] = await tx<
      {
        account_id: number
        api_key_id: number | null
        status: string
        cursor_contact_id: number
        max_contact_id: number
        template_id: number
        body: string | null
        wa_template_id: number | null
        template_parameters: CampaignParameters | null
        tag: string
        ref: string | null
        language: string | null
        variables: string[] | null
        sender_id: number | null
        sender_disabled: boolean
        sender_flagged: boolean
        sender_restricted: Restricted
        max_price: number | null
      }[]
    >`
      select c.account_id, c.api_key_id, c.status, c.cursor_contact_id, c.max_contact_id,
             coalesce(c.template_id, c.wa_template_id) as template_id, t.body, c.wa_template_id, c.template_parameters, s.tag,
             b.ref, b.language, b.variables, c.sender_id, c.max_price,
             coalesce((select disabled_at is not null from senders where id = c.sender_id), false) as sender_disabled,
             coalesce((select quality_flagged from senders where id = c.sender_id), false) as sender_flagged,
             ${restrictedSql(tx, tx`(select restrictions from senders where id = c.sender_id)`, now)} as sender_restricted
      from campaigns c left join templates t on t.id = c.template_id join segments s on s.id = c.segment_id
        left join template_bindings b on b.template_id = t.id and b.provider = ${provider}
      where c.id = ${campaignId} and c.lease_token = ${leaseToken} and c.lease_until > ${now}
      for update of c`
    if (!campaign || campaign.status !== 'sending') return stop
    if (campaign.sender_disabled) {
      if (handingOver) return settleFirst
      // Its sender was disabled while it ran: what was charged goes on; the rest waits for the sender.
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null,
          pause_reason = ${`sender ${campaign.sender_id} is disabled; enable it and resume`}
        where id = ${campaignId}`
      return stop
    }
    // Its sender flagged or restricted by Meta (senders/health.ts): nothing more is charged; it resumes on recovery.
    const unhealthy =
      campaign.sender_id === null ? null : healthPause(campaign.sender_id, campaign.sender_restricted, campaign.sender_flagged)
    if (unhealthy) {
      if (handingOver) return settleFirst
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null, pause_reason = ${unhealthy}
        where id = ${campaignId}`
      return stop
    }
    // A WhatsApp template must be approved before anything more is charged; it resumes once it is again.
    const wa = campaign.wa_template_id === null ? null : await getTemplateRow(tx, campaign.wa_template_id)
    if (wa && wa.status !== 'approved') {
      if (handingOver) return settleFirst
      const why = wa.reason ? ` (reason: ${wa.reason})` : ''
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null,
          pause_reason = ${`TEMPLATE_NOT_APPROVED: template ${wa.id} (${wa.name}, ${wa.language}) is ${wa.status}${why}; the campaign resumes by itself once it is approved again`}
        where id = ${campaignId}`
      return stop
    }

    const fetched = await tx<
      { id: number; name: string; phone: string; email: string | null; city: string | null; attributes: Attributes }[]
    >`
      select c.id, c.name, c.phone, c.email, c.city, c.attributes from contacts c
      where c.account_id = ${campaign.account_id} and c.id > ${campaign.cursor_contact_id} and c.id <= ${campaign.max_contact_id}
        and ${segmentMatch(tx, campaign.tag)}
      order by c.id limit ${CAMPAIGN_BATCH}`
    if (fetched.length === 0) {
      if (handingOver) return settleFirst
      await tx`update campaigns set status = 'sent', finished_at = ${now}, lease_token = null, lease_until = null where id = ${campaignId}`
      return stop
    }

    const account = await lockForCharge(tx, tz, campaign.account_id, campaign.api_key_id, clock, campaign.template_id)
    // The price cap (messages/admission.ts, rule 6), under the account's lock: a price above the campaign's
    // max_price (Meta recategorised its template, a price was raised) charges nothing more and pauses it.
    if (aboveMax(account.cost, campaign.max_price)) {
      if (handingOver) return settleFirst
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null,
          pause_reason = ${priceCapPause(categoryOf(wa), account.cost, campaign.max_price!)}
        where id = ${campaignId}`
      return stop
    }
    // Skipped, uncharged, and counted: recipients who opted out (read under the account's lock, which an
    // opt-out takes too: one committed before this charge is seen, even while the campaign runs), then,
    // for a free-form campaign (its template not bound for the provider), those whose 24-hour window
    // with the sender is closed; an approved template always goes.
    const optedOut = await optedOutAmong(
      tx,
      campaign.account_id,
      fetched.map((c) => c.phone),
    )
    // A contact known only by a WhatsApp user id (issue 32) is reached only through a Meta sender (as Meta's
    // `recipient`): through another it is skipped, uncharged, and counted, as the provider would refuse it.
    const userIdOnly = new Set(reachesUserIds ? [] : fetched.filter((c) => !optedOut.has(c.phone) && isUserId(c.phone)).map((c) => c.id))
    const reachable = fetched.filter((c) => !optedOut.has(c.phone)).filter((c) => !userIdOnly.has(c.id))
    const closed = await closedWindowsOf(tx, windowChecked && campaign.ref === null && !wa, campaign.sender_id, reachable, clock)
    // A WhatsApp template's values per recipient: one without a value (or with one WhatsApp refuses) is skipped.
    const filled = new Map<number, ReturnType<typeof fillForContact>>()
    if (wa) for (const c of reachable) filled.set(c.id, fillForContact(wa, campaign.template_parameters ?? {}, c, provider, fill))
    const missing = new Set(reachable.filter((c) => filled.has(c.id) && 'missing' in filled.get(c.id)!).map((c) => c.id))
    const sendable = reachable.filter((c) => !closed.has(c.phone) && !missing.has(c.id))
    /** Moves the cursor to `through`, counting the recipients skipped up to it (they are not met again). */
    const moveCursor = async (through: number) => {
      const optedOutSkipped = fetched.filter((c) => optedOut.has(c.phone) && c.id <= through).length
      const closedSkipped = fetched.filter((c) => closed.has(c.phone) && c.id <= through).length
      const missingSkipped = fetched.filter((c) => missing.has(c.id) && c.id <= through).length
      const userIdOnlySkipped = fetched.filter((c) => userIdOnly.has(c.id) && c.id <= through).length
      await tx`
        update campaigns set cursor_contact_id = ${through}, opted_out = opted_out + ${optedOutSkipped},
          user_id_only = user_id_only + ${userIdOnlySkipped},
          window_closed = window_closed + ${closedSkipped}, missing_values = missing_values + ${missingSkipped}, lease_until = ${now} + make_interval(secs => ${lease.seconds})
        where id = ${campaignId}`
    }
    if (sendable.length === 0) {
      await moveCursor(fetched[fetched.length - 1]!.id)
      return { messages: [], lease, done: false }
    }

    const underCap = account.capRoom === null ? sendable.length : Math.floor(account.capRoom / account.cost)
    const affordable = Math.min(sendable.length, Math.floor(account.balance / account.cost), underCap)
    if (affordable === 0) {
      if (handingOver) return settleFirst
      // The cap first, as for the key's sends (ledger/service.ts).
      const reason =
        underCap === 0
          ? `daily spend cap reached: API key ${campaign.api_key_id} may be charged ${account.capRoom} more today ` +
            `(cap ${account.cap}), below the price ${account.cost}; resume after midnight (${tz}) or once the cap is raised`
          : `insufficient balance: wa_balance ${account.balance} is below the price ${account.cost}; top up and resume`
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null, pause_reason = ${reason}
        where id = ${campaignId}`
      return stop
    }
    // The messaging limit: the recipients that fit the sender's budget go (uses recorded with this charge).
    const limited = await takeForCampaign(
      tx,
      clock,
      { messagingLimit, timezone: tz },
      campaign.sender_id,
      sendable.slice(0, affordable).map((c) => c.phone),
    )
    if (limited.fits === 0) {
      if (handingOver) return settleFirst
      await tx`
        update campaigns set status = 'paused', lease_token = null, lease_until = null, pause_reason = ${limited.reason}
        where id = ${campaignId}`
      return stop
    }
    const batch = sendable.slice(0, limited.fits)
    const values = batch.map((c) => ({ name: c.name, phone: c.phone, email: c.email, city: c.city }))
    const waFilled = batch.map((c) => filled.get(c.id))
    const bodies = values.map((v, i) => {
      const f = waFilled[i]
      return f && !('missing' in f) ? f.body : renderTemplate(campaign.body ?? '', v)
    })
    // A missing value goes as an empty variable, as it renders empty in the text.
    const templates = values.map((v, i) => {
      const f = waFilled[i]
      if (f && !('missing' in f)) return JSON.stringify(f.providerTemplate)
      return campaign.ref === null
        ? null
        : JSON.stringify({
            provider,
            ref: campaign.ref,
            language: campaign.language,
            variables: (campaign.variables ?? []).map((name) => v[name as keyof typeof v] ?? ''),
          } satisfies StoredTemplate)
    })
    // A media header's media (the campaign's one link), kept with the message as a single send's is.
    const contents = waFilled.map((f) => (f && !('missing' in f) && f.content ? JSON.stringify(f.content) : null))
    // One message per (campaign, contact), across monthly partitions: campaign_recipients' key is
    // taken in the same statement, and a contact already there gets no second message.
    const inserted = await tx<BatchMessage[]>`
      with v as (
        select * from unnest(${batch.map((c) => c.id)}::bigint[], ${batch.map((c) => c.phone)}::text[], ${bodies}::text[],
                             ${templates as string[]}::text[], ${contents as string[]}::text[]) as v(contact_id, phone, body, provider_template, content)
      ), recipient as (
        insert into campaign_recipients (campaign_id, contact_id)
        select ${campaignId}::bigint, contact_id from v
        on conflict do nothing
        returning contact_id
      )
      insert into messages (account_id, api_key_id, campaign_id, contact_id, phone, body, template_id, provider_template, content,
                            status, cost, refund_late_failure, handoff_token, handoff_until, valid_until, sender_id, created_at, category)
      select ${campaign.account_id}, ${campaign.api_key_id}, ${campaignId}, v.contact_id, v.phone, v.body, ${campaign.template_id},
             v.provider_template::jsonb, v.content::jsonb, 'queued', ${account.cost}, ${account.refundLateFailure}, ${lease.token},
             ${now} + make_interval(secs => ${lease.seconds}), ${now} + make_interval(secs => ${validitySeconds}), ${campaign.sender_id}, ${now},
             ${account.category}
      from v join recipient using (contact_id)
      returning id, phone, body, provider_template, content`
    await chargeRecorded(
      tx,
      tz,
      { accountId: campaign.account_id, keyId: campaign.api_key_id },
      account.cost,
      inserted.map((m) => m.id),
      clock,
    )
    // The cursor passes the last contact charged, or every contact read when all the sendable ones were.
    await moveCursor(limited.fits === sendable.length ? fetched[fetched.length - 1]!.id : batch[batch.length - 1]!.id)
    return { messages: inserted, lease, done: false }
  })
}

export type ClaimedCampaign = { id: number; lease_token: string; sender_id: number | null }

/** Takes one sending campaign that nobody holds (its lease), but those in `excluding`; or null. */
export async function claimCampaign(sql: Sql, clock: Clock, excluding: number[] = []): Promise<ClaimedCampaign | null> {
  const now = nowOf(sql, clock)
  const [claimed] = await sql<ClaimedCampaign[]>`
    update campaigns set lease_token = gen_random_uuid(), lease_until = ${now} + make_interval(secs => ${LEASE_SECONDS})
    where id = (
      select id from campaigns
      where status = 'sending' and (lease_until is null or lease_until < ${now}) and id <> all(${excluding}::bigint[])
      order by id limit 1 for update skip locked
    )
    returning id, lease_token, sender_id`
  return claimed ?? null
}

/** Takes one sending campaign (lease) and sends batches until it stops or has had its turn. */
export async function sendCampaignBatches(
  deps: Pick<Deps, 'sql' | 'handoff' | 'senders' | 'config' | 'clock'>,
  options: { maxBatches?: number } = {},
): Promise<{ sent: number }> {
  const claimed = await claimCampaign(deps.sql, deps.clock)
  if (!claimed) return { sent: 0 }
  return sendClaimedCampaign(deps, claimed, options)
}

/** Sends batches of a campaign this process claimed, until it stops or has had its turn. */
export async function sendClaimedCampaign(
  deps: Pick<Deps, 'sql' | 'handoff' | 'senders' | 'config' | 'clock'>,
  claimed: ClaimedCampaign,
  options: { maxBatches?: number } = {},
): Promise<{ sent: number }> {
  let sent = 0
  const sender = await deps.senders.get(claimed.sender_id)
  const provider = sender.providerName
  // The next batch is charged once fewer than half a batch of this campaign's messages still wait for
  // their hand-off: the pace never runs dry between batches, and the few messages a throttle holds back
  // (retried until their validity, hours at worst) never hold up the rest of the campaign.
  const handingOver: Promise<unknown>[] = []
  let waiting = 0
  let oneDone: (() => void) | undefined
  let failed = 0
  let failure: unknown
  try {
    for (let i = 0; i < (options.maxBatches ?? 20); i++) {
      while (waiting > CAMPAIGN_BATCH / 2) await new Promise<void>((resolve) => (oneDone = resolve))
      const validity = deps.config.messageValiditySeconds
      const batch = await nextBatch(
        deps.sql,
        deps.clock,
        deps.config.timezone,
        provider,
        claimed.id,
        claimed.lease_token,
        deps.handoff.lease(),
        validity,
        waiting > 0,
        checksWindow(deps.config, sender),
        deps.config.messagingLimit,
        sender.provider.userIds === true,
        { uploadedLink: (id) => linkStart(deps.config.publicBaseUrl, id) },
      )
      if (batch.settleFirst) {
        await Promise.allSettled(handingOver)
        continue
      }
      const validUntilMs = deps.clock.now().getTime() + validity * 1000
      for (const m of batch.messages) {
        waiting++
        const one = deps.handoff.many(
          [{ ...outgoingOf({ ...m, media_url: null }, provider), validUntilMs, senderId: claimed.sender_id }],
          batch.lease,
        )
        handingOver.push(
          one
            // Failed on the database (the lease could not be checked, the outcome not recorded): the
            // message stays charged under its lease, and recovery hands it over once that runs out.
            // Caught here, at once: a failure nobody listens for yet would end the whole process.
            .catch((error: unknown) => {
              failed++
              failure = error
            })
            .finally(() => {
              waiting--
              oneDone?.()
            }),
        )
      }
      sent += batch.messages.length
      if (batch.done) return { sent: Math.max(sent, 1) }
    }
    // Let another campaign (or instance) have a turn: release the lease, keep the campaign sending.
    await deps.sql`update campaigns set lease_token = null, lease_until = null where id = ${claimed.id} and lease_token = ${claimed.lease_token}`
    return { sent: Math.max(sent, 1) }
  } finally {
    // The step ends when every message it charged has its outcome (or is left to recovery).
    await Promise.allSettled(handingOver)
    if (failed > 0)
      log.warn('campaign hand-offs failed; left to recovery', { campaign_id: claimed.id, messages: failed, error: errorKind(failure) })
  }
}
