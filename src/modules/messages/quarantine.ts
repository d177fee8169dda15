// Messages in quarantine: charged, handed over MAX_RECOVERIES times by recovery, and still without a
// recorded outcome (the database kept refusing the write). They are not handed over again. An
// operator checks them with the provider, then settles each: `sent` (the provider has it: the
// message keeps its charge) or `refund` (it never went out: failed and refunded, once).

import { Elysia, t } from 'elysia'
import type { Deps } from '../../deps'
import type { Sql } from '../../db/client'
import { adminAuth } from '../../http/admin-auth'
import { ApiError, badValue, ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { formatTimestamp } from '../../lib/time'
import { page, pageOf, type Page } from '../../lib/validate'
import { refundFailed } from '../ledger/service'
import * as m from '../accounts/model'

const QuarantinedMessage = t.Object({
  id: t.Integer(),
  account_id: t.Integer(),
  phone: t.String(),
  body: t.String(),
  cost: t.Integer(),
  handoff_recoveries: t.Integer({ description: 'How many times recovery handed it over' }),
  created_at: t.String(),
  quarantined_at: t.String(),
})

type Row = {
  id: number
  account_id: number
  phone: string
  body: string
  cost: number
  handoff_recoveries: number
  created_at: Date
  quarantined_at: Date
}

async function listQuarantine(sql: Sql, tz: string, p: Page) {
  const rows = await sql<Row[]>`
    select id, account_id, phone, body, cost, handoff_recoveries, created_at, quarantined_at from messages
    where quarantined_at is not null and status = 'queued'
    order by quarantined_at desc, id desc limit ${p.limit} offset ${p.offset}`
  const [count] = await sql<{ n: number }[]>`select count(*)::int as n from messages where quarantined_at is not null and status = 'queued'`
  return pageOf(
    rows.map((r) => ({ ...r, created_at: formatTimestamp(r.created_at, tz)!, quarantined_at: formatTimestamp(r.quarantined_at, tz)! })),
    count!.n,
    p,
  )
}

async function settle(sql: Sql, id: number, outcome: string) {
  if (outcome !== 'sent' && outcome !== 'refund') throw badValue('outcome: must be sent or refund')
  const [row] = await sql<{ id: number }[]>`select id from messages where id = ${id} and quarantined_at is not null and status = 'queued'`
  if (!row) throw new ApiError('NOT_FOUND', `no quarantined message ${id}`)
  if (outcome === 'refund') {
    await refundFailed(sql, [{ id, errorCode: null, errorMessage: 'refunded by an operator after quarantine' }])
  } else {
    // No SID is known: the provider's own records have it. Status reports for it cannot be matched.
    await sql`update messages set status = 'sent', sent_at = now() where id = ${id} and status = 'queued'`
  }
  return { id, outcome }
}

export const quarantineRoutes = (deps: Deps) =>
  new Elysia({ prefix: '/admin/v1' })
    .use(adminAuth(deps.config))
    .get('/quarantine', async ({ query }) => ok(await listQuarantine(deps.sql, deps.config.timezone, page(query))), {
      query: m.PageQuery,
      response: { 200: envelopeOf(m.listOf(QuarantinedMessage)), ...errorsOf(400, 401, 422) },
      detail: {
        tags: ['Admin'],
        summary: 'Messages in quarantine',
        description:
          'Charged messages whose hand-off outcome could not be recorded after several recoveries; they are not handed over again until settled.',
      },
    })
    .post('/quarantine/:id/settle', async ({ params, body }) => ok(await settle(deps.sql, params.id, body.outcome)), {
      params: m.IdParams,
      body: t.Object({ outcome: t.String({ description: '`sent` or `refund`' }) }),
      response: { 200: envelopeOf(t.Object({ id: t.Integer(), outcome: t.String() })), ...errorsOf(400, 401, 404, 422) },
      detail: {
        tags: ['Admin'],
        summary: 'Settle a quarantined message',
        description: '`sent`: the provider has it, the charge stays. `refund`: it never went out, it is marked failed and refunded.',
      },
    })
