// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// Senders in headless Chromium (see browser.outer.test.ts for the set-up), at a desktop's width and a
// phone's: an operator creates a simulator sender and a Twilio one (the select shows the chosen
// provider's credential fields only; a refused SID keeps the focus there and never the token), checks
// the Twilio one against a local fake of Twilio's account resource, and gives both to an account; its
// member sees them on the overview and the campaign form offers them, the default chosen. The auth
// token never shows in a page or a line of the service's log. The pages in these states pass axe-core.

import { describe, expect, spyOn, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'
import { fakeTwilioAccount, type FakeTwilioAccount } from '../helpers/fake-twilio-account'

const SID = 'AC5e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b'
const TOKEN = 'tok-BROWSER-SECRET-5c4b3a29180f7e6d'

describe.skipIf(skipBrowserTests())('senders in Chromium', () => {
  let twilio: FakeTwilioAccount
  // The service runs in this process: its log lines (one per request) are read here.
  const lines: string[] = []
  const web = dashboardInChromium('dashboard-senders-', (cleanup) => {
    twilio = fakeTwilioAccount('Toko Kirim')
    twilio.tokens.set(SID, TOKEN)
    cleanup(() => twilio.stop())
    for (const method of ['log', 'error'] as const) {
      const spy = spyOn(console, method).mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(' ')))
      cleanup(() => spy.mockRestore())
    }
    // The template sync after a check lists the fake's Content templates (none), never Twilio's own.
    return { LOG_LEVEL: 'info', TWILIO_API_BASE: twilio.url, TWILIO_CONTENT_API_BASE: twilio.url, META_API_BASE: twilio.url }
  })
  const { admin, status, submitted, noViolations, bothWidths, signIn } = web

  test('an operator creates, checks and assigns senders; the member sees them and the campaign form offers them', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Kirim', balance: 50_000 })
    const memberLink = (await admin('POST', `/accounts/${account.id}/members`, { email: 'kirim@example.com' })).link
    const template = await admin('POST', `/accounts/${account.id}/templates`, { name: 'Promo', body: 'Hi {{name}}' })
    await admin('POST', `/accounts/${account.id}/segments`, { name: 'Everyone', tag: 'all' })
    const op = await signIn((await admin('POST', '/operators', { email: 'senders-ops@example.com' })).link, '/dashboard/accounts')

    await step(op, 'a simulator sender, from the Senders page of the navigation', async () => {
      await op.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Senders' }).click()
      await op.waitForURL(`${base}/dashboard/senders`)
      expect(await op.getByText('No senders yet.').isVisible()).toBe(true)
      expect(await op.getByRole('combobox', { name: /^Provider/ }).inputValue()).toBe('simulator')
      expect(await op.getByLabel('Account SID').isVisible()).toBe(false)
      await op.getByLabel('Display name (the business name customers see)').fill('Toko Kirim Sim')
      await op.getByLabel('WhatsApp number (E.164)').fill('+62 811 0000 8001')
      await op.getByRole('button', { name: 'Create sender' }).click()
      await op.waitForURL(/\/dashboard\/senders\/\d+$/)
      expect(await status(op)).toStartWith('Sender Toko Kirim Sim (+6281100008001, simulator) created.')
    })

    await step(op, 'a Twilio sender: its fields shown when chosen; a refused SID keeps the focus there, the token not kept', async () => {
      await op.goto(`${base}/dashboard/senders`)
      await op.getByRole('combobox', { name: /^Provider/ }).selectOption('twilio')
      expect(await op.getByLabel('Account SID').isVisible()).toBe(true)
      expect(await op.getByLabel('Access token').isVisible()).toBe(false)
      await op.getByLabel('Display name (the business name customers see)').fill('Toko Kirim Jakarta')
      await op.getByLabel('WhatsApp number (E.164)').fill('+6281100008002')
      await op.getByLabel('Account SID').fill('AC-not-a-sid')
      await op.getByLabel('Auth token').fill(TOKEN)
      await op.getByLabel("Messages per second (optional; blank: the provider's)").fill('25')
      await submitted(op, () => op.getByRole('button', { name: 'Create sender' }).click())
      expect(await op.evaluate('document.activeElement.id')).toBe('sender-twilio_account_sid')
      expect(await op.getByLabel('Account SID').getAttribute('aria-invalid')).toBe('true')
      expect(await op.getByLabel('Account SID').inputValue()).toBe('AC-not-a-sid')
      expect(await op.getByLabel('Auth token').inputValue()).toBe('')
      expect(await op.getByRole('combobox', { name: /^Provider/ }).inputValue()).toBe('twilio')
      expect(await op.content()).not.toContain(TOKEN)
      await bothWidths(op, 'sender-create-error')
      await op.getByLabel('Account SID').fill(SID)
      await op.getByLabel('Auth token').fill(TOKEN)
      await op.getByRole('button', { name: 'Create sender' }).click()
      await op.waitForURL(/\/dashboard\/senders\/\d+$/)
      expect(await status(op)).toStartWith('Sender Toko Kirim Jakarta (+6281100008002, twilio) created.')
      expect(await op.locator('#credentials-set').innerText()).toBe('account_sid, auth_token')
    })
    const twilioUrl = op.url()

    await step(op, 'checked with the keyboard: Twilio takes it, the page says so', async () => {
      await op.getByRole('button', { name: 'Check sender Toko Kirim Jakarta' }).focus()
      await submitted(op, () => op.keyboard.press('Enter'))
      expect(op.url()).toBe(twilioUrl)
      expect(await status(op)).toBe(
        'Sender Toko Kirim Jakarta checked: ok. Twilio account "Toko Kirim" is active. ' +
          'Templates synced: 0 listed by twilio, 0 new, 0 changed, 0 unchanged, 0 gone.',
      )
      expect(await op.locator('#last-check').innerText()).toStartWith('ok Twilio account "Toko Kirim" is active')
      expect(twilio.requests).toEqual([{ sid: SID, authorised: true }])
      await bothWidths(op, 'sender-checked')
    })

    await step(op, "what to paste into Twilio's console, with copy buttons", async () => {
      expect(await op.locator('#connect-inbound').innerText()).toEndWith('/provider/twilio/inbound')
      expect(await op.getByRole('button', { name: 'Copy inbound URL' }).isVisible()).toBe(true)
      // The test's PUBLIC_BASE_URL is a loopback address: the page says Twilio cannot reach it.
      expect(await op.getByRole('note').first().innerText()).toContain('which the provider cannot reach')
    })

    await step(op, 'the senders list at both widths: the check and the actions in view', async () => {
      await op.getByRole('link', { name: 'All senders' }).click()
      await op.waitForURL(`${base}/dashboard/senders`)
      expect(await op.locator('tbody tr').count()).toBe(2)
      await op.setViewportSize({ width: 375, height: 800 })
      for (const box of await Promise.all((await op.locator('tbody td[data-label="Actions"] button').all()).map((b) => b.boundingBox()))) {
        expect(box!.x + box!.width).toBeLessThanOrEqual(375)
      }
      await op.setViewportSize({ width: 1440, height: 900 })
      await bothWidths(op, 'senders-list')
    })

    await step(op, "given to the account on its page: the Twilio one as its default, then the simulator's", async () => {
      await op.goto(`${base}/dashboard/accounts/${account.id}`)
      await op.getByRole('combobox', { name: /^Sender/ }).selectOption({ label: 'Toko Kirim Jakarta (+6281100008002, twilio)' })
      expect(await op.getByLabel('Make it the default').isChecked()).toBe(true)
      await submitted(op, () => op.getByRole('button', { name: 'Assign sender' }).click())
      expect(await status(op)).toBe("Sender Toko Kirim Jakarta (+6281100008002) assigned: it is this account's default now.")
      expect(await op.getByLabel('Make it the default').isChecked()).toBe(false)
      await submitted(op, () => op.getByRole('button', { name: 'Assign sender' }).click())
      expect(await status(op)).toBe('Sender Toko Kirim Sim (+6281100008001) assigned.')
      expect(await op.getByText("Every sender is this account's.").isVisible()).toBe(true)
      const senders = await admin('GET', `/accounts/${account.id}/senders`)
      expect(senders.map((s: any) => [s.name, s.default])).toEqual([
        ['Toko Kirim Jakarta', true],
        ['Toko Kirim Sim', false],
      ])
      await bothWidths(op, 'account-senders')
    })

    const member = await signIn(memberLink, '/dashboard')
    await step(member, 'the member sees the senders on the overview, the default marked', async () => {
      const section = member.locator('section[aria-labelledby="senders-title"]')
      const rows = await section.locator('tbody tr').allInnerTexts()
      expect(rows.length).toBe(2)
      expect(rows[0]).toContain('Toko Kirim Jakarta')
      expect(rows[0]).toContain('default')
      expect(await member.content()).not.toContain(SID)
      await bothWidths(member, 'overview-senders')
    })

    await step(member, 'the campaign form offers both, the default chosen; a campaign from the other one', async () => {
      await member.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Campaigns' }).click()
      await member.waitForURL(`${base}/dashboard/campaigns`)
      const sender = member.getByRole('combobox', { name: /^Sender/ })
      expect(await sender.locator('option').allInnerTexts()).toEqual([
        'Toko Kirim Jakarta (+6281100008002, twilio), default',
        'Toko Kirim Sim (+6281100008001, simulator)',
      ])
      expect(await sender.locator('option:checked').innerText()).toBe('Toko Kirim Jakarta (+6281100008002, twilio), default')
      await noViolations(member)
      await member.getByLabel('Name', { exact: true }).fill('Kirim promo')
      await member.getByRole('combobox', { name: /^Template/ }).selectOption({ label: template.name })
      await sender.selectOption({ label: 'Toko Kirim Sim (+6281100008001, simulator)' })
      await member.getByRole('button', { name: 'Create campaign' }).click()
      await member.waitForURL(/\/dashboard\/campaigns\/\d+$/)
      expect(await member.locator('#campaign-sender').innerText()).toBe('Toko Kirim Sim (+6281100008001)')
    })

    await step(op, 'the token is in no page and no log line', async () => {
      for (const path of ['/dashboard/senders', twilioUrl.slice(base.length), '/dashboard/audit', `/dashboard/accounts/${account.id}`]) {
        await op.goto(`${base}${path}`)
        expect({ path, shown: (await op.content()).includes(TOKEN) }).toEqual({ path, shown: false })
      }
      expect(lines.some((l) => l.includes('path=/dashboard/senders'))).toBe(true)
      expect(lines.filter((l) => l.includes(TOKEN))).toEqual([])
    })

    await step(
      op,
      "a Meta sender's page: the callback URL, the verify token on demand, the fields to subscribe; no app secret",
      async () => {
        const meta = await admin('POST', '/senders', {
          provider: 'meta',
          name: 'Toko Kirim Meta',
          number: '+6281100008003',
          credentials: {
            access_token: 'EAAbrowserToken0123456789abcdef',
            phone_number_id: '108800008003',
            app_secret: 'app-secret-browser-0123456789',
            business_account_id: '208800008003',
            verify_token: 'verify-browser-token-42',
          },
        })
        await op.goto(`${base}/dashboard/senders/${meta.id}`)
        expect(await op.locator('#connect-callback').innerText()).toEndWith('/provider/meta/webhook')
        expect(await op.locator('#connect-verify-token').isVisible()).toBe(false)
        await op.getByText("Show the verify token (this sender's own)").click()
        expect(await op.locator('#connect-verify-token').innerText()).toBe('verify-browser-token-42')
        expect(await op.locator('#connect-fields li').count()).toBe(8)
        expect(await op.content()).not.toContain('app-secret-browser-0123456789')
        await op.locator('#connect').scrollIntoViewIfNeeded()
        await bothWidths(op, 'sender-connect-meta')
      },
    )
  }, 240_000)
})
