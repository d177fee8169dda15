// Outer ring (real time): it drives a real Chromium (playwright-core) through every page, with axe-core in the page.
// How the dashboard looks and reads, in headless Chromium: every page (tests/helpers/tour.ts) at a
// phone's width and a desktop's has no serious or critical axe-core violation and no sideways
// scrolling; on a phone the lists show what matters and the chart shows today; a skip link, a
// favicon, and typed text that is not bold.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { axeViolations, skipBrowserTests, step } from '../helpers/browser'
import { startTour, visit, WIDTHS, type Tour } from '../helpers/tour'

const PHONE = 375

/** The page's width as laid out: more than the viewport means sideways scrolling. */
const scrollWidth = (page: Page) => page.evaluate('document.documentElement.scrollWidth') as Promise<number>

/** Whether each element is shown and lies wholly within the viewport's width. */
async function inView(page: Page, selector: string): Promise<boolean[]> {
  const boxes = await Promise.all((await page.locator(selector).all()).map((e) => e.boundingBox()))
  return boxes.map((b) => b !== null && b.width > 0 && b.x >= 0 && b.x + b.width <= PHONE)
}

describe.skipIf(skipBrowserTests())('the dashboard on a phone and a desktop', () => {
  let tour: Tour
  const stopAt = (path: string) => tour.stops.find((s) => s.path === path)!

  beforeAll(async () => {
    tour = await startTour()
  }, 120_000)

  afterAll(async () => {
    await tour?.close()
  }, 60_000)

  test('no page has a serious or critical accessibility violation, scrolls sideways or shows a date picker, at 375 and at 1440 px', async () => {
    const found: string[] = []
    for (const stop of tour.stops) {
      // Loaded once, then seen at each width: the stylesheet's media queries follow the viewport.
      const page = await visit(tour, stop, WIDTHS[0]!)
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 900 })
        const at = `${stop.path} (${stop.who}, ${width} px)`
        for (const v of await step(page, `axe ${at}`, () => axeViolations(page))) {
          found.push(`${at}: ${v.rule} [${v.impact}] ${v.help}\n    ${v.targets.join('\n    ')}`)
        }
        const wide = await scrollWidth(page)
        if (wide > width) found.push(`${at}: ${wide} px wide, scrolls sideways`)
        // One date format: every date is typed and shown as YYYY-MM-DD HH:MM:SS, never in the browser's picker format.
        const pickers = await page.locator('input[type="date"], input[type="datetime-local"], input[type="time"]').count()
        if (pickers > 0) found.push(`${at}: ${pickers} date picker(s), shown in the browser's own format`)
      }
    }
    expect(found.join('\n')).toBe('')
  }, 300_000)

  test("at 375 px the messages list shows each message's status and cost without scrolling sideways", async () => {
    const page = await visit(tour, stopAt('/dashboard/messages'), PHONE)
    await step(page, 'status and cost of every message in view', async () => {
      const shown = Number((await page.locator('main p', { hasText: / messages?$/ }).innerText()).split(' ')[0])
      expect(shown).toBeGreaterThan(5)
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE)
      for (const column of ['Status', 'Cost']) {
        expect({ column, inView: await inView(page, `tbody td[data-label="${column}"]`) }).toEqual({
          column,
          inView: Array(shown).fill(true),
        })
      }
      // Each card line names its column (the cell's ::before shows its data-label).
      const label = await page.evaluate(`getComputedStyle(document.querySelector('tbody td[data-label="Cost"]'), '::before').content`)
      expect(label).toStartWith('"Cost"')
    })
  }, 60_000)

  test('at 375 px the keys, the audit log, failed deliveries and senders show their state, action and button in view', async () => {
    const checks = [
      ['/dashboard/keys', 'member', 'tbody td[data-label="State"] button'],
      ['/dashboard/audit', 'operator', 'tbody td[data-label="Action"]'],
      ['/dashboard/deliveries', 'operator', 'tbody td[data-label="Replay"] button'],
      ['/dashboard/senders', 'operator', 'tbody td[data-label="Actions"] button'],
    ] as const
    for (const [path, who, selector] of checks) {
      const page = await visit(tour, stopAt(path), PHONE)
      const seen = await inView(page, selector)
      expect({ path, who, any: seen.length > 0, all: seen.every(Boolean) }).toEqual({ path, who, any: true, all: true })
    }
  }, 60_000)

  test("at 375 px the overview's 30-day chart fits the screen and shows today, its days written YYYY-MM-DD", async () => {
    const page = await visit(tour, stopAt('/dashboard'), PHONE)
    await step(page, 'the chart within the width, today labelled', async () => {
      // Both charts (the 30 days' messages, the cost per day) within the width; the first is the 30 days'.
      expect(await inView(page, 'svg.chart')).toEqual([true, true])
      const chart = 'svg.chart[aria-labelledby="chart-title"]'
      const today = (await page.locator(`${chart} rect title`).last().textContent())!.slice(0, 10)
      const labels = page.locator(`${chart} text.axis`, { hasText: /-/ })
      expect(await labels.last().textContent()).toBe(today)
      expect(await inView(page, `${chart} rect:last-of-type`)).toEqual([true])
      for (const label of await labels.allTextContents()) expect(label).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    })
  }, 60_000)

  test('the first Tab reaches a visible "Skip to content" link, which leads into the page\'s content', async () => {
    for (const width of WIDTHS) {
      const page = await visit(tour, stopAt('/dashboard/messages'), width)
      await step(page, `skip link at ${width} px`, async () => {
        await page.keyboard.press('Tab')
        const link = page.locator(':focus')
        expect(await link.innerText()).toBe('Skip to content')
        const box = (await link.boundingBox())!
        expect(box.y).toBeGreaterThanOrEqual(0)
        expect(box.x + box.width).toBeLessThanOrEqual(width)
        await page.keyboard.press('Enter')
        await page.keyboard.press('Tab')
        expect(await page.evaluate('document.activeElement.closest("main") !== null')).toBe(true)
      })
    }
  }, 60_000)

  test('a favicon in every page, served from the dashboard assets; typed text is not bold', async () => {
    const page = await visit(tour, stopAt('/dashboard/sign-in'), 1440)
    const href = await page.locator('head link[rel="icon"]').getAttribute('href')
    const icon = await fetch(`${tour.base}${href}`)
    expect([href, icon.status, icon.headers.get('content-type')]).toEqual([
      '/dashboard/assets/favicon.svg',
      200,
      'image/svg+xml; charset=utf-8',
    ])
    expect(await icon.text()).toStartWith('<svg')
    expect(await page.evaluate(`getComputedStyle(document.querySelector('input[name="email"]')).fontWeight`)).toBe('400')
  }, 60_000)
})
