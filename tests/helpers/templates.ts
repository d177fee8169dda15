// Approved templates through the public interfaces: an account with contacts, a template bound through
// the admin API, and a campaign of it run to the end by the campaign worker. And the setup the WhatsApp
// template tests (tests/templates/*) share: the fake Twilio and Graph API with the senders' accounts,
// the app on them, stopped after the file; and a provider whose first hand-off hangs until released.

import { afterAll, afterEach, expect } from 'bun:test'
import { testApp, type TestApp } from './app'
import { fakeGraph, type FakeGraph } from './fake-graph'
import { fakeTwilio, type FakeTwilio } from './fake-twilio'
import { META_A, registerFakes, sendersEnv } from './senders'
import type { HandoffResult, OutgoingMessage } from '../../src/providers/provider'

/** Meta A's WhatsApp Business Account (its phone number belongs to it in the fake). */
export const WABA_A = META_A.credentials.business_account_id

/**
 * The fakes of a templates test file: Twilio and the Graph API with the senders' accounts (Meta A's
 * number in its business account), both reset after each test (`reset`: which) and stopped, with the
 * app `start` made on them, after the file.
 */
export function templateFakes(o: { graph?: Parameters<typeof fakeGraph>[0]; reset?: 'both' | 'twilio' } = {}) {
  const twilio: FakeTwilio = fakeTwilio()
  const graph: FakeGraph = fakeGraph(o.graph)
  registerFakes(twilio, graph)
  graph.accountOf.set(META_A.credentials.phone_number_id, WABA_A)
  let app: TestApp | undefined
  afterAll(async () => {
    await app?.close()
    twilio.stop()
    graph.stop()
  })
  afterEach(() => {
    twilio.reset()
    if (o.reset !== 'twilio') graph.reset()
  })
  return {
    twilio,
    graph,
    /** The app on the fakes (the deployment's default sender is Twilio's), `env` added to the senders' settings. */
    async start(options: Omit<Parameters<typeof testApp>[0] & {}, 'env'> & { env?: Record<string, string> } = {}): Promise<TestApp> {
      app = await testApp({ ...options, env: sendersEnv(twilio, graph, options.env) })
      return app
    },
  }
}

/**
 * A provider named like Meta whose first hand-off hangs until `release()`: what it was handed is in
 * `seen`, `first` resolves when the first hand-off is in. The others answer at once, accepted.
 */
export function hangingProvider() {
  const seen: OutgoingMessage[] = []
  let release!: () => void
  const hanging = new Promise<void>((resolve) => (release = resolve))
  const first = Promise.withResolvers<void>()
  const provider = {
    name: 'meta',
    async send(message: OutgoingMessage): Promise<HandoffResult> {
      seen.push(message)
      if (seen.length === 1) {
        first.resolve()
        await hanging
      }
      return { ok: true, sid: `wamid.${crypto.randomUUID().replaceAll('-', '')}` }
    },
  }
  return { provider, seen, first: first.promise, release }
}

export type BindingInput = { ref: string; language?: string; variables?: string[] }
export type ContactInput = { name: string; phone: string; city?: string }

/** An account (balance 10,000 at price 10) with `contacts` tagged "vip" and a template with its bindings. */
export async function boundTemplate(t: TestApp, body: string, bindings: Record<string, BindingInput>, contacts: ContactInput[] = []) {
  const account = await t.account(10_000, { price: 10 })
  for (const c of contacts) {
    const made = await t.api('POST', '/contacts', account.key, { ...c, tags: 'vip' })
    expect(made.status).toBe(201)
  }
  const template = await t.admin('POST', `/accounts/${account.accountId}/templates`, { name: 'approved', body })
  expect(template.status).toBe(201)
  const templateId: number = template.body.data.id
  for (const [provider, binding] of Object.entries(bindings)) {
    const bound = await t.admin('PUT', `/templates/${templateId}/bindings/${provider}`, binding)
    expect([bound.status, bound.body.data?.provider]).toEqual([200, provider])
  }
  return { ...account, templateId }
}

/** Runs a campaign of the template to every contact of the account (the worker's steps, no loops needed). */
export async function runCampaign(t: TestApp, a: { accountId: number; key: string; templateId: number }): Promise<number> {
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
  const draft = await t.api('POST', '/campaigns', a.key, { name: 'approved', template_id: a.templateId, segment_id: segment.body.data.id })
  expect(draft.status).toBe(201)
  const id: number = draft.body.data.campaign.id
  expect((await t.admin('POST', `/campaigns/${id}/run`)).status).toBe(200)
  await t.runWorker('campaign-runner')
  const detail = await t.admin('GET', `/campaigns/${id}`)
  expect(detail.body.data.campaign.status).toBe('sent')
  return id
}

/** The campaign's messages as stored, by phone. */
export async function campaignMessages(t: TestApp, campaignId: number) {
  return t.db.sql<
    { phone: string; status: string; body: string; template_id: number | null; provider_template: unknown; refunded_at: Date | null }[]
  >`select phone, status, body, template_id, provider_template, refunded_at from messages where campaign_id = ${campaignId} order by phone`
}
