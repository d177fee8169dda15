// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// A Meta sender's page after Meta's health webhooks (issue 32 §4), in headless Chromium at a desktop's
// width and a phone's (see browser.outer.test.ts for the set-up): the fake Graph API posts a flag, a
// restriction and a capability update, signed, to the service's real webhook route; the page's Health
// line says what they refuse, the history table lists them newest first, and the messaging-limit
// select gives way to Meta's value. The page passes axe-core and fits 375 px.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { META_A } from '../helpers/senders'

const WABA = META_A.credentials.business_account_id
const PHONE_ID = META_A.credentials.phone_number_id

describe.skipIf(skipBrowserTests())("a sender's health in Chromium", () => {
  let graph: FakeGraph
  const web = dashboardInChromium('dashboard-sender-health-', (cleanup) => {
    graph = fakeGraph()
    graph.phone(PHONE_ID, META_A.credentials.access_token, {
      display_phone_number: '62 811-0000-0001',
      verified_name: 'Warung A',
      quality_rating: 'YELLOW',
      appSecret: META_A.credentials.app_secret,
    })
    graph.accountOf.set(PHONE_ID, WABA)
    cleanup(() => graph.stop())
    return { META_API_BASE: graph.apiBase }
  })
  const { admin, bothWidths, signIn } = web

  test("Meta's webhooks arrive; the sender's page shows its health and history at both widths", async () => {
    graph.callback = { publicBaseUrl: web.url, deliver: (request: Request) => fetch(request) }
    const sender = await admin('POST', '/senders', { provider: 'meta', name: 'Warung A', ...META_A })
    const account = await admin('POST', '/accounts', { name: 'Warung A', balance: 10_000 })
    await admin('PUT', `/accounts/${account.id}/senders/${sender.id}`)
    const now = Math.floor(Date.now() / 1000)
    for (const said of [
      graph.sayHealth({ waba: WABA, quality: { phoneNumberId: PHONE_ID, event: 'FLAGGED' }, time: now }),
      graph.sayHealth({
        waba: WABA,
        restrictions: [{ restriction_type: 'RESTRICTED_BIZ_INITIATED_MESSAGING', expiration: now + 7 * 86_400 }],
        time: now + 1,
      }),
      graph.sayHealth({ waba: WABA, capability: 2000, time: now + 2 }),
    ])
      expect((await said).status).toBe(200)

    const op = await signIn((await admin('POST', '/operators', { email: 'health-ops@example.com' })).link, '/dashboard/accounts')
    await step(op, "the sender's page: its health line, Meta's tier, the history newest first", async () => {
      await op.goto(`${web.url}/dashboard/senders/${sender.id}`)
      expect(await op.locator('#sender-health').innerText()).toBe(
        'quality yellow; flagged by Meta: its campaigns pause; restricted by Meta: business-initiated sends refused',
      )
      expect(await op.locator('#tier-by-meta').innerText()).toStartWith('Messaging limit: 2,000, as Meta said it')
      expect(await op.getByRole('combobox', { name: /^Messaging limit/ }).count()).toBe(0)
      const history = op.locator('section[aria-labelledby="health-history"] tbody tr')
      const rows = (await history.allInnerTexts()).map((r) =>
        r
          .split('\t')
          .slice(1)
          .map((c) => c.trim()),
      )
      // Newest first; the order of changes applied from one delivery is not part of what the page promises.
      expect(rows.map((r) => [r[0], r[3]]).sort()).toEqual([
        ['flagged', 'Meta'],
        ['messaging limit', 'Meta'],
        ['quality', 'a sync'],
        ['restrictions', 'Meta'],
      ])
      // Values break only between words and after a restriction's underscores, never inside a word
      // ("unlimite / d"): every piece of text without a space lies on one line, at both widths.
      const piecesOnMoreLines = `[...document.querySelectorAll('section[aria-labelledby="health-history"] td')].flatMap((td) =>
        [...(function* (w) { while (w.nextNode()) yield w.currentNode })(document.createTreeWalker(td, NodeFilter.SHOW_TEXT))]
          .filter((n) => n.textContent.trim() !== '' && !/\\s/.test(n.textContent.trim())).flatMap((n) => {
          const range = document.createRange()
          range.selectNodeContents(n)
          return range.getClientRects().length > 1 ? [n.textContent] : []
        }))`
      expect(await op.evaluate(piecesOnMoreLines)).toEqual([])
      expect(await op.evaluate(`document.querySelector('section[aria-labelledby="health-history"]').textContent`)).toContain(
        'RESTRICTED_BIZ',
      )
      await op.setViewportSize({ width: 375, height: 800 })
      expect(await op.evaluate(piecesOnMoreLines)).toEqual([])
      expect(await op.evaluate(`document.querySelector('section[aria-labelledby="health-history"]').textContent`)).toContain(
        'RESTRICTED_BIZ',
      )
      await op.setViewportSize({ width: 1440, height: 900 })
      await bothWidths(op, 'sender-health')
    })
  }, 120_000)
})
