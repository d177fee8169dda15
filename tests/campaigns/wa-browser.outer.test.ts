// Outer ring (real time): it drives a real Chromium (playwright-core), and the simulator's review of a template runs on real time.
// A campaign of a WhatsApp template in headless Chromium (issue 30), at a desktop's width and a phone's:
// a member picks the approved template in the campaign form with the keyboard, and for each of its
// parameters (a text header, body {{1}} to {{3}}, a URL button) chooses where the value comes from: a
// contact's field, one of its attributes or a constant. A constant left empty is refused at its field
// (the focus there), every choice kept; once given, the campaign is created as a draft, its page lists the sources in the
// template's order, and the public API and the database keep the same mapping. The form and the
// campaign's page pass axe-core at both widths.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'
import { until } from '../helpers/wait'

describe.skipIf(skipBrowserTests())('a WhatsApp template campaign in Chromium', () => {
  // The simulator approves a submitted template at its next step.
  const web = dashboardInChromium('dashboard-wa-campaign-', () => ({ SIM_TEMPLATE_APPROVAL_MS: '0' }))
  const { admin, status, submitted, bothWidths, signIn } = web

  test('the member maps each parameter to a field, an attribute or a constant, and the campaign keeps the mapping', async () => {
    const base = web.url
    const account = await admin('POST', '/accounts', { name: 'Toko Kirim', balance: 100_000 })
    const key = (await admin('POST', `/accounts/${account.id}/keys`, { label: 'ERP' })).key as string
    const api = (method: string, path: string, body?: unknown) =>
      fetch(`${base}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
    const sender = await admin('POST', '/senders', { provider: 'simulator', name: 'Toko Kirim', number: '+6281100009001' })
    await admin('PUT', `/accounts/${account.id}/senders/${sender.id}`)
    const template = await admin('POST', `/senders/${sender.id}/templates`, {
      name: 'order_shipped',
      language: 'id',
      category: 'UTILITY',
      components: [
        { type: 'HEADER', format: 'TEXT', text: 'Pesanan {{1}}', example: { header_text: ['INV-1001'] } },
        {
          type: 'BODY',
          text: 'Halo {{1}}, pesanan {{2}} sudah dikirim lewat {{3}}. Terima kasih.',
          example: { body_text: [['Budi', 'INV-1001', 'JNE']] },
        },
        {
          type: 'BUTTONS',
          buttons: [{ type: 'URL', text: 'Lacak paket', url: 'https://tokobudi.example/lacak/{{1}}', example: ['JNE0012345678901'] }],
        },
      ],
    })
    await until(
      () => admin('GET', `/whatsapp-templates/${template.id}`),
      (t) => t.status === 'approved',
      30_000,
      "the simulator's approval",
    )
    for (const [name, phone, attributes] of [
      ['Budi Santoso', '0812-3456-9001', { order_id: 'INV-2041', tracking_no: 'JNE0012345678901' }],
      ['Siti Rahma', '0813-2222-9002', { order_id: 'INV-2042', tracking_no: 'SCP7788990011' }],
    ] as const) {
      expect((await api('POST', '/contacts', { name, phone, tags: 'vip', attributes })).status).toBe(201)
    }
    const segment = await admin('POST', `/accounts/${account.id}/segments`, { name: 'VIP customers', tag: 'vip' })
    const member = await signIn((await admin('POST', `/accounts/${account.id}/members`, { email: 'kirim@example.com' })).link, '/dashboard')

    await step(member, 'the template chosen with the keyboard', async () => {
      await member.goto(`${base}/dashboard/campaigns`)
      await member.getByLabel('WhatsApp template (its parameters filled per contact)').focus()
      await member.keyboard.type('order_shipped')
      await member.keyboard.press('Tab')
      expect(await member.evaluate('document.activeElement.textContent.trim()')).toBe('Choose template')
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(member.url()).toBe(`${base}/dashboard/campaigns?wa_template=${template.id}`)
      const legend = await member.locator('main fieldset legend').first().innerText()
      expect(legend).toBe('WhatsApp template order_shipped (id): where each parameter comes from')
      await bothWidths(member, 'campaign-wa-form')
    })

    // Each parameter: the source picked by typing its option's first letters, then its text in the field after it.
    const sources: [string, string, string][] = [
      ['Header {{1}}', 'Contact attribute', 'order_id'],
      ['Body {{1}}', "Contact's name", ''],
      ['Body {{2}}', 'Contact attribute', 'order_id'],
      ['Body {{3}}', 'Constant', ''],
      ["Button 1 (URL's {{1}})", 'Contact attribute', 'tracking_no'],
    ]
    await step(member, 'a name, and the sources chosen by keyboard; the constant left empty', async () => {
      await member.getByLabel('Name', { exact: true }).fill('Order shipped, November')
      for (const [slot, option, text] of sources) {
        await member.getByRole('combobox', { name: new RegExp(`^${slot.replace(/[(){}]/g, '\\$&')} \\(e\\.g\\.`) }).focus()
        await member.keyboard.type(option)
        await member.keyboard.press('Tab')
        expect(await member.evaluate('document.activeElement.labels[0].textContent')).toBe(`${slot}: attribute key or constant text`)
        if (text) await member.keyboard.type(text)
      }
      expect(await member.locator('select[name="from:variables.3"]').inputValue()).toBe('constant')
      expect(await member.locator('select[name="from:header"]').inputValue()).toBe('attribute')
      expect(await member.locator('select[name="from:buttons.0"]').inputValue()).toBe('attribute')
      await submitted(member, () => member.keyboard.press('Enter'))
      // Said at the constant's field, which has the focus.
      const constant = member.getByLabel('Body {{3}}: attribute key or constant text')
      expect(await member.evaluate('document.activeElement.name')).toBe('value:variables.3')
      expect(await constant.getAttribute('aria-invalid')).toBe('true')
      const said = await constant.getAttribute('aria-describedby')
      expect(await member.locator(`[id="${said}"]`).innerText()).toBe('parameters.variables.3.constant: must not be empty')
      // Every choice and text kept.
      for (const [name, value] of [
        ['from:header', 'attribute'],
        ['value:header', 'order_id'],
        ['from:variables.1', 'name'],
        ['from:variables.2', 'attribute'],
        ['value:variables.2', 'order_id'],
        ['from:variables.3', 'constant'],
        ['from:buttons.0', 'attribute'],
        ['value:buttons.0', 'tracking_no'],
      ] as const) {
        expect({ name, value: await member.locator(`[name="${name}"]`).inputValue() }).toEqual({ name, value })
      }
      expect(await member.getByLabel('Name', { exact: true }).inputValue()).toBe('Order shipped, November')
      await bothWidths(member, 'campaign-wa-form-refused')
    })

    let campaignId = 0
    await step(member, 'the constant given: the campaign created, its page listing the sources', async () => {
      await member.keyboard.type('JNE REG')
      await submitted(member, () => member.keyboard.press('Enter'))
      expect(member.url()).toMatch(new RegExp(`^${base}/dashboard/campaigns/\\d+$`))
      campaignId = Number(member.url().split('/').pop())
      expect(await status(member)).toBe('Campaign Order shipped, November created as a draft: nothing is sent until you run it.')
      expect(await member.locator('#campaign-parameters li').allInnerTexts()).toEqual([
        'header: attribute order_id',
        "{{1}}: contact's name",
        '{{2}}: attribute order_id',
        '{{3}}: constant "JNE REG"',
        'button 1: attribute tracking_no',
      ])
      expect(await member.getByRole('link', { name: 'order_shipped (id, WhatsApp)' }).getAttribute('href')).toBe(
        `/dashboard/whatsapp-templates/${template.id}`,
      )
      await bothWidths(member, 'campaign-wa-created')
    })

    const mapping = {
      header: { attribute: 'order_id' },
      variables: { '1': { field: 'name' }, '2': { attribute: 'order_id' }, '3': { constant: 'JNE REG' } },
      buttons: { '0': { attribute: 'tracking_no' } },
    }
    const read = await api('GET', `/campaigns/${campaignId}`)
    expect(read.status).toBe(200)
    expect(read.body.data.campaign).toMatchObject({
      name: 'Order shipped, November',
      status: 'draft',
      template_id: template.id,
      segment_id: segment.id,
      sender_id: sender.id,
      parameters: mapping,
    })
    const [row] = await web.sql<{ wa_template_id: string; template_id: string | null; template_parameters: unknown }[]>`
      select wa_template_id, template_id, template_parameters from campaigns where id = ${campaignId}`
    expect({ ...row!, wa_template_id: Number(row!.wa_template_id) }).toEqual({
      wa_template_id: template.id,
      template_id: null,
      template_parameters: mapping,
    })
  }, 120_000)
})
