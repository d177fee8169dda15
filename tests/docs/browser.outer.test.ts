// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The API reference in a real browser with no network beyond this machine: headless Debian Chromium
// (playwright-core) against the service on a loopback port, every request to any other host
// aborted. The pages must render their operations from the service alone, at /docs and /docs/, link
// each other, and break no rule of their Content-Security-Policy.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from '../helpers/app'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from '../helpers/db'
import { axeViolations, openBrowser, screenshot, SETUP_TIMEOUT_MS, skipBrowserTests, step, type TestBrowser } from '../helpers/browser'

// `DOCS_SCREENSHOTS=docs bun run test tests/docs/browser.outer.test.ts` renews the README's screenshot.
const SHOTS = process.env.DOCS_SCREENSHOTS ?? join(tmpdir(), 'docs-screenshots')

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

describe.skipIf(skipBrowserTests())('the API reference in Chromium, offline', () => {
  let service: Running
  let browser: TestBrowser
  let page: Page
  const cleanups: (() => unknown)[] = []
  const blocked: string[] = []
  const problems: string[] = []

  beforeAll(async () => {
    const dataDir = await migratedDataDir('docs-browser-', (fn) => cleanups.push(fn))
    const env: Record<string, string> = { PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN, LOG_LEVEL: 'error' }
    if (usingPostgres()) {
      const db = await createMigratedPostgresDatabase()
      env.DATABASE_URL = db.url
      cleanups.push(db.drop)
    }
    service = await startService(readConfig(env))
    browser = await openBrowser()
    page = browser.page
    // No network but this machine: anything else is aborted and remembered.
    await browser.context.route('**/*', (route) => {
      const url = new URL(route.request().url())
      if (LOOPBACK.has(url.hostname)) return route.continue()
      blocked.push(url.href)
      return route.abort()
    })
    // A CSP violation, a script error or a failed request of the page is a problem.
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console: ${message.text()}`)
    })
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`)
    })
  }, SETUP_TIMEOUT_MS)

  afterAll(async () => {
    await browser?.close()
    await service?.stop()
    for (const cleanup of cleanups.reverse()) await cleanup()
  }, SETUP_TIMEOUT_MS)

  const operation = (path: string) => page.locator(`.opblock-summary-path[data-path="${path}"]`)

  test('/docs/ shows the integrator’s operations and the webhook, and nothing of the admin API', async () => {
    await step(page, 'open /docs/', async () => {
      await page.goto(`${service.url}/docs/`)
      await operation('/api/v1/messages/send').waitFor()
    })
    await step(page, 'the operations are listed', async () => {
      for (const path of ['/api/v1/messages/send', '/api/v1/balance', '/api/v1/messages/{message_sid}', '/api/v1/webhook']) {
        expect({ path, shown: await operation(path).first().isVisible() }).toEqual({ path, shown: true })
      }
      expect(await page.locator('.opblock-summary-path[data-path^="/admin/"]').count()).toBe(0)
      expect(await page.locator('.opblock-summary-path[data-path^="/provider/"]').count()).toBe(0)
      expect(await page.getByText('message.status', { exact: true }).first().isVisible()).toBe(true)
    })
    await screenshot(page, join(SHOTS, 'api-reference.png'))
    await step(page, 'an operation opens with its answers and their codes', async () => {
      await operation('/api/v1/messages/send').click()
      const send = page.locator('.opblock.is-open')
      await send.locator('.responses-table').first().waitFor()
      for (const status of ['200', '402', '422', '502']) {
        expect({ status, shown: await send.locator(`tr.response[data-code="${status}"]`).isVisible() }).toEqual({ status, shown: true })
      }
      expect(await send.innerText()).toContain('INSUFFICIENT_BALANCE')
    })
    expect(blocked).toEqual([])
    expect(problems).toEqual([])
  }, 60_000)

  test('/docs without the slash finds the same document; its link leads operators to /docs/admin', async () => {
    await step(page, 'open /docs', async () => {
      await page.goto(`${service.url}/docs`)
      await operation('/api/v1/balance').waitFor()
    })
    await step(page, 'follow the link to the admin API', async () => {
      await page.getByRole('link', { name: 'Admin API (operators)' }).click()
      await page.waitForURL(`${service.url}/docs/admin`)
      // The operators' document is the larger one: rendering it took over 10 s on a slow, busy machine.
      await operation('/admin/v1/accounts').first().waitFor({ timeout: 30_000 })
      expect(await operation('/provider/twilio/status').isVisible()).toBe(true)
      expect(await page.locator('.opblock-summary-path[data-path^="/api/"]').count()).toBe(0)
    })
    await screenshot(page, join(tmpdir(), 'docs-screenshots', 'admin-reference.png'))
    expect(blocked).toEqual([])
    expect(problems).toEqual([])
  }, 60_000)

  test('/docs and /docs/admin have no serious or critical axe violation, listed and with an operation open', async () => {
    for (const [path, first] of [
      ['/docs', '/api/v1/messages/send'],
      ['/docs/admin', '/admin/v1/accounts'],
    ] as const) {
      await step(page, `open ${path}`, async () => {
        await page.goto(`${service.url}${path}`)
        await operation(first).first().waitFor({ timeout: 30_000 })
      })
      expect({ path, violations: await axeViolations(page) }).toEqual({ path, violations: [] })
      await step(page, `open ${first}`, async () => {
        await operation(first).first().click()
        await page.locator('.opblock.is-open .responses-table').first().waitFor()
      })
      expect({ path, open: first, violations: await axeViolations(page) }).toEqual({ path, open: first, violations: [] })
    }
    expect(blocked).toEqual([])
    expect(problems).toEqual([])
  }, 120_000)
})
