// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The browser's Back button after a money form (issue 33): an operator tops up an account and goes Back
// to the page, which Chromium asks for again (no-store). It refills the page's forms as they were typed,
// but not the amount (autocomplete off), so one click cannot send the same top-up again, with scripts off
// too. With scripts on, the page keeps the token it was first shown with (assets/form-token.js): the
// amount typed again and sent is refused with a message linking the ledger. A page opened afresh books the
// next top-up. The refusal passes axe-core at both widths.

import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
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

    await step(page, 'Back shows the form without its amount; typed again and sent, it is refused and says where to look', async () => {
      await page.goBack()
      await page.waitForURL(accountUrl)
      expect(await page.getByLabel('Amount (IDR)').inputValue()).toBe('')
      await page.getByLabel('Amount (IDR)').fill('25.000')
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

  test('with scripts off: Back shows the form without its amount, which the browser will not send empty; a new amount is a new top-up', async () => {
    const account = await web.admin('POST', '/accounts', { name: 'Toko Tanpa Skrip' })
    const made = await web.admin('POST', '/operators', { email: 'noscript-ops@example.com' })
    const page = await web.signIn(made.link, '/dashboard/accounts', { javaScript: false })
    const accountUrl = `${web.url}/dashboard/accounts/${account.id}`
    // web.submitted waits for a frame with a script; here the page's load is enough.
    const sent = async (p: Page) => {
      const loaded = p.waitForEvent('load')
      await p.getByRole('button', { name: 'Top up' }).click()
      await loaded
    }
    const topups = async () => ((await web.admin('GET', `/accounts/${account.id}/ledger`)).items as { kind: string }[]).length
    await page.goto(accountUrl)

    await step(page, 'the top-up is booked', async () => {
      await page.getByLabel('Amount (IDR)').fill('25.000')
      await sent(page)
      expect(await web.status(page)).toBe('Top-up of 25,000 IDR booked; balance 25,000 IDR.')
    })

    await step(page, 'Back: the amount is empty, and Top up sends nothing', async () => {
      await page.goBack()
      await page.waitForURL(accountUrl)
      expect(await page.getByLabel('Amount (IDR)').inputValue()).toBe('')
      await page.getByRole('button', { name: 'Top up' }).click()
      // The required field stops the form in the browser: still the same page, nothing booked.
      expect(await page.locator('form[action$="/topups"] input[name="amount"]:invalid').count()).toBe(1)
      expect(page.url()).toBe(accountUrl)
      expect(await topups()).toBe(1)
    })

    await step(page, 'an amount typed on that page is a new top-up, booked', async () => {
      await page.getByLabel('Amount (IDR)').fill('5.000')
      await sent(page)
      expect(await web.status(page)).toBe('Top-up of 5,000 IDR booked; balance 30,000 IDR.')
      expect(await topups()).toBe(2)
    })
  }, 120_000)
})
