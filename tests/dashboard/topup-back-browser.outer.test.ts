// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The browser's Back button after a money form (issue 33): an operator tops up an account, goes Back
// to the page, which Chromium asks for again (no-store) and fills with the amount typed before, and
// sends it again. The top-up is booked once: the page kept the token it was first shown with
// (assets/form-token.js), and the second sending is refused with a message linking the ledger. A page
// opened afresh books the next top-up. The refusal passes axe-core at both widths.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())('the Back button after a top-up, in Chromium', () => {
  const web = dashboardInChromium('dashboard-topup-back-')

  test('top-up, Back, the same form sent again: one ledger row; a fresh page books the next', async () => {
    const account = await web.admin('POST', '/accounts', { name: 'Toko Kembali' })
    const made = await web.admin('POST', '/operators', { email: 'back-ops@example.com' })
    const page = await web.signIn(made.link, '/dashboard/accounts')
    const accountUrl = `${web.url}/dashboard/accounts/${account.id}`
    const topups = async () => ((await web.admin('GET', `/accounts/${account.id}/ledger`)).items as { kind: string }[]).length
    await page.goto(accountUrl)

    await step(page, 'the top-up is booked', async () => {
      await page.getByLabel('Amount (IDR)').fill('25.000')
      await web.submitted(page, () => page.getByRole('button', { name: 'Top up' }).click())
      expect(await web.status(page)).toBe('Top-up of 25,000 IDR booked; balance 25,000 IDR.')
    })

    await step(page, 'Back shows the form as it was filled in; sent again, it is refused and says where to look', async () => {
      await page.goBack()
      await page.waitForURL(accountUrl)
      expect(await page.getByLabel('Amount (IDR)').inputValue()).toBe('25.000')
      await web.submitted(page, () => page.getByRole('button', { name: 'Top up' }).click())
      expect(await page.getByRole('alert').first().innerText()).toContain('This top-up was already booked when its form was first sent')
      expect(await topups()).toBe(1)
      await web.bothWidths(page, 'topup-sent-again')
      await page.getByRole('link', { name: "See it in this account's ledger." }).click()
      await page.waitForURL(`${accountUrl}/ledger`)
    })

    await step(page, 'the account page opened afresh books the next top-up', async () => {
      await page.goto(accountUrl)
      await page.getByLabel('Amount (IDR)').fill('5.000')
      await web.submitted(page, () => page.getByRole('button', { name: 'Top up' }).click())
      expect(await web.status(page)).toBe('Top-up of 5,000 IDR booked; balance 30,000 IDR.')
      expect(await topups()).toBe(2)
    })
  }, 120_000)
})
