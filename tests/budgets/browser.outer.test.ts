// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The messaging limit in headless Chromium, at a desktop's width and a phone's: a sender with tier 250
// that sent to 17 new recipients shows "17 / 250" with when the oldest frees on the senders list and
// its page; the operator moves it to the 2,000 tier with the keyboard-usable select. The pages pass
// axe-core and fit a phone's width; screenshots are written to DASHBOARD_SCREENSHOTS (or a temp dir).

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())('messaging limit in Chromium', () => {
  const web = dashboardInChromium('dashboard-limit-')
  const { admin, bothWidths, signIn, status, submitted } = web
  /** An /api/v1 call with an account's key: its envelope's `data`. */
  const api = (path: string, key: string, body: unknown) =>
    fetch(`${web.url}/api/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ((await r.json()) as any).data)

  test("the senders list and page show the budget's use; the tier is set from the page", async () => {
    const sender = await admin('POST', '/senders', {
      provider: 'simulator',
      name: 'Toko Limit',
      number: '+6281100006001',
      messaging_limit: 250,
    })
    const account = await admin('POST', '/accounts', { name: 'Toko Limit', balance: 10_000 })
    await admin('PUT', `/accounts/${account.id}/senders/${sender.id}`)
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'crm' })).key
    const sent = await api('/messages/bulk', key, {
      messages: Array.from({ length: 17 }, (_, i) => ({ to: `+62818${String(i).padStart(8, '0')}`, body: 'Promo' })),
    })
    expect(sent.sent).toBe(17)

    const op = await signIn((await admin('POST', '/operators', { email: 'limit-ops@example.com' })).link, '/dashboard/accounts')

    await step(op, 'the senders list: 17 / 250 with when the oldest frees', async () => {
      await op.goto(`${web.url}/dashboard/senders`)
      const cell = op.locator('tbody td[data-label="Messaging limit"]').first()
      expect((await cell.innerText()).replace(/\s+/g, ' ')).toMatch(
        /^17 \/ 250 recipients in 24 h, oldest frees \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
      )
      await bothWidths(op, 'limit-senders-list')
    })

    await step(op, 'the sender page: the use, and the tier moved to 2,000', async () => {
      await op.goto(`${web.url}/dashboard/senders/${sender.id}`)
      expect((await op.locator('#sender-budget').innerText()).replace(/\s+/g, ' ')).toContain('17 / 250 recipients in 24 h')
      await bothWidths(op, 'limit-sender')
      await op.getByRole('combobox', { name: /^Messaging limit/ }).selectOption('2000')
      await submitted(op, () => op.getByRole('button', { name: 'Save sender' }).click())
      expect(await status(op)).toContain('its messaging limit (2,000)')
      expect((await op.locator('#sender-budget').innerText()).replace(/\s+/g, ' ')).toContain('17 / 2,000 recipients in 24 h')
      await bothWidths(op, 'limit-sender-saved')
    })
  }, 120_000)
})
