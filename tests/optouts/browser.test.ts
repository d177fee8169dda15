// The opt-out page in headless Chromium, as a member uses it, at a desktop's width and a phone's: opt
// a phone out, import a pasted CSV (the report names the bad line), import a file, download the CSV,
// opt a phone back in. The page in these states passes axe-core; screenshots at 375 and 1440 px.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
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

describe.skipIf(skipBrowserTests())('opt-outs in Chromium', () => {
  let service: Running
  const browsers: TestBrowser[] = []
  const cleanups: (() => Promise<void> | void)[] = []
  let dataDir: string

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'dashboard-optouts-'))
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

  test('a member opts a phone out, imports, downloads and opts one back in', async () => {
    const base = service.url
    const account = await admin('POST', '/accounts', { name: 'Toko Sepi', balance: 0 })
    await admin('POST', `/accounts/${account.id}/opt-outs`, { phone: '081277770001' })
    const link = (await admin('POST', `/accounts/${account.id}/members`, { email: 'sepi@example.com' })).link
    const browser = await openBrowser()
    browsers.push(browser)
    const page = browser.page
    await page.setViewportSize({ width: 1440, height: 900 })
    await page.goto(`${base}${new URL(link).pathname}`)
    await page.getByLabel('New password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${base}/dashboard`)

    await step(page, 'the page from the navigation, with the opt-out the operator made', async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Opt-outs' }).click()
      await page.waitForURL(`${base}/dashboard/opt-outs`)
      expect(await page.locator('tbody tr').count()).toBe(1)
      expect(await page.locator('tbody tr').first().innerText()).toContain('+6281277770001')
    })

    await step(page, 'opt a phone out', async () => {
      await page.getByLabel('Phone', { exact: true }).fill('0812 7777 0002')
      await submitted(page, () => page.getByRole('button', { name: 'Opt out', exact: true }).click())
      expect(await status(page)).toBe('+6281277770002 is opted out.')
      expect(await page.locator('tbody tr').count()).toBe(2)
    })

    await step(page, 'import pasted CSV: the report counts and names the bad line', async () => {
      await page.getByLabel('Or paste the CSV text').fill('phone\n081277770003\n081277770001\nnot a phone\n')
      await submitted(page, () => page.getByRole('button', { name: 'Import opt-outs' }).click())
      expect(await page.locator('#import-accepted').innerText()).toBe('1')
      expect(await page.locator('#import-duplicates').innerText()).toBe('1')
      expect(await page.locator('#import-invalid').innerText()).toBe('1')
      expect(await page.getByText('phone: not a valid phone number: "not a phone"').isVisible()).toBe(true)
      await bothWidths(page, 'opt-outs-import-report')
    })

    await step(page, 'import a file', async () => {
      const file = join(dataDir, 'more.csv')
      writeFileSync(file, '081277770004\n')
      await page.locator('input[type=file][name=file]').setInputFiles(file)
      await submitted(page, () => page.getByRole('button', { name: 'Import opt-outs' }).click())
      expect(await page.locator('#import-accepted').innerText()).toBe('1')
      expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(4)
    })

    await step(page, 'download the CSV', async () => {
      const download = page.waitForEvent('download')
      await page.getByRole('link', { name: 'Download CSV' }).click()
      const saved = join(dataDir, 'download.csv')
      await (await download).saveAs(saved)
      const lines = readFileSync(saved, 'utf8').trim().split('\r\n')
      expect(lines[0]).toBe('phone,opted_out_at,source,detail,by')
      expect(
        lines
          .slice(1)
          .map((l) => l.split(',')[0])
          .sort(),
      ).toEqual(['+6281277770001', '+6281277770002', '+6281277770003', '+6281277770004'])
    })

    await step(page, 'opt a phone back in', async () => {
      await submitted(page, () => page.getByRole('button', { name: 'Opt back in +6281277770002' }).click())
      expect(await status(page)).toBe('+6281277770002 is opted back in: it may be sent to again.')
      expect(await page.locator('tbody').getByText('+6281277770002').count()).toBe(0)
      await bothWidths(page, 'opt-outs')
    })
    const left = await admin('GET', `/accounts/${account.id}/opt-outs`)
    expect(left.total).toBe(3)
  })
})
