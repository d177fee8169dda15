// Outer ring (real time): a TCP proxy holds one statement of a transaction while a real concurrent one runs.
// An opt-out and what races it. setOptOut locks the account's row (FOR NO KEY UPDATE, as a charge's
// balance update does), so opt-outs of one account, and an opt-out and a charge, never overlap:
// - two opt-outs of one phone at once make one change: the second waits, then finds the phone opted
//   out (200). Without the lock both find it not opted out, and the later to record it fails (500);
// - a campaign batch reads opt-outs under the account's lock, so an opt-out is answered either after
//   the batch's charge or before the batch reads it, never while a charge that missed it is still to
//   commit. (Today the batch's FOR UPDATE also holds up the opt-out's foreign-key checks, so this one
//   holds by either lock: the mutant optout-account-lock-campaign weakens both.)
// On PostgreSQL the interleaving is made, not hoped for: a second instance reaches the database through
// a proxy that holds one statement of its transaction (tests/helpers/pg-proxy.ts) while the other side
// comes; PostgreSQL only, as the embedded database has one connection, which the proxy cannot share.
// There it runs one transaction at a time: the same races, started together, show that its single
// session keeps the same promises.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { usingPostgres } from '../helpers/db'
import { poolThroughProxy, startPgProxy } from '../helpers/pg-proxy'
import { until } from '../helpers/wait'
import { buildDeps } from '../../src/server'
import { createApp } from '../../src/app'
import { campaignRunner } from '../../src/workers/campaign-runner'

let t: TestApp
const cleanups: (() => Promise<void> | void)[] = []
beforeAll(async () => {
  t = await testApp()
}, 60_000)
afterAll(async () => {
  for (const c of cleanups.reverse()) await c()
  await t.close()
}, 30_000)

let phones = 0
/** An account with a campaign started to one new contact: its key, the campaign and the phone. */
async function campaignToOne() {
  const acct = await t.account(1000)
  const phone = `+628137${String(++phones).padStart(6, '0')}`
  expect((await t.api('POST', '/contacts', acct.key, { name: 'Budi', phone, tags: 'vip' })).status).toBe(201)
  const template = await t.admin('POST', `/accounts/${acct.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
  const segment = await t.admin('POST', `/accounts/${acct.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', acct.key, {
    name: 'Promo',
    template_id: template.body.data.id,
    segment_id: segment.body.data.id,
  })
  const campaignId = draft.body.data.campaign.id as number
  expect((await t.admin('POST', `/campaigns/${campaignId}/run`)).body.data.campaign.status).toBe('sending')
  return { key: acct.key, campaignId, phone }
}

/** Messages charged to `phone` (any account). */
async function chargedTo(phone: string): Promise<number> {
  const [row] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where phone = ${phone}`
  return row!.n
}

/** Sessions of this test's database waiting for a row lock (PostgreSQL). */
async function waitingForALock(): Promise<boolean> {
  const [row] = await t.db.sql<{ n: number }[]>`
    select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`
  return row!.n > 0
}

/** A second instance whose database connections go through a proxy holding the first statement with `marker` until `resume`. */
async function instanceHolding(marker: string, resume: Promise<void>) {
  const { proxy, database } = await poolThroughProxy(t.db.url!, (target) => startPgProxy(target, marker, { hold: resume }), cleanups)
  const { deps } = buildDeps(t.config, database)
  cleanups.push(async () => {
    deps.handoff.stop()
    await deps.reads.close()
  })
  const app = createApp(deps)
  const api = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await app.handle(
      new Request(`http://localhost/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return { status: response.status, body: (await response.json()) as any }
  }
  return { proxy, deps, api }
}

/** An opt-out through the API; once answered, how many messages were charged to the phone at that moment. */
function optOut(key: string, phone: string) {
  let answered: { status: number; chargedThen: number } | null = null
  const done = t.api('POST', '/opt-outs', key, { phone }).then(async (r) => {
    answered = { status: r.status, chargedThen: await chargedTo(phone) }
    return answered
  })
  return { done, answered: () => answered }
}

test.skipIf(!usingPostgres())(
  'an opt-out while a campaign batch to its phone is being charged is answered after the charge, never before it',
  async () => {
    const { key, phone } = await campaignToOne()
    const resume = Promise.withResolvers<void>()
    // The campaign's batch, on the second instance: held after it locked the account and read the
    // opt-outs (none), before it records and charges the message.
    const runner = await instanceHolding('insert into campaign_recipients', resume.promise)
    const run = 'runOnce' in campaignRunner ? campaignRunner.runOnce(runner.deps) : Promise.reject(new Error('no step'))
    await until(runner.proxy.held, Boolean, 10_000, "the campaign's batch, held before its charge")

    const stop = optOut(key, phone)
    await until(
      async () => stop.answered() !== null || (await waitingForALock()),
      Boolean,
      10_000,
      'the opt-out answered, or waiting for the account',
    )
    resume.resolve()
    const answered = await stop.done
    expect(await run).toBe(1)
    // Answered before the batch committed, the opt-out would have been confirmed while a message to
    // the phone was still to be charged (and then handed over): a charge after the STOP.
    expect({ ...answered, chargedNow: await chargedTo(phone) }).toEqual({ status: 201, chargedThen: 1, chargedNow: 1 })
  },
  60_000,
)

test.skipIf(!usingPostgres())(
  'two opt-outs of one phone at once: one opts it out (201), the other finds it opted out (200); one change recorded',
  async () => {
    const acct = await t.account(0)
    const phone = '+6281370099001'
    const resume = Promise.withResolvers<void>()
    // The first opt-out, on the second instance: its check found the phone not opted out and its event
    // is written; held before the opt-out's own row.
    const first = await instanceHolding('insert into opt_outs (account_id, phone, event_id)', resume.promise)
    const held = first.api('POST', '/opt-outs', acct.key, { phone })
    await until(first.proxy.held, Boolean, 10_000, 'the first opt-out, held before its row')

    const second = optOut(acct.key, phone)
    await until(
      async () => second.answered() !== null || (await waitingForALock()),
      Boolean,
      10_000,
      'the second opt-out answered, or waiting for the account',
    )
    resume.resolve()
    const answers = [(await held).status, (await second.done).status]
    expect(answers).toEqual([201, 200])
    const [events] = await t.db.sql<{ n: number }[]>`
      select count(*)::int as n from opt_out_events where account_id = ${acct.accountId} and phone = ${phone}`
    expect(events!.n).toBe(1)
  },
  60_000,
)

test('a campaign batch and two opt-outs of its phone started together: each opt-out is answered after any charge to it', async () => {
  const { key, campaignId, phone } = await campaignToOne()
  const run = t.runWorker('campaign-runner')
  const stops = [optOut(key, phone), optOut(key, phone)]
  await run
  const answers = await Promise.all(stops.map((s) => s.done))
  const chargedNow = await chargedTo(phone)
  expect(answers.map((a) => a.status).sort()).toEqual([200, 201])
  for (const a of answers) expect({ chargedThen: a.chargedThen, chargedNow }).toEqual({ chargedThen: chargedNow, chargedNow })
  // The recipient was either charged before both answers, or skipped as opted out.
  const stats = (await t.api('GET', `/campaigns/${campaignId}`, key)).body.data.stats
  expect(chargedNow + stats.opted_out).toBe(1)
}, 60_000)
