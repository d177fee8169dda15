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

  test('an agent marks read on opening, quotes, sees a reaction and a new message arrive; STOP; the log and the overview', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Manners', balance: 1_000 })
    await admin('PUT', '/price', { cost_per_message: 10, account_id: account.id })
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'crm' })).key
    const template = await admin('POST', `/accounts/${account.id}/templates`, { name: 'Ready', body: 'Halo {{name}}, pesanan Anda siap' })
    await admin('PUT', `/templates/${template.id}/bindings/simulator`, { ref: 'order_ready', variables: ['name'] })
    for (const [name, phone] of [
      ['Dewi Lestari', '081277720001'],
      ['Eko Prasetyo', '081277720002'],
    ]) {
      expect((await call('POST', '/api/v1/contacts', { name, phone }, key)).status).toBe(201)
      const sent = await call('POST', '/api/v1/messages/send', { to: phone, template_id: template.id, variables: { name } }, key)
      expect(sent.status).toBe(200)
    }
    await admin('POST', '/simulator/inbound', { phone: '081277720001', body: 'Bisa dikirim Sabtu?', name: 'Dewi Lestari' })
    await admin('POST', '/simulator/inbound', { phone: '081277720002', body: 'STOP', name: 'Eko Prasetyo' })
    const link = (await admin('POST', `/accounts/${account.id}/members`, { email: 'manners@example.com' })).link
    const page = await signIn(link, '/dashboard')

    await step(page, 'inbox settings: mark read on opening, by keyboard', async () => {
      await page.goto(`${base}/dashboard/inbox`)
      expect(await page.locator('#marks-read-help').innerText()).toContain('The customer sees read receipts')
      await page.getByRole('checkbox', { name: 'Mark a conversation read when an agent opens it' }).check()
      await web.submitted(page, () => page.getByRole('button', { name: 'Save inbox settings' }).click())
      expect(await web.status(page)).toContain('Opening a conversation now marks')
      await bothWidths(page, 'inbox-settings')
    })

    await step(page, 'opening marks read; a reply quoting the customer; the quote in the thread', async () => {
      await page.getByRole('link', { name: 'Dewi Lestari (+6281277720001)' }).click()
      await page.waitForURL(`${base}/dashboard/inbox/6281277720001`)
      const [marked] = await web.sql<{ at: Date | null }[]>`
        select read_marked_at as at from inbound_messages where phone = '+6281277720001'`
      expect(marked!.at).not.toBeNull()
      await page.getByRole('link', { name: 'Reply quoting this message' }).click()
      expect(await page.locator('#reply-quote').innerText()).toBe('Quoting their message: Bisa dikirim Sabtu?')
      await page.getByRole('textbox', { name: 'Your reply' }).fill('Bisa, Sabtu pagi.')
      await web.submitted(page, () => page.getByRole('button', { name: 'Send reply' }).click())
      expect(await web.status(page)).toBe('Reply sent; 10 IDR charged.')
      const last = await page.locator('.thread li').last().innerText()
      expect(last).toContain('Quoting their message: Bisa dikirim Sabtu?')
      expect(last).toContain('Bisa, Sabtu pagi.')
    })

    await step(page, 'while open: a reaction and a new message appear, and the live region says so', async () => {
      const [ours] = await web.sql<{ sid: string }[]>`select message_sid as sid from messages where body = 'Bisa, Sabtu pagi.'`
      await web.sql`
        insert into inbound_messages (provider, provider_message_id, account_id, phone, type, text, content, raw, received_at)
        values ('simulator', 'browser-react-1', ${account.id}, '+6281277720001', 'reaction', '👍',
                ${JSON.stringify({ emoji: '👍', message_id: ours!.sid })}::text::jsonb, '{}'::jsonb, now())`
      await admin('POST', '/simulator/inbound', { phone: '081277720001', body: 'Terima kasih banyak!' })
      await page.locator('#thread-news').filter({ hasText: 'new message' }).waitFor({ timeout: 20_000 })
      expect(await page.locator('.thread').innerText()).toContain('Terima kasih banyak!')
      expect(await page.locator('.thread li', { hasText: 'Bisa, Sabtu pagi.' }).last().innerText()).toContain('👍 from the customer')
      await bothWidths(page, 'inbox-conversation-manners')
    })

    await step(page, 'a customer who wrote STOP: no reply box, and why', async () => {
      await page.goto(`${base}/dashboard/inbox/6281277720002`)
      expect(await page.locator('#opted-out-why').innerText()).toContain('This customer has opted out')
      expect(await page.getByRole('textbox', { name: 'Your reply' }).count()).toBe(0)
      await bothWidths(page, 'inbox-conversation-opted-out')
    })

    await step(page, 'the message log: search by name, CSV link, error codes; the overview', async () => {
      await page.goto(`${base}/dashboard/messages`)
      await page.getByRole('searchbox', { name: 'Name or text contains' }).fill('dewi')
      await web.submitted(page, () => page.getByRole('button', { name: 'Filter' }).click())
      const rows = await page.locator('tbody tr').allInnerTexts()
      expect(rows.length).toBe(2)
      expect(await page.getByRole('link', { name: 'Export CSV' }).getAttribute('href')).toBe('/dashboard/messages.csv?q=dewi')
      await bothWidths(page, 'messages-search')
      await page.goto(`${base}/dashboard/error-codes`)
      await bothWidths(page, 'error-codes')
      await page.goto(`${base}/dashboard`)
      expect(await page.locator('#rates').innerText()).toContain('messages that went out')
      await bothWidths(page, 'overview-rates')
    })
  }, 180_000)
})
