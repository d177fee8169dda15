// The dashboard in headless Chromium, for a describe's browser tests: a service started in this
// process on a fresh DATA_DIR (and a fresh PostgreSQL database when DATABASE_URL is set), both
// migrated already (tests/helpers/db.ts), people who
// sign in from an invitation link, and each page checked with axe-core and kept as a screenshot at a
// desktop's width and a phone's.
//
//   describe.skipIf(skipBrowserTests())('inbox in Chromium', () => {
//     const web = dashboardInChromium('dashboard-inbox-', () => ({ SIM_REQUIRE_TEMPLATE: 'true' }))
//     test('...', async () => { const page = await web.signIn(link, '/dashboard'); await web.bothWidths(page, 'inbox') })
//   })

import { afterAll, beforeAll, expect } from 'bun:test'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from './app'
import { axeViolations, openBrowser, screenshot, SETUP_TIMEOUT_MS, type TestBrowser } from './browser'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from './db'

/** The password every invited person chooses. */
export const PASSWORD = 'a long enough password'
/** Where bothWidths keeps its screenshots (`bun run screenshots` sets DASHBOARD_SCREENSHOTS). */
export const SHOTS = process.env.DASHBOARD_SCREENSHOTS ?? join(tmpdir(), 'dashboard-screenshots')

type Cleanup = () => Promise<void> | void

/**
 * Registers the describe's beforeAll (starts the service) and afterAll (closes every browser, stops the
 * service, then runs the cleanups, last first). `setUp` runs first in beforeAll and returns the
 * service's extra environment; what it starts it hands to `cleanup`.
 */
export function dashboardInChromium(
  tempPrefix: string,
  setUp: (cleanup: (fn: Cleanup) => void) => Record<string, string> | Promise<Record<string, string>> = () => ({}),
) {
  let service: Running | undefined
  let dataDir = ''
  const browsers: TestBrowser[] = []
  const cleanups: Cleanup[] = []

  beforeAll(async () => {
    dataDir = await migratedDataDir(tempPrefix, (fn) => cleanups.push(fn))
    const extra = await setUp((fn) => cleanups.push(fn))
    const env: Record<string, string> = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: 'error', ...extra }
    if (usingPostgres()) {
      const db = await createMigratedPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    service = await startService(readConfig(env))
  }, SETUP_TIMEOUT_MS)

  afterAll(async () => {
    for (const b of browsers) await b.close()
    await service?.stop()
    for (const c of cleanups.reverse()) await c()
  }, SETUP_TIMEOUT_MS)

  const url = () => service!.url
  const noViolations = async (page: Page) => expect((await axeViolations(page)).map((v) => `${v.rule}: ${v.targets.join(' ')}`)).toEqual([])

  /** A new person: a fresh browser profile, at a desktop's width (`javaScript: false`: scripts off). */
  async function person(options: { javaScript?: boolean } = {}): Promise<Page> {
    const browser = await openBrowser(options)
    browsers.push(browser)
    await browser.page.setViewportSize({ width: 1440, height: 900 })
    return browser.page
  }

  return {
    /** The running service's base URL (after beforeAll). */
    get url() {
      return url()
    },
    /** The service's database: for a test that moves the simulator's clock (its reports' due times). */
    get sql() {
      return service!.database.sql
    },
    /** The service's DATA_DIR: a place for a test's files too. */
    get dataDir() {
      return dataDir
    },
    /** An /admin/v1 call with the admin token: its envelope's `data`. */
    admin: (method: string, path: string, body?: unknown): Promise<any> =>
      fetch(`${url()}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ((await r.json()) as any).data),
    /** The text of the page's first status message. */
    status: (page: Page) => page.getByRole('status').first().innerText(),
    /**
     * Does `act` (a form's submission) and waits for the page it leads to, the same URL or not, and its
     * first rendering: Chromium moves the focus to an `autofocus` field then, after `load` (the HTML
     * standard flushes autofocus candidates in the rendering update, before animation frame callbacks).
     */
    async submitted(page: Page, act: () => Promise<void>) {
      const loaded = page.waitForEvent('load')
      await act()
      await loaded
      await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))')
    },
    noViolations,
    person,
    /** axe-core at a phone's width too (nothing wider than it), and both widths' screenshots; back at the desktop's width after. */
    async bothWidths(page: Page, name: string) {
      await noViolations(page)
      await screenshot(page, join(SHOTS, `${name}-1440.png`))
      await page.setViewportSize({ width: 375, height: 800 })
      await noViolations(page)
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(375)
      await screenshot(page, join(SHOTS, `${name}-375.png`))
      await page.setViewportSize({ width: 1440, height: 900 })
    },
    /** A new person who follows an invitation `link`, chooses PASSWORD and lands on `landing`. */
    async signIn(link: string, landing: string, options: { javaScript?: boolean } = {}): Promise<Page> {
      const page = await person(options)
      await page.goto(`${url()}${new URL(link).pathname}`)
      await page.getByLabel('New password').fill(PASSWORD)
      await page.keyboard.press('Enter')
      await page.waitForURL(`${url()}${landing}`)
      return page
    },
  }
}
