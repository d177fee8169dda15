// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// A contact's attributes in headless Chromium (issue 30), at a desktop's width and a phone's: a member
// opens a contact from the list, changes its attributes with the keyboard (one `name = value` a line;
// a bad name is refused at the field, which keeps the focus and the text), and imports a CSV file with
// attribute columns (a bad row reported by its line, an empty cell no attribute). The public API
// (GET /api/v1/contacts...) answers the attributes the pages wrote. Every page passes axe-core.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'

describe.skipIf(skipBrowserTests())("a contact's attributes in Chromium", () => {
  const web = dashboardInChromium('dashboard-attributes-')
  const { admin, status, submitted, bothWidths, signIn } = web

  test('a member edits a contact’s attributes and imports contacts with attribute columns; the API answers them', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Kirim', balance: 10_000 })
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'ERP' })).key as string
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
    const made = await api('POST', '/contacts', {
      name: 'Budi Santoso',
      phone: '0812-3456-9101',
      city: 'Jakarta',
      tags: 'vip',
      attributes: { order_id: 'INV-2041', courier: 'JNE REG', old_note: 'call after 5 pm' },
    })
    expect(made.status).toBe(201)
    const id = made.body.data.id as number
    const member = await signIn((await admin('POST', `/accounts/${account.id}/members`, { email: 'kirim@example.com' })).link, '/dashboard')
    const attributesField = () => member.getByRole('textbox', { name: /^Attributes/ })
    const shown = () =>
      member.evaluate(
        `[...document.querySelectorAll('#attribute-list dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent])`,
      ) as Promise<[string, string][]>

    await step(member, 'the contact opened from the list, its attributes shown and in its form', async () => {
      await member.goto(`${base}/dashboard/contacts`)
      await member.getByRole('link', { name: 'Budi Santoso' }).click()
      await member.waitForURL(`${base}/dashboard/contacts/${id}`)
      expect(await shown()).toEqual([
        ['courier', 'JNE REG'],
        ['old_note', 'call after 5 pm'],
        ['order_id', 'INV-2041'],
      ])
      expect(await attributesField().inputValue()).toBe('courier = JNE REG\nold_note = call after 5 pm\norder_id = INV-2041')
      await bothWidths(member, 'contact-attributes')
    })

    await step(member, 'a bad name refused at the field, which keeps the focus and what was typed', async () => {
      await attributesField().focus()
      await member.keyboard.press('Control+A')
      await member.keyboard.type('order_id = INV-2042\ndue date = 5 Desember')
      await member.keyboard.press('Tab')
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(await member.evaluate('document.activeElement.name')).toBe('attributes')
      expect(await attributesField().getAttribute('aria-invalid')).toBe('true')
      expect(await attributesField().inputValue()).toBe('order_id = INV-2042\ndue date = 5 Desember')
      expect(await member.locator('.field-error').innerText()).toContain('"due date": a key is made of letters, digits and underscores')
      // Nothing changed.
      expect((await api('GET', `/contacts/${id}`)).body.data.attributes).toEqual({
        order_id: 'INV-2041',
        courier: 'JNE REG',
        old_note: 'call after 5 pm',
      })
      await bothWidths(member, 'contact-attributes-refused')
    })

    await step(member, 'the attributes saved: one changed, one added, one removed', async () => {
      await member.keyboard.press('Control+A')
      await member.keyboard.type('order_id = INV-2042\ncourier = JNE REG\ndue_date = 5 Desember')
      await member.keyboard.press('Tab')
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(member.url()).toBe(`${base}/dashboard/contacts/${id}`)
      expect(await status(member)).toBe('Attributes of Budi Santoso saved: 3 attributes.')
      expect(await shown()).toEqual([
        ['courier', 'JNE REG'],
        ['due_date', '5 Desember'],
        ['order_id', 'INV-2042'],
      ])
      const read = await api('GET', `/contacts/${id}`)
      expect(read.status).toBe(200)
      expect(read.body.data.attributes).toEqual({ order_id: 'INV-2042', courier: 'JNE REG', due_date: '5 Desember' })
    })

    await step(member, 'a CSV file with attribute columns imported: a bad row reported, the valid ones in', async () => {
      await member.goto(`${base}/dashboard/contacts`)
      const csv = [
        'name,phone,city,tags,attr:order_id,attr:due_date,attr:preferred_delivery_window_for_weekday_orders',
        'Siti Rahma,0813-2222-9102,Bandung,vip,INV-2043,12 Desember,after 17:00',
        'Agus Wijaya,0815-7777-9103,Surabaya,reseller,INV-2044,,',
        'Nobody,12345,Medan,,INV-2045,1 Januari,',
      ].join('\n')
      await member.getByLabel('CSV file').setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
      await member.getByRole('button', { name: 'Import contacts' }).focus()
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(member.url()).toBe(`${base}/dashboard/contacts/import`)
      expect(await status(member)).toBe('2 contacts imported.')
      expect(await member.locator('#imported').innerText()).toBe('2')
      expect(await member.locator('#bad-rows').innerText()).toBe('1')
      const line = await member.locator('main table tbody tr').first().locator('td').allInnerTexts()
      expect(line[0]).toBe('4')
      await bothWidths(member, 'contacts-import-report')
    })

    const listed = await api('GET', '/contacts?limit=10')
    expect(listed.status).toBe(200)
    const byName = Object.fromEntries(
      (listed.body.data.items as { name: string; phone: string; attributes: Record<string, string> }[]).map((c) => [
        c.name,
        [c.phone, c.attributes],
      ]),
    )
    expect(byName).toEqual({
      'Budi Santoso': ['+6281234569101', { order_id: 'INV-2042', courier: 'JNE REG', due_date: '5 Desember' }],
      'Siti Rahma': [
        '+6281322229102',
        { order_id: 'INV-2043', due_date: '12 Desember', preferred_delivery_window_for_weekday_orders: 'after 17:00' },
      ],
      // An empty cell is no attribute.
      'Agus Wijaya': ['+6281577779103', { order_id: 'INV-2044' }],
    })

    await step(member, 'the list shows each contact’s attributes, a line each; a long name fits a phone', async () => {
      await member.goto(`${base}/dashboard/contacts`)
      const row = member.locator('tbody tr', { hasText: 'Siti Rahma' })
      expect(await row.locator('td[data-label="Attributes"] li').allInnerTexts()).toEqual([
        'due_date = 12 Desember',
        'order_id = INV-2043',
        'preferred_delivery_window_for_weekday_orders = after 17:00',
      ])
      await bothWidths(member, 'contacts-with-attributes')
      await row.getByRole('link', { name: 'Siti Rahma' }).click()
      await member.waitForURL(/\/dashboard\/contacts\/\d+$/)
      expect((await shown()).at(-1)).toEqual(['preferred_delivery_window_for_weekday_orders', 'after 17:00'])
      await bothWidths(member, 'contact-long-attribute')
    })
  }, 120_000)
})
