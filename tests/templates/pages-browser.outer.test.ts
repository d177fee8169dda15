// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// WhatsApp templates in headless Chromium, at a desktop's width and a phone's (issue 30): an operator
// syncs a Meta sender's templates from its business account (a local fake of the Graph API) with the
// keyboard, opens one (its parameters, its WhatsApp-like preview, its history), creates one from the
// Cloud API's JSON (a refusal shown at the field, keeping the focus there), and a member of an account
// with that sender sees the templates it may use with their parameters. Each page passes axe-core.

import { describe, expect, test } from 'bun:test'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium } from '../helpers/dashboard-browser'
import { fakeGraph, type FakeGraph } from '../helpers/fake-graph'
import { META_A } from '../helpers/senders'

const WABA = META_A.credentials.business_account_id

describe.skipIf(skipBrowserTests())('WhatsApp templates in Chromium', () => {
  let graph: FakeGraph
  const web = dashboardInChromium('dashboard-wa-templates-', (cleanup) => {
    graph = fakeGraph()
    cleanup(() => graph.stop())
    graph.phone(META_A.credentials.phone_number_id, META_A.credentials.access_token, {
      display_phone_number: '62 811-0000-0001',
      verified_name: 'Warung A',
      quality_rating: 'GREEN',
      appSecret: META_A.credentials.app_secret,
    })
    graph.accountOf.set(META_A.credentials.phone_number_id, WABA)
    graph.template(WABA, {
      name: 'invoice_due',
      language: 'id',
      category: 'UTILITY',
      status: 'APPROVED',
      parameter_format: 'POSITIONAL',
      components: [
        { type: 'HEADER', format: 'TEXT', text: 'Tagihan {{1}}', example: { header_text: ['INV-1001'] } },
        {
          type: 'BODY',
          text: 'Halo {{1}}, tagihan {{2}} sebesar {{3}} jatuh tempo {{4}}. Terima kasih.',
          example: { body_text: [['Budi', 'INV-1001', 'Rp 1.250.000', '5 Desember']] },
        },
        { type: 'FOOTER', text: 'Balas STOP untuk berhenti' },
        {
          type: 'BUTTONS',
          buttons: [
            {
              type: 'URL',
              text: 'Bayar sekarang',
              url: 'https://pay.example.com/i/{{1}}',
              example: ['https://pay.example.com/i/INV-1001'],
            },
            { type: 'QUICK_REPLY', text: 'Sudah bayar' },
          ],
        },
      ],
      quality_score: { score: 'GREEN' },
    })
    graph.template(WABA, {
      name: 'promo_akhir_tahun',
      language: 'id',
      category: 'MARKETING',
      status: 'REJECTED',
      rejected_reason: 'PROMOTIONAL',
      parameter_format: 'NAMED',
      components: [
        {
          type: 'BODY',
          text: 'Diskon untuk {{first_name}} sampai akhir tahun!',
          example: { body_text_named_params: [{ param_name: 'first_name', example: 'Budi' }] },
        },
      ],
    })
    return { META_API_BASE: graph.apiBase }
  })
  const { admin, status, submitted, noViolations, bothWidths, signIn } = web

  test("an operator syncs, reads and creates a sender's templates; the account's member sees them with their parameters", async () => {
    const base = web.url
    const sender = await admin('POST', '/senders', { provider: 'meta', name: 'Warung A', ...META_A })
    const account = await admin('POST', '/accounts', { name: 'Warung A', balance: 50_000 })
    await admin('PUT', `/accounts/${account.id}/senders/${sender.id}`, { default: true })
    const memberLink = (await admin('POST', `/accounts/${account.id}/members`, { email: 'warung@example.com' })).link
    const op = await signIn((await admin('POST', '/operators', { email: 'templates-ops@example.com' })).link, '/dashboard/accounts')

    await step(op, 'Synced when the sender was created; Sync templates again with the keyboard, on the sender page', async () => {
      await op.goto(`${base}/dashboard/senders/${sender.id}`)
      expect(await op.locator('#last-sync').innerText()).toContain('(when it was created): 2 listed by meta, 2 new')
      await op.getByRole('button', { name: 'Sync templates' }).focus()
      await submitted(op, () => op.keyboard.press('Enter'))
      expect(await status(op)).toBe('Templates synced: 2 templates listed by meta, 0 new, 0 changed, 2 unchanged, 0 gone.')
      const rows = await op.locator('section[aria-labelledby="templates-title"] tbody tr').allInnerTexts()
      expect(rows.length).toBe(2)
      expect(rows[1]).toContain('rejected (PROMOTIONAL)')
      await bothWidths(op, 'sender-wa-templates')
    })

    await step(op, "a template's page: parameters, preview, history", async () => {
      await op.getByRole('link', { name: 'invoice_due' }).click()
      await op.waitForURL(/\/dashboard\/senders\/\d+\/templates\/\d+$/)
      expect(await op.getByRole('heading', { level: 1 }).innerText()).toBe('WhatsApp template invoice_due')
      const preview = op.getByRole('figure', { name: 'Preview of invoice_due' })
      expect(await preview.locator('.wa-body').innerText()).toBe('Halo {{1}}, tagihan {{2}} sebesar {{3}} jatuh tempo {{4}}. Terima kasih.')
      expect(await preview.locator('.wa-buttons li').count()).toBe(2)
      expect(await op.locator('#template-status').innerText()).toBe('approved')
      await bothWidths(op, 'wa-template')
      await op.setViewportSize({ width: 375, height: 800 })
      const box = await preview.boundingBox()
      expect(box!.x + box!.width).toBeLessThanOrEqual(375)
      await op.setViewportSize({ width: 1440, height: 900 })
    })

    await step(op, 'New template, field by field: the preview follows the typing; a refusal is at its field; by keyboard', async () => {
      await op.goto(`${base}/dashboard/senders/${sender.id}`)
      await op.getByRole('link', { name: 'New template' }).click()
      await op.waitForURL(`${base}/dashboard/senders/${sender.id}/templates/new`)
      await noViolations(op)
      const preview = op.locator('#template-preview')
      await op.getByLabel('Name (lowercase letters, digits, underscores)').fill('order_ready')
      await op.getByLabel('Body text').fill('Hi {{1}}, order {{2}} is ready.')
      await op.getByLabel('Examples, one a line, in the order the parameters first appear').fill('Budi\nA-17')
      await op.getByLabel('Footer text (optional, no parameters)').fill('Thanks for shopping')
      // The live preview (the script) shows what was typed, parameters marked, at once.
      expect(await preview.locator('.wa-body').innerText()).toBe('Hi {{1}}, order {{2}} is ready.')
      expect(await preview.locator('.wa-body mark').count()).toBe(2)
      expect(await preview.locator('.wa-footer').innerText()).toBe('Thanks for shopping')
      expect(await op.getByRole('figure', { name: 'Preview of order_ready' }).isVisible()).toBe(true)
      // A URL button shows only its own fields; the phone field is hidden until the kind asks for it.
      expect(await op.getByLabel('Button 1 URL (URL buttons; {{1}} may end it)').isVisible()).toBe(true)
      expect(await op.getByLabel('Button 1 phone number (+ and digits)').isVisible()).toBe(false)
      await op.getByLabel('Button 1 kind').selectOption('PHONE_NUMBER')
      expect(await op.getByLabel('Button 1 phone number (+ and digits)').isVisible()).toBe(true)
      await op.getByLabel('Button 1 phone number (+ and digits)').fill('call us')
      await op.getByLabel('Button 1 text').fill('Call us')
      expect(await preview.locator('.wa-buttons li').allInnerTexts()).toEqual(['Call us'])
      await bothWidths(op, 'wa-template-new-fields')
      // Submitted by keyboard: the refusal is at the phone field, which has the focus.
      await op.getByRole('button', { name: 'Create and submit template' }).focus()
      await submitted(op, () => op.keyboard.press('Enter'))
      expect(await op.evaluate('document.activeElement.id')).toBe('editor-button_phone_0')
      expect(await op.locator('#editor-button_phone_0-error').innerText()).toStartWith('components[3].buttons[0].phone_number: ')
      await bothWidths(op, 'wa-template-new-error')
      await op.getByLabel('Button 1 phone number (+ and digits)').fill('+6281234567890')
      await submitted(op, () => op.getByRole('button', { name: 'Create and submit template' }).click())
      await op.waitForURL(/\/dashboard\/senders\/\d+\/templates\/\d+$/)
      expect(await status(op)).toBe('Template order_ready (en_US) created: pending.')
    })

    await step(
      op,
      'New template from JSON (advanced): a refusal at the field keeps the focus there; the corrected one is submitted to Meta',
      async () => {
        await op.goto(`${base}/dashboard/senders/${sender.id}/templates/new`)
        await op.getByText("Advanced: the template as the Cloud API's JSON").click()
        const json = op.getByLabel('Template JSON')
        const definition = JSON.parse(await json.inputValue())
        definition.name = 'invoice_reminder'
        definition.components[1].text = '{{1}}, invoice {{2}} is due.'
        await json.fill(JSON.stringify(definition, null, 2))
        await submitted(op, () => op.getByRole('button', { name: 'Create and submit from JSON' }).click())
        expect(await op.evaluate('document.activeElement.id')).toBe('template-definition')
        expect(await json.getAttribute('aria-invalid')).toBe('true')
        expect(await op.locator('#template-definition-error').innerText()).toStartWith('components[1].text: ')
        await bothWidths(op, 'wa-template-new-json-error')
        definition.components[1].text = 'Hello {{1}}, invoice {{2}} of {{3}} is due on {{4}}. Thank you.'
        await json.fill(JSON.stringify(definition, null, 2))
        await op.getByRole('button', { name: 'Create and submit from JSON' }).click()
        await op.waitForURL(/\/dashboard\/senders\/\d+\/templates\/\d+$/)
        expect(await status(op)).toBe('Template invoice_reminder (en_US) created: pending.')
        expect(graph.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/${WABA}/message_templates`)).length).toBe(2)
      },
    )

    await step(op, "edit and delete a template (a confirmation page first); the default sender's page", async () => {
      await op.getByText('Edit this template').click()
      await bothWidths(op, 'wa-template-edit')
      // Danger-styled (red), a link to a confirmation page: no script needed; taken with the keyboard.
      const red = 'rgb(164, 38, 44)'
      const way = op.getByRole('link', { name: 'Delete template invoice_reminder (en_US)' })
      expect(
        await way.evaluate((e) => {
          const s = (globalThis as any).getComputedStyle(e) // runs in the page
          return [s.color, s.borderTopColor]
        }),
      ).toEqual([red, red])
      await way.focus()
      await op.keyboard.press('Enter')
      await op.waitForURL(/\/templates\/\d+\/delete$/)
      await bothWidths(op, 'wa-template-delete')
      const confirm = op.getByRole('button', { name: 'Delete template invoice_reminder' })
      expect(
        await confirm.evaluate((e) => {
          const s = (globalThis as any).getComputedStyle(e)
          return [s.backgroundColor, s.color]
        }),
      ).toEqual([red, 'rgb(255, 255, 255)'])
      // "Keep it" goes back and deletes nothing; the confirmation's button deletes.
      await op.getByRole('link', { name: 'Keep it' }).click()
      await op.waitForURL(/\/dashboard\/senders\/\d+\/templates\/\d+$/)
      expect(graph.requests.filter((r) => r.method === 'DELETE').length).toBe(0)
      await op.goBack()
      await op.waitForURL(/\/templates\/\d+\/delete$/)
      await confirm.focus()
      await op.keyboard.press('Enter')
      await op.waitForURL(/\/dashboard\/senders\/\d+\/templates\/\d+$/)
      expect(await op.locator('#template-status').innerText()).toContain('deleted')
      expect(graph.requests.filter((r) => r.method === 'DELETE').length).toBe(1)
      await op.goto(`${base}/dashboard/senders`)
      await op.getByRole('link', { name: "The default sender's WhatsApp templates" }).click()
      await op.waitForURL(`${base}/dashboard/senders/0/templates`)
      expect(await op.getByRole('heading', { level: 1 }).innerText()).toBe("The default sender's WhatsApp templates")
      await bothWidths(op, 'default-sender-wa-templates')
      await op.goto(`${base}/dashboard/accounts/${account.id}`)
      await submitted(op, () => op.getByRole('button', { name: 'Let members manage templates' }).click())
      expect(await op.locator('#template-rights').innerText()).toContain('may create, edit and delete')
    })

    const member = await signIn(memberLink, '/dashboard')
    await step(member, "the member's sender page: its templates and, allowed, a new one", async () => {
      await member.locator(`a[href="/dashboard/my-senders/${sender.id}"]`).click()
      await member.waitForURL(`${base}/dashboard/my-senders/${sender.id}`)
      expect(await member.getByRole('link', { name: 'New template' }).isVisible()).toBe(true)
      await bothWidths(member, 'member-sender')
      await member.goto(`${base}/dashboard`)
    })
    await step(member, 'the member: the templates it may use with their parameters, each one with its preview', async () => {
      await member.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Templates and segments' }).click()
      await member.getByRole('link', { name: 'WhatsApp templates' }).click()
      await member.waitForURL(`${base}/dashboard/whatsapp-templates`)
      expect(await member.locator('tbody tr').count()).toBe(4) // the two synced, the two created (fields, JSON)
      expect(await member.getByText('variables.first_name').isVisible()).toBe(true)
      expect(await member.getByRole('button', { name: 'Sync templates' }).count()).toBe(0)
      await bothWidths(member, 'member-wa-templates')
      await member.getByRole('link', { name: 'invoice_due' }).click()
      await member.waitForURL(/\/dashboard\/whatsapp-templates\/\d+$/)
      expect(await member.getByRole('figure', { name: 'Preview of invoice_due' }).isVisible()).toBe(true)
      await bothWidths(member, 'member-wa-template')
    })
  }, 180_000)
})
