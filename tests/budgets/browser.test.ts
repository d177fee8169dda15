// The messaging limit in headless Chromium, at a desktop's width and a phone's: a sender with tier 250
// that sent to 17 new recipients shows "17 / 250" with when the oldest frees on the senders list and
// its page; the operator moves it to the 2,000 tier with the keyboard-usable select. The pages pass
// axe-core and fit a phone's width; screenshots are written to DASHBOARD_SCREENSHOTS (or a temp dir).

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { axeViolations, openBrowser, screenshot, skipBrowserTests, step, type TestBrowser } from '../helpers/browser'

const PASSWORD = 'a long enough password'
const SHOTS = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'dashboard-screenshots')

describe.skipIf(skipBrowserTests())('messaging limit in Chromium', () => {
  let service: Running
  let browser: TestBrowser | undefined
  const cleanups: (() => Promise<void> | void)[] = []

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dashboard-limit-'))
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
    const env: Record<string, string> = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: 'error' }
    if (usingPostgres()) {
      const db = await createPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    service = await startService(readConfig(env))
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await service?.stop()
    for (const c of cleanups.reverse()) await c()
  }, 60_000)

  const call = (path: string, token: string, body?: unknown, method = 'POST') =>
    fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ((await r.json()) as any).data)
  const admin = (method: string, path: string, body?: unknown) => call(`/admin/v1${path}`, ADMIN_TOKEN, body, method)

  async function bothWidths(page: Page, name: string) {
    const clean = async () => expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])
    await clean()
    await screenshot(page, join(SHOTS, `${name}-1440.png`))
    await page.setViewportSize({ width: 375, height: 800 })
    await clean()
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    await screenshot(page, join(SHOTS, `${name}-375.png`))
    await page.setViewportSize({ width: 1440, height: 900 })
  }

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
    const sent = await call('/api/v1/messages/bulk', key, {
      messages: Array.from({ length: 17 }, (_, i) => ({ to: `+62818${String(i).padStart(8, '0')}`, body: 'Promo' })),
    })
    expect(sent.sent).toBe(17)

    browser = await openBrowser()
    const op = browser.page
    await op.setViewportSize({ width: 1440, height: 900 })
    await op.goto(`${service.url}${new URL((await admin('POST', '/operators', { email: 'limit-ops@example.com' })).link).pathname}`)
    await op.getByLabel('New password').fill(PASSWORD)
    await op.keyboard.press('Enter')
    await op.waitForURL(`${service.url}/dashboard/accounts`)

    await step(op, 'the senders list: 17 / 250 with when the oldest frees', async () => {
      await op.goto(`${service.url}/dashboard/senders`)
      const cell = op.locator('tbody td[data-label="Messaging limit"]').first()
      expect((await cell.innerText()).replace(/\s+/g, ' ')).toMatch(
        /^17 \/ 250 recipients in 24 h, oldest frees \d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
      )
      await bothWidths(op, 'limit-senders-list')
    })

    await step(op, 'the sender page: the use, and the tier moved to 2,000', async () => {
      await op.goto(`${service.url}/dashboard/senders/${sender.id}`)
      expect((await op.locator('#sender-budget').innerText()).replace(/\s+/g, ' ')).toContain('17 / 250 recipients in 24 h')
      await bothWidths(op, 'limit-sender')
      await op.getByRole('combobox', { name: /^Messaging limit/ }).selectOption('2000')
      const loaded = op.waitForEvent('load')
      await op.getByRole('button', { name: 'Save sender' }).click()
      await loaded
      expect(await op.getByRole('status').first().innerText()).toContain('its messaging limit (2,000)')
      expect((await op.locator('#sender-budget').innerText()).replace(/\s+/g, ' ')).toContain('17 / 2,000 recipients in 24 h')
      await bothWidths(op, 'limit-sender-saved')
    })
  }, 120_000)
})
