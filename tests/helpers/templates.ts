// Approved templates through the public interfaces: an account with contacts, a template bound through
// the admin API, and a campaign of it run to the end by the campaign worker.

import { expect } from 'bun:test'
import type { TestApp } from './app'

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
