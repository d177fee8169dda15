// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The opt-out page in headless Chromium, as a member uses it, at a desktop's width and a phone's: opt
// a phone out, import a pasted CSV (the report names the bad line), import a file, download the CSV,
// opt a phone back in. The page in these states passes axe-core; screenshots at 375 and 1440 px.

import { describe, expect, test } from 'bun:test'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())('opt-outs in Chromium', () => {
  const web = dashboardInChromium('dashboard-optouts-')
  const { admin, status, submitted, bothWidths, signIn } = web

  test('a member opts a phone out, imports, downloads and opts one back in', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Sepi', balance: 0 })
    await admin('POST', `/accounts/${account.id}/opt-outs`, { phone: '081277770001' })
    const link = (await admin('POST', `/accounts/${account.id}/members`, { email: 'sepi@example.com' })).link
    const page = await signIn(link, '/dashboard')

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
      const file = join(web.dataDir, 'more.csv')
      writeFileSync(file, '081277770004\n')
      await page.locator('input[type=file][name=file]').setInputFiles(file)
      await submitted(page, () => page.getByRole('button', { name: 'Import opt-outs' }).click())
      expect(await page.locator('#import-accepted').innerText()).toBe('1')
      expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(4)
    })

    await step(page, 'download the CSV', async () => {
      const download = page.waitForEvent('download')
      await page.getByRole('link', { name: 'Download CSV' }).click()
      const saved = join(web.dataDir, 'download.csv')
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
