import { t } from 'elysia'
import type { Deps } from '../../deps'
import { readSql } from '../../http/reads'
import { adminRoutes } from '../../http/groups'
import { ok } from '../../http/errors'
import { envelopeOf, errorsOf } from '../../http/openapi'
import * as m from './model'
import * as admin from './service'
import { createKey, getKey, listKeys, updateKey } from './keys'
import { page } from '../../http/values'
import { formatTimes } from '../../lib/time'
import { transaction } from '../../db/client'
import { audit } from '../users/service'

const tags = ['Admin']

/** What the audit log keeps of a price. */
const priceDetail = (p: Awaited<ReturnType<typeof admin.getPrice>>) => ({
  cost_per_message: p.cost_per_message,
  refund_late_failures: p.refund_late_failures,
  prices: p.own_prices,
  settle: p.settle,
})

export const accountsAdmin = (deps: Deps) => {
  const { sql } = deps
  const tz = deps.config.timezone
  return adminRoutes(deps.config)
    .post(
      '/accounts',
      async ({ body, set, actor }) => {
        const account = await transaction(sql, async (tx) => {
          const created = await admin.createAccount(tx, body, deps.clock)
          const detail = { name: created.name, balance: body.balance ?? 0, low_balance_threshold: body.low_balance_threshold ?? null }
          await audit(tx, { ...actor, accountId: created.id, action: 'account created', detail })
          return created
        })
        set.status = 201
        return ok(formatTimes(account, tz))
      },
      {
        body: m.CreateAccountBody,
        response: { 201: envelopeOf(m.Account), ...errorsOf(400, 401, 422) },
        detail: { tags, summary: 'Create an account' },
      },
    )
    .get(
      '/accounts',
      async ({ query, request }) => ok(formatTimes(await admin.listAccounts(await readSql(deps, request), page(query)), tz)),
      {
        query: m.PageQuery,
        response: { 200: envelopeOf(m.listOf(m.Account)), ...errorsOf(400, 401, 422) },
        detail: { tags, summary: 'List accounts, newest first' },
      },
    )
    .get('/accounts/:id', async ({ params }) => ok(formatTimes(await admin.getAccount(sql, params.id), tz)), {
      params: m.IdParams,
      response: { 200: envelopeOf(m.Account), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One account with its balance and price' },
    })
    .patch(
      '/accounts/:id',
      async ({ params, body, actor }) => {
        const previous = (await admin.getAccount(sql, params.id)).low_balance_threshold
        const account = await admin.updateAccount(sql, params.id, body)
        const detail = { low_balance_threshold: body.low_balance_threshold, previous }
        await audit(sql, { ...actor, accountId: params.id, action: 'low-balance threshold set', detail })
        return ok(formatTimes(account, tz))
      },
      {
        params: m.IdParams,
        body: m.UpdateAccountBody,
        response: { 200: envelopeOf(m.Account), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "Change an account's low-balance threshold",
          description:
            '`low_balance_threshold`: a positive integer, or null for no alert. Setting it sends nothing for a balance already ' +
            'below it; the next charge that crosses it does (`balance.low`, to the registrations that chose it).',
        },
      },
    )
    .post(
      '/accounts/:id/keys',
      async ({ params, body, set, actor }) => {
        const key = await transaction(sql, async (tx) => {
          const created = await createKey(tx, tz, params.id, body)
          await audit(tx, { ...actor, accountId: params.id, action: 'key created', detail: { key_id: created.id, label: created.label } })
          return created
        })
        set.status = 201
        return ok(key)
      },
      {
        params: m.IdParams,
        body: m.CreateKeyBody,
        response: { 201: envelopeOf(m.CreatedApiKey), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Create an API key (the key is shown only in this answer)' },
      },
    )
    .get('/accounts/:id/keys', async ({ params }) => ok(await listKeys(sql, deps.clock, tz, params.id)), {
      params: m.IdParams,
      response: { 200: envelopeOf(m.listOf(m.ApiKey)), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: "An account's keys, without secrets" },
    })
    .get('/keys/:id', async ({ params }) => ok(await getKey(sql, deps.clock, tz, params.id)), {
      params: m.IdParams,
      response: { 200: envelopeOf(m.ApiKey), ...errorsOf(400, 401, 404) },
      detail: { tags, summary: 'One key, without its secret: its state, its limits and what it was charged today' },
    })
    .patch(
      '/keys/:id',
      async ({ params, body, actor }) => {
        const key = await updateKey(sql, deps.clock, tz, params.id, body)
        await audit(sql, { ...actor, accountId: key.account_id, action: 'key changed', detail: { key_id: key.id, ...body } })
        return ok(key)
      },
      {
        params: m.IdParams,
        body: m.PatchKeyBody,
        response: { 200: envelopeOf(m.ApiKey), ...errorsOf(400, 401, 404, 422) },
        detail: {
          tags,
          summary: "Activate or deactivate a key, or set its limits (each takes effect on the key's next request)",
          description:
            '`active`: false refuses the key from its next request. `rate_limit_per_minute`: the requests per minute the key may ' +
            "make across every instance (null: the service's default); beyond it the API answers 429 `RATE_LIMITED`. " +
            '`daily_spend_cap`: the most the key may be charged per day in the service time zone (null: no cap); a send or a bulk that ' +
            'would pass it is refused with 402 `SPEND_CAP_REACHED`, nothing charged, and a campaign created with the key pauses there. ' +
            'A new cap counts what the key was charged earlier that day (`spent_today`); refunds do not give room back.',
        },
      },
    )
    .post(
      '/accounts/:id/topups',
      async ({ params, body, set, actor }) => {
        const note = body.note ?? null
        const balance = await transaction(sql, async (tx) => {
          const after = await admin.changeBalance(tx, params.id, 'topup', body.amount, note)
          await audit(tx, { ...actor, accountId: params.id, action: 'top-up', detail: { amount: body.amount, note } })
          return after
        })
        set.status = 201
        return ok(balance)
      },
      {
        params: m.IdParams,
        body: m.TopupBody,
        response: { 201: envelopeOf(m.BalanceAfter), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Top up a balance' },
      },
    )
    .post(
      '/accounts/:id/adjustments',
      async ({ params, body, set, actor }) => {
        const balance = await transaction(sql, async (tx) => {
          const after = await admin.changeBalance(tx, params.id, 'adjustment', body.amount, body.note)
          await audit(tx, { ...actor, accountId: params.id, action: 'adjustment', detail: { amount: body.amount, note: body.note } })
          return after
        })
        set.status = 201
        return ok(balance)
      },
      {
        params: m.IdParams,
        body: m.AdjustmentBody,
        response: { 201: envelopeOf(m.BalanceAfter), ...errorsOf(400, 401, 404, 422) },
        detail: { tags, summary: 'Correct a balance by a signed amount (never below 0)' },
      },
    )
    .put(
      '/price',
      async ({ body, actor }) => {
        const accountId = body.account_id ?? null
        const previous = await admin.getPrice(sql, accountId)
        const price = await admin.setPrice(sql, body)
        await audit(sql, {
          ...actor,
          accountId,
          action: accountId === null ? 'price set' : 'account price set',
          detail: { ...priceDetail(price), previous: priceDetail(previous) },
        })
        return ok(price)
      },
      {
        body: m.PriceBody,
        response: {
          200: envelopeOf(m.Price),
          ...errorsOf(400, 401, 404, 422),
        },
        detail: {
          tags,
          summary: "Set the global price, or one account's override (account_id)",
          description:
            'The price per message and, optionally, `refund_late_failures`: whether messages the provider accepted and later ' +
            'reported `failed` are refunded (the default) or stay charged. Both are fixed on each message when it is charged. ' +
            '`prices` (extension) gives the WhatsApp categories (`marketing`, `utility`, `authentication`, `service`) prices of their ' +
            "own (null removes one); a category without one costs `cost_per_message`, and an account's own price is whole (its " +
            "categories never fall back to the global price's). `settle`: whether Meta's pricing report settles a message to the " +
            'category Meta reports (`provider`, the default) or keeps the charge (`keep`). Each change is kept (GET /price/history).',
        },
      },
    )
    .get('/price/history', async ({ query }) => ok(formatTimes(await admin.getPriceHistory(sql, query.account_id ?? null), tz)), {
      query: m.PriceQuery,
      response: {
        200: envelopeOf(t.Array(m.PriceChange)),
        ...errorsOf(400, 401, 404),
      },
      detail: { tags, summary: "The history of the global price, or of one account's own price (account_id), newest first (50)" },
    })
    .get('/price', async ({ query }) => ok(await admin.getPrice(sql, query.account_id ?? null)), {
      query: m.PriceQuery,
      response: {
        200: envelopeOf(m.Price),
        ...errorsOf(400, 401, 404),
      },
      detail: { tags, summary: 'The price in force (globally, or for one account)' },
    })
    .delete(
      '/price/accounts/:id',
      async ({ params, actor }) => {
        const previous = await admin.getPrice(sql, params.id)
        const price = await admin.clearPriceOverride(sql, params.id)
        await audit(sql, {
          ...actor,
          accountId: params.id,
          action: 'account price cleared',
          detail: { ...priceDetail(price), previous: priceDetail(previous) },
        })
        return ok(price)
      },
      {
        params: m.IdParams,
        response: {
          200: envelopeOf(m.Price),
          ...errorsOf(400, 401, 404),
        },
        detail: { tags, summary: "Remove an account's price override" },
      },
    )
}
