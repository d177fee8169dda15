// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// Events in headless Chromium (see browser.outer.test.ts for the set-up), at a desktop's width and a
// phone's: an operator sets an account's low-balance threshold (a refused value keeps the focus at its
// field), its member sees it on the overview and chooses a key's events with the keyboard on the
// webhook page. The pages in these states pass axe-core.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())('events in Chromium', () => {
  const web = dashboardInChromium('dashboard-events-')
  const { admin, status, submitted, bothWidths, signIn } = web

  test("an operator sets the low-balance threshold; the member sees it and chooses a key's events with the keyboard", async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Alarm', balance: 50_000 })
    const key = await admin('POST', `/accounts/${account.id}/keys`, { label: 'ERP' })
    const memberLink = (await admin('POST', `/accounts/${account.id}/members`, { email: 'alarm@example.com' })).link
    const op = await signIn((await admin('POST', '/operators', { email: 'events-ops@example.com' })).link, '/dashboard/accounts')
    const threshold = 'Alert when the balance falls below (IDR; empty: no alert)'

    await step(op, 'a refused threshold keeps the focus at its field; a good one is saved', async () => {
      await op.goto(`${base}/dashboard/accounts/${account.id}`)
      await op.getByLabel(threshold).fill('nol')
      await submitted(op, () => op.getByRole('button', { name: 'Save alert' }).click())
      expect(await op.evaluate('document.activeElement.id')).toBe('low-balance-low_balance_threshold')
      expect(await op.getByLabel(threshold).getAttribute('aria-invalid')).toBe('true')
      await bothWidths(op, 'low-balance-error')
      await op.getByLabel(threshold).fill('10,000')
      await submitted(op, () => op.getByRole('button', { name: 'Save alert' }).click())
      expect(await status(op)).toBe('balance.low is sent when the balance falls below 10,000 IDR.')
      expect(await op.getByLabel(threshold).inputValue()).toBe('10,000')
      expect((await admin('GET', `/accounts/${account.id}`)).low_balance_threshold).toBe(10_000)
      await bothWidths(op, 'low-balance-set')
    })

    const member = await signIn(memberLink, '/dashboard')
    await step(member, 'the overview names the threshold', async () => {
      expect(await member.locator('#low-balance').innerText()).toContain('Low-balance alert: below 10,000 IDR')
      await bothWidths(member, 'overview-low-balance')
    })

    await step(member, 'events chosen with the keyboard on the webhook page', async () => {
      await member.goto(`${base}/dashboard/webhook`)
      await member.getByLabel('URL', { exact: true }).fill('https://93.184.216.34/hooks')
      expect(await member.getByRole('checkbox', { name: /^message\.status/ }).isChecked()).toBe(true)
      await member.getByRole('checkbox', { name: /^message\.received/ }).focus()
      await member.keyboard.press('Space')
      await member.getByRole('checkbox', { name: /^balance\.low/ }).focus()
      await member.keyboard.press('Space')
      await member.getByRole('checkbox', { name: /^message\.status/ }).focus()
      await member.keyboard.press('Space')
      await bothWidths(member, 'webhook-events-form')
      await member.getByRole('button', { name: 'Register URL' }).focus()
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(await status(member)).toBe(
        'A URL for key ERP is now https://93.184.216.34/hooks: its events go there. Events: message.received, balance.low.',
      )
      expect(await member.getByRole('checkbox', { name: /^message\.received/ }).isChecked()).toBe(true)
      expect(await member.getByRole('checkbox', { name: /^message\.status/ }).isChecked()).toBe(false)
      expect(key.id).toBeGreaterThan(0)
      await bothWidths(member, 'webhook-events-saved')
    })
  }, 120_000)
})
