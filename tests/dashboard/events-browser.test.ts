// Events in headless Chromium (see browser.test.ts for the set-up), at a desktop's width and a
// phone's: an operator sets an account's low-balance threshold (a refused value keeps the focus at its
// field), its member sees it on the overview and chooses a key's events with the keyboard on the
// webhook page. The pages in these states pass axe-core.

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

describe.skipIf(skipBrowserTests())('events in Chromium', () => {
  let service: Running
  const browsers: TestBrowser[] = []
  const cleanups: (() => Promise<void> | void)[] = []

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'dashboard-events-'))
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
    for (const b of browsers) await b.close()
    await service?.stop()
    for (const c of cleanups.reverse()) await c()
  }, 60_000)

  const admin = (method: string, path: string, body?: unknown) =>
    fetch(`${service.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ((await r.json()) as any).data)
  const local = (link: string) => `${service.url}${new URL(link).pathname}`
  const status = (page: Page) => page.getByRole('status').first().innerText()
  async function submitted(page: Page, act: () => Promise<void>) {
    const loaded = page.waitForEvent('load')
    await act()
    await loaded
  }
  const noViolations = async (page: Page) => expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])
  async function bothWidths(page: Page, name: string) {
    await noViolations(page)
    await screenshot(page, join(SHOTS, `${name}-1440.png`))
    await page.setViewportSize({ width: 375, height: 800 })
    await noViolations(page)
    expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
    await screenshot(page, join(SHOTS, `${name}-375.png`))
    await page.setViewportSize({ width: 1440, height: 900 })
  }
  async function signIn(link: string, landing: string): Promise<Page> {
    const browser = await openBrowser()
    browsers.push(browser)
    const page = browser.page
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.goto(local(link))
    await page.getByLabel('New password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${service.url}${landing}`)
    return page
  }

  test("an operator sets the low-balance threshold; the member sees it and chooses a key's events with the keyboard", async () => {
    const base = service.url
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
