// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// An operator's flow through forms in headless Chromium (see browser.outer.test.ts for the set-up): a notice
// after each change, a refused amount with the focus on its field and its message as the field's
// description, and an account's API keys reached from its page: created and shown once with a copy
// button, gone after a reload, deactivated and activated; its own price set to keep late failures
// charged. The pages in these states pass axe-core too.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from '../helpers/db'
import { axeViolations, openBrowser, screenshot, SETUP_TIMEOUT_MS, skipBrowserTests, step, type TestBrowser } from '../helpers/browser'

const PASSWORD = 'a long enough password'
const SHOTS = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'dashboard-screenshots')

describe.skipIf(skipBrowserTests())('forms in Chromium', () => {
  let service: Running
  let browser: TestBrowser
  const cleanups: (() => Promise<void> | void)[] = []

  beforeAll(async () => {
    const dataDir = await migratedDataDir('dashboard-flow-', (fn) => cleanups.push(fn))
    const env: Record<string, string> = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: 'error' }
    if (usingPostgres()) {
      const db = await createMigratedPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    service = await startService(readConfig(env))
    browser = await openBrowser()
  }, SETUP_TIMEOUT_MS)

  afterAll(async () => {
    await browser?.close()
    await service?.stop()
    for (const c of cleanups.reverse()) await c()
  }, SETUP_TIMEOUT_MS)

  const h1 = (page: Page) => page.locator('h1').innerText()
  const status = (page: Page) => page.getByRole('status').first().innerText()
  const balanceWith = (key: string) =>
    fetch(`${service.url}/api/v1/balance`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status)

  test('an operator creates an account, corrects a top-up, and manages its API keys from its page', async () => {
    const base = service.url
    const made = await fetch(`${base}/admin/v1/operators`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'keys-ops@example.com' }),
    }).then((r) => r.json() as Promise<any>)
    const page = browser.page
    await page.goto(`${base}${new URL(made.data.link).pathname}`)
    await page.getByLabel('New password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${base}/dashboard/accounts`)

    await step(page, 'create an account: the next page says so', async () => {
      await page.getByLabel('Name', { exact: true }).fill('Toko Kunci')
      await page.getByLabel('Opening balance (IDR)').fill('10.000')
      await page.getByRole('button', { name: 'Create account' }).click()
      await page.waitForURL(/\/dashboard\/accounts\/\d+$/)
      expect(await status(page)).toBe('Account Toko Kunci created, with an opening balance of 10,000 IDR.')
    })
    const accountUrl = page.url()

    await step(page, 'a top-up the amount rule refuses: focus on the field, the message as its description, the text kept', async () => {
      await page.getByLabel('Amount (IDR)').fill('lima ribu')
      await page.getByRole('button', { name: 'Top up' }).click()
      await page.waitForLoadState()
      const amount = page.getByLabel('Amount (IDR)')
      expect(await page.evaluate('document.activeElement.id')).toBe('topup-amount')
      expect(await amount.inputValue()).toBe('lima ribu')
      expect(await amount.getAttribute('aria-invalid')).toBe('true')
      const described = await page.evaluate(
        "document.getElementById(document.getElementById('topup-amount').getAttribute('aria-describedby')).textContent",
      )
      expect(described).toBe('amount: must be a whole number of IDR, like 5000')
      expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])
      await screenshot(page, join(SHOTS, 'account-field-error-1440.png'))
      await page.setViewportSize({ width: 375, height: 800 })
      await screenshot(page, join(SHOTS, 'account-field-error-375.png'))
      await page.setViewportSize({ width: 1440, height: 900 })
      await amount.fill('5,000')
      await page.getByRole('button', { name: 'Top up' }).click()
      await page.waitForURL(accountUrl)
      expect(await status(page)).toBe('Top-up of 5,000 IDR booked; balance 15,000 IDR.')
      expect(await page.locator('.stat .value').first().innerText()).toBe('15,000')
    })

    let key = ''
    await step(page, "the account's API keys, from its page: create one, shown once with a copy button", async () => {
      await page.getByRole('navigation', { name: "This account's pages" }).getByRole('link', { name: 'API keys' }).click()
      await page.waitForURL(`${accountUrl}/keys`)
      expect(await h1(page)).toBe('API keys · Toko Kunci')
      await page.getByLabel('Label', { exact: true }).fill('Kasir')
      await page.keyboard.press('Enter')
      await page.waitForURL(`${accountUrl}/keys`)
      key = (await page.locator('#new-key').innerText()).trim()
      expect(key).toMatch(/^pm_/)
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base })
      await page.getByRole('button', { name: 'Copy key' }).click()
      await page.getByRole('button', { name: 'Copied' }).waitFor()
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key)
      expect(await balanceWith(key)).toBe(200)
      expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])
      await screenshot(page, join(SHOTS, 'operator-keys-1440.png'))
      await page.setViewportSize({ width: 375, height: 800 })
      await screenshot(page, join(SHOTS, 'operator-keys-375.png'))
      await page.setViewportSize({ width: 1440, height: 900 })
    })

    await step(page, 'a reload shows the list without the key, and makes no second key', async () => {
      await page.reload()
      expect(await page.content()).not.toContain(key)
      expect(await page.locator('tbody tr').count()).toBe(1)
    })

    await step(page, 'deactivate and activate it, each confirmed', async () => {
      await page.getByRole('button', { name: 'Deactivate key Kasir' }).click()
      await page.waitForLoadState()
      expect(await status(page)).toBe('Key Kasir deactivated: requests with it are refused from now on.')
      expect(await balanceWith(key)).toBe(401)
      await page.getByRole('button', { name: 'Activate key Kasir' }).click()
      await page.waitForLoadState()
      expect(await status(page)).toBe('Key Kasir activated: requests with it are accepted again.')
      expect(await balanceWith(key)).toBe(200)
    })

    await step(page, 'the account link leads back to its page', async () => {
      await page.locator('.account-link').getByRole('link', { name: 'Toko Kunci' }).click()
      await page.waitForURL(accountUrl)
      expect(await h1(page)).toBe('Toko Kunci')
    })

    await step(page, 'its own price, keeping late failures charged: chosen by the radio, said by the notice and the page', async () => {
      expect(await page.getByLabel('Refund them').isChecked()).toBe(true)
      await page.getByLabel("This account's price per message (IDR)").fill('400')
      await page.getByLabel('Keep them charged').check()
      await page.getByRole('button', { name: 'Set own price' }).click()
      await page.waitForURL(accountUrl)
      expect(await status(page)).toBe(
        "This account's own price is now 400 IDR per message (it was 1 IDR). " +
          'Messages charged from now on that fail after the provider accepted them are kept charged.',
      )
      expect(await page.locator('#late-failures').innerText()).toBe('kept charged')
      expect(await page.getByLabel('Keep them charged').isChecked()).toBe(true)
      expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])
      const price = await fetch(`${base}/admin/v1/price?account_id=${accountUrl.split('/').at(-1)}`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      }).then((r) => r.json() as Promise<any>)
      expect(price.data).toMatchObject({ cost_per_message: 400, account_override: true, refund_late_failures: false })
    })
  }, 60_000)
})
