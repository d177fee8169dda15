// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The inbox in headless Chromium (see browser.outer.test.ts for the set-up), at a desktop's width and a
// phone's, on a simulator that plays WhatsApp's 24-hour window (SIM_REQUIRE_TEMPLATE) with the
// service's check on: a member opens the inbox from the navigation, replies by keyboard inside the
// window (the reply shows in the thread, charged), and outside it is offered only the account's bound
// template, which it sends. The pages pass axe-core at both widths; screenshots are kept.

import { describe, expect, test } from 'bun:test'
import { ADMIN_TOKEN } from '../helpers/app'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())('the inbox in Chromium', () => {
  const web = dashboardInChromium('dashboard-inbox-', () => ({ SIM_REQUIRE_TEMPLATE: 'true', SIM_DELIVERED_MS: '50', SIM_READ_MS: '100' }))
  const { admin, bothWidths, signIn } = web
  const call = (method: string, path: string, body?: unknown, token = ADMIN_TOKEN) =>
    fetch(`${web.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))

  test('reply inside the window by keyboard; outside it only the bound template is offered, and it goes', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Inbox', balance: 1_000 })
    await admin('PUT', '/price', { cost_per_message: 10, account_id: account.id })
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'crm' })).key
    const template = await admin('POST', `/accounts/${account.id}/templates`, {
      name: 'Order ready',
      body: 'Hi {{name}}, your order is ready',
    })
    await admin('PUT', `/templates/${template.id}/bindings/simulator`, { ref: 'order_ready', variables: ['name'] })
    for (const [name, phone] of [
      ['Budi Santoso', '081277710001'],
      ['Sari Dewi', '081277710002'],
    ]) {
      expect((await call('POST', '/api/v1/contacts', { name, phone }, key)).status).toBe(201)
      const sent = await call('POST', '/api/v1/messages/send', { to: phone, template_id: template.id, variables: { name } }, key)
      expect(sent.status).toBe(200)
    }
    // Budi answers: his window opens.
    await admin('POST', '/simulator/inbound', { phone: '081277710001', body: 'Bisa diantar besok pagi?', name: 'Budi Santoso' })
    const link = (await admin('POST', `/accounts/${account.id}/members`, { email: 'inbox@example.com' })).link
    const page = await signIn(link, '/dashboard')

    await step(page, 'the inbox from the navigation: Budi first, his window open', async () => {
      await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Inbox' }).click()
      await page.waitForURL(`${base}/dashboard/inbox`)
      const rows = await page.locator('tbody tr').allInnerTexts()
      expect(rows.length).toBe(2)
      expect(rows[0]).toContain('Budi Santoso (+6281277710001)')
      expect(rows[0]).toContain('They wrote: Bisa diantar besok pagi?')
      expect(rows[0]).toContain('window open')
      expect(rows[1]).toContain('window closed')
      await bothWidths(page, 'inbox')
    })

    await step(page, 'inside the window: a reply typed and sent by keyboard shows in the thread', async () => {
      await page.getByRole('link', { name: 'Budi Santoso (+6281277710001)' }).click()
      await page.waitForURL(`${base}/dashboard/inbox/6281277710001`)
      expect(await page.locator('#window-state').innerText()).toStartWith('The 24-hour window is open until ')
      await page.getByRole('textbox', { name: 'Your reply' }).focus()
      await page.keyboard.type('Bisa, kami antar jam 9.')
      await page.keyboard.press('Tab')
      const loaded = page.waitForEvent('load')
      await page.keyboard.press('Enter')
      await loaded
      expect(await page.getByRole('status').first().innerText()).toBe('Reply sent; 10 IDR charged.')
      const bubbles = await page.locator('.thread li').allInnerTexts()
      expect(bubbles.at(-1)).toContain('Bisa, kami antar jam 9.')
      expect(bubbles.at(-2)).toContain('Bisa diantar besok pagi?')
      await bothWidths(page, 'inbox-conversation-open')
    })

    await step(page, 'outside the window: no free-form box, why, and the bound template, which goes', async () => {
      await page.goto(`${base}/dashboard/inbox/6281277710002`)
      expect(await page.locator('#window-state').innerText()).toStartWith('The 24-hour window is closed')
      expect(await page.getByRole('textbox', { name: 'Your reply' }).count()).toBe(0)
      expect(await page.locator('#window-closed-why').innerText()).toContain('only approved templates')
      await page.getByRole('combobox', { name: 'Approved template' }).selectOption({ label: 'Order ready' })
      await page.getByRole('button', { name: 'Choose' }).click()
      await page.waitForURL(/template=/)
      expect(await page.getByLabel('Value of {{name}}').inputValue()).toBe('Sari Dewi')
      await bothWidths(page, 'inbox-conversation-closed')
      await page.getByRole('button', { name: 'Send template' }).click()
      await page.waitForURL(`${base}/dashboard/inbox/6281277710002`)
      expect(await page.getByRole('status').first().innerText()).toBe('Reply sent; 10 IDR charged.')
      const bubbles = await page.locator('.thread li').allInnerTexts()
      expect(bubbles.at(-1)).toContain('Hi Sari Dewi, your order is ready')
    })
    const balance = (await call('GET', '/api/v1/balance', undefined, key)).body.data.wa_balance
    expect(balance).toBe(1_000 - 4 * 10)
  }, 120_000)
})
