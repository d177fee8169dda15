// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The operator's Reconciliation page (issue 31 §2) in headless Chromium, at a desktop's width and a
// phone's: a Meta sender (the fake Graph API) hands over an account's messages; the operator opens the
// page from the navigation, chooses the sender and the month, and reads the ledger's rows beside Meta's
// analytics. Meta counting one message in another category shows as differences in words. The page, empty
// and with its report, passes axe-core and fits a phone's width.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'
import { fakeTwilio, type FakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { META_A, registerFakes, sendersEnv } from '../helpers/senders'

describe.skipIf(skipBrowserTests())('reconciliation in Chromium', () => {
  let twilio: FakeTwilio
  let graph: FakeGraph
  const web = dashboardInChromium('dashboard-reconciliation-', (cleanup) => {
    twilio = fakeTwilio()
    graph = fakeGraph()
    registerFakes(twilio, graph)
    graph.accountOf.set(META_A.credentials.phone_number_id, META_A.credentials.business_account_id)
    cleanup(() => twilio.stop())
    cleanup(() => graph.stop())
    return sendersEnv(twilio, graph, { WINDOW_CHECK: 'off' })
  })
  const { admin, bothWidths, signIn } = web

  test("an operator reads a Meta sender's month beside Meta's analytics, its differences in words", async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Warung Rekonsiliasi', balance: 100_000 })
    await admin('PUT', '/price', { account_id: account.id, cost_per_message: 50, prices: { marketing: 300 } })
    const sender = await admin('POST', '/senders', { provider: 'meta', name: 'Warung A', ...META_A, recipient_gap_ms: 0 })
    await admin('PUT', `/accounts/${account.id}/senders/${sender.id}`, { default: true })
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'shop' })).key
    for (const i of [1, 2, 3]) {
      const sent = await fetch(`${base}/api/v1/messages/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: `08123456780${i}`, body: `Pesanan ${i} sedang diproses.` }),
      })
      expect(sent.status).toBe(200)
    }
    // Meta priced one of them as marketing (the service charged it as a service message and was never told).
    graph.delivered[0]!.category = 'MARKETING'
    graph.delivered[0]!.type = 'REGULAR'
    const month = new Date().toISOString().slice(0, 7)
    const op = await signIn((await admin('POST', '/operators', { email: 'reconcile-ops@example.com' })).link, '/dashboard/accounts')

    await step(op, 'the page from the navigation: a sender to choose, the month filled in', async () => {
      await op.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Reconciliation' }).click()
      await op.waitForURL(`${base}/dashboard/reconciliation`)
      expect(await op.getByLabel('Month').inputValue()).toMatch(/^\d{4}-\d{2}$/)
      await bothWidths(op, 'reconciliation-empty')
    })

    await step(op, 'the report: rows by day and category, the differences in words', async () => {
      await op.getByLabel('Sender').selectOption(String(sender.id))
      await op.getByLabel('Month').fill(month)
      await op.getByRole('button', { name: 'Reconcile' }).click()
      await op.waitForURL(/\/dashboard\/reconciliation\?/)
      // The report names its sender as the select does (not by its id).
      expect(await op.getByRole('heading', { level: 2 }).first().innerText()).toBe(`${month} · Warung A (${META_A.number})`)
      const table = op.getByRole('table')
      expect(await table.getByRole('row').count()).toBeGreaterThanOrEqual(3)
      expect(await table.getByText('differs: Meta +1').count()).toBe(1)
      expect(await table.getByText('differs: Meta -1').count()).toBe(1)
      expect(await op.getByText('2 differences (listed below).').isVisible()).toBe(true)
      await bothWidths(op, 'reconciliation-report')
    })
  })
})
