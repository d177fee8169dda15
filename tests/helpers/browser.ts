// Browser tests drive Debian's Chromium (/usr/bin/chromium) through playwright-core: no browser is
// downloaded. Each openBrowser() is a fresh profile in its own temporary directory, so two calls are
// two independent people (no shared cookies, storage or cache). Every wait is bounded: a launch, a
// navigation or a locator that hangs fails the test instead of stalling the suite.
//
//   const skip = skipBrowserTests()            // one line and a skip when Chromium is missing outside CI
//   describe.skipIf(skip)('dashboard', () => { ... openBrowser() ... step(page, 'sign in', async () => ...) })
//
// Assertions use bun's expect on values read from the page (playwright-core has no toHaveText).

import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Upper bounds of the browser's own waits (ms). Test and hook timeouts must be larger. */
export const LAUNCH_TIMEOUT = 30_000
// 10 s was too little for Swagger UI's first render of the API reference with both CI runs on a slow
// 2-core machine (7-8 s there with the machine otherwise idle).
export const ACTION_TIMEOUT = 20_000
export const NAVIGATION_TIMEOUT = 15_000
const CLOSE_TIMEOUT = 10_000

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export function browserAvailable(): boolean {
  return existsSync(CHROMIUM)
}

function inCi(): boolean {
  return process.env.CI === 'true'
}

/**
 * For `describe.skipIf(skipBrowserTests())`. True (after printing one line) when Chromium is missing
 * outside CI. In CI (CI=true) a missing Chromium is never a skip: this returns false, the tests run
 * and fail at openBrowser() with a message saying why.
 */
/**
 * Bound of a browser test's set-up and tear-down (a service started, Chromium launched). Generous: CI
 * runs both databases' suites at once on two cores, and a heavy test of the other suite (the
 * 1,000,000-message conversion) can slow a launch far beyond its usual few seconds. It bounds a hang; it
 * measures nothing.
 */
export const SETUP_TIMEOUT_MS = 180_000

export function skipBrowserTests(): boolean {
  if (browserAvailable() || inCi()) return false
  console.log(`browser tests skipped: ${CHROMIUM} not found (apt-get install chromium)`)
  return true
}

export type TestBrowser = {
  context: BrowserContext
  /** The page the browser opened with (a persistent context starts with one). */
  page: Page
  profileDir: string
  /** Closes the browser and removes its profile directory. Safe to call twice. */
  close(): Promise<void>
}

/** Races `promise` against `ms`; on time-out throws naming `what`. */
async function bounded<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Launches headless Chromium on a fresh temporary profile (`javaScript: false`: as a browser with scripts off). */
export async function openBrowser(options: { javaScript?: boolean } = {}): Promise<TestBrowser> {
  if (!browserAvailable()) {
    throw new Error(`${CHROMIUM} not found: the browser tests need Debian's Chromium (apt-get install chromium)`)
  }
  const profileDir = mkdtempSync(join(tmpdir(), 'browser-profile-'))
  let context: BrowserContext
  try {
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ARGS,
      timeout: LAUNCH_TIMEOUT,
      javaScriptEnabled: options.javaScript ?? true,
    })
  } catch (error) {
    rmSync(profileDir, { recursive: true, force: true })
    throw error
  }
  context.setDefaultTimeout(ACTION_TIMEOUT)
  context.setDefaultNavigationTimeout(NAVIGATION_TIMEOUT)
  const page = context.pages()[0] ?? (await context.newPage())
  let closed: Promise<void> | undefined
  const close = () =>
    (closed ??= (async () => {
      try {
        await bounded(context.close(), CLOSE_TIMEOUT, 'closing Chromium')
      } finally {
        rmSync(profileDir, { recursive: true, force: true })
      }
    })())
  return { context, page, profileDir, close }
}

let failureDir: string | undefined

/** Where step() puts the screenshots of failed steps: one temporary folder per test process, kept. */
export function failureScreenshotDir(): string {
  failureDir ??= mkdtempSync(join(tmpdir(), 'browser-failures-'))
  return failureDir
}

/** Writes a full-page PNG of `page` to `file` (directories created), e.g. for the docs. */
export async function screenshot(page: Page, file: string): Promise<string> {
  mkdirSync(dirname(file), { recursive: true })
  await page.screenshot({ path: file, fullPage: true, timeout: ACTION_TIMEOUT })
  return file
}

/**
 * Runs one step of a flow. If it throws, saves a full-page screenshot of `page` and rethrows an error
 * naming the step, the page's URL and the screenshot's path (the original error is its cause).
 */
export async function step<T>(page: Page, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (error) {
    const slug = name.replace(/[^a-zA-Z0-9]+/g, '-').replace(/^-|-$/g, '') || 'step'
    const file = join(failureScreenshotDir(), `${Date.now()}-${slug}.png`)
    let saved: string
    try {
      saved = `screenshot: ${await screenshot(page, file)}`
    } catch (shotError) {
      saved = `no screenshot (${shotError instanceof Error ? shotError.message.split('\n')[0] : String(shotError)})`
    }
    const message = error instanceof Error ? error.message : String(error)
    throw new Error(`step "${name}" failed at ${page.url()}: ${message}\n${saved}`, { cause: error })
  }
}

// axe-core runs inside the page. The dashboard's CSP allows scripts from its own origin only, so the
// script is served at a same-origin path that the browser answers itself (page.route): the page keeps
// its real CSP while it is checked.
const AXE_PATH = '/__axe-core.js'
const axeSource = () => readFileSync(join(dirname(require.resolve('axe-core')), 'axe.min.js'), 'utf8')
const axeRouted = new WeakSet<Page>()

export type Violation = { rule: string; impact: string; help: string; targets: string[] }

/** The axe-core violations of the page as it is now, of the given impacts (default: serious and critical). */
export async function axeViolations(page: Page, impacts: string[] = ['serious', 'critical']): Promise<Violation[]> {
  const origin = new URL(page.url()).origin
  if (!axeRouted.has(page)) {
    const source = axeSource()
    await page.route(`**${AXE_PATH}`, (route) => route.fulfill({ body: source, contentType: 'text/javascript' }))
    axeRouted.add(page)
  }
  if (!(await page.evaluate('typeof window.axe !== "undefined"'))) await page.addScriptTag({ url: `${origin}${AXE_PATH}` })
  const found = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
    rule: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')),
  })))`)) as Violation[]
  return found.filter((v) => impacts.includes(v.impact))
}
