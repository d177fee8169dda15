// The inbox pages through app.handle, on a simulator that plays WhatsApp's window (SIM_REQUIRE_TEMPLATE)
// with the service's check on: conversations by last activity with their window, a conversation both
// ways with every inbound type shown, a reply inside the window sent and charged (once, however often
// the form is sent), a reply outside it refused uncharged with the template form offered instead, and
// the guards: another account's conversation is 404, a reply without the CSRF token is refused.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'
import { boundTemplate } from '../helpers/templates'

const PASSWORD = 'correct horse battery'
let t: TestApp
let own: Awaited<ReturnType<typeof boundTemplate>>
let other: { accountId: number; key: string }
let member: Awaited<ReturnType<typeof dashboardUser>>['client']
let operator: Awaited<ReturnType<typeof dashboardUser>>['client']

const OPEN = '+6281277700001'
const CLOSED = '+6281277700002'
const OTHERS = '+6281277700003'

beforeAll(async () => {
  t = await testApp({ env: { WINDOW_CHECK: 'provider', SIM_REQUIRE_TEMPLATE: 'true' } })
  own = await boundTemplate(t, 'Hi {{name}}, your order is ready', { simulator: { ref: 'order_ready', variables: ['name'] } }, [
    { name: 'Budi', phone: OPEN },
    { name: 'Sari', phone: CLOSED },
  ])
  other = await t.account(1000)
  // Budi writes (the window opens) and gets a template; Sari only ever got a template; the other account writes to its own customer.
  const sent = await t.api('POST', '/messages/send', own.key, { to: CLOSED, template_id: own.templateId, variables: { name: 'Sari' } })
  expect(sent.status).toBe(200)
  expect(
    (await t.api('POST', '/messages/send', own.key, { to: OPEN, template_id: own.templateId, variables: { name: 'Budi' } })).status,
  ).toBe(200)
  expect((await t.admin('POST', '/simulator/inbound', { phone: OPEN, body: 'Kapan <b>sampai</b>?' })).status).toBe(200)
  await t.db.sql`
    insert into inbound_messages (provider, provider_message_id, account_id, phone, type, text, content, raw, received_at)
    values ('simulator', 'others-1', ${other.accountId}, ${OTHERS}, 'text', 'halo', '{"body":"halo"}'::jsonb, '{}'::jsonb, now())`
  member = (await dashboardUser(t, 'inbox-member@example.com', PASSWORD, own.accountId)).client
  operator = (await dashboardUser(t, 'inbox-operator@example.com', PASSWORD)).client
}, 60_000)
afterAll(() => t.close())

const path = (phone: string) => `/dashboard/inbox/${phone.slice(1)}`

describe('the inbox', () => {
  test('conversations by last activity, with the contact, the last message either way and the window', async () => {
    const page = await member.get('/dashboard/inbox')
    expect(page.status).toBe(200)
    const open = page.text.indexOf('Budi (+6281277700001)')
    const closed = page.text.indexOf('Sari (+6281277700002)')
    expect(open).toBeGreaterThan(0)
    expect(closed).toBeGreaterThan(open) // Budi wrote last
    expect(page.text).toContain('They wrote: Kapan &lt;b&gt;sampai&lt;/b&gt;?')
    expect(page.text).toContain('You sent: Hi Sari, your order is ready')
    expect(page.text.match(/window open/g)?.length).toBe(1)
    expect(page.text).toContain('window closed')
    expect(page.text).not.toContain('+6281277700003')
    expect(page.text).toContain('href="/dashboard/inbox"') // in the navigation
  })

  test('a conversation both ways in time order, with every inbound type shown', async () => {
    const items = [
      { type: 'image', text: 'Foto', content: { media_url: 'https://media.example.com/a.jpg', mime_type: 'image/jpeg', caption: 'Foto' } },
      { type: 'location', text: 'Monas', content: { latitude: -6.2, longitude: 106.8, name: 'Monas', address: 'Jakarta' } },
      { type: 'interactive', text: 'Ya', content: { kind: 'button_reply', id: 'yes', title: 'Ya' } },
      { type: 'reaction', text: '👍', content: { emoji: '👍', message_id: 'wamid.x' } },
      { type: 'document', text: null, content: { media_url: 'javascript:alert(1)', mime_type: 'application/pdf', filename: 'nota.pdf' } },
    ]
    for (const [i, item] of items.entries()) {
      await t.db.sql`
        insert into inbound_messages (provider, provider_message_id, account_id, phone, type, text, content, raw, received_at)
        values ('simulator', ${`types-${i}`}, ${own.accountId}, ${CLOSED}, ${item.type}, ${item.text}, ${JSON.stringify(item.content)}::text::jsonb,
                '{}'::jsonb, now() - interval '2 days' + make_interval(mins => ${i}))`
    }
    let page = await member.get(path(CLOSED))
    expect(page.status).toBe(200)
    // Media are linked once kept (through the dashboard's own route); until then the page says so.
    expect(page.text).toContain('image (image/jpeg), being fetched')
    expect(page.text).not.toContain('https://media.example.com/a.jpg')
    const [image] = await t.db.sql<{ id: number }[]>`select id from inbound_messages where provider_message_id = 'types-0'`
    await t.db.sql`
      insert into inbound_media (inbound_message_id, position, kind, mime_type, size, sha256, bytes, status)
      values (${image!.id}, 0, 'image', 'image/jpeg', 3, 'abc', '\xffd8ff'::bytea, 'kept')`
    page = await member.get(path(CLOSED))
    expect(page.text).toContain(`<a href="/dashboard/inbound/${image!.id}/media/0">image (image/jpeg)</a>`)
    expect(page.text).toContain('Location: Monas, Jakarta')
    expect(page.text).toContain('Button reply: Ya (yes)')
    expect(page.text).toContain('Reacted 👍 to a message')
    expect(page.text).toContain('document nota.pdf (application/pdf), being fetched')
    expect(page.text).not.toContain('javascript:alert')
    // Oldest first: the inbound of two days ago before the template sent today.
    expect(page.text.indexOf('Button reply')).toBeLessThan(page.text.indexOf('Hi Sari, your order is ready'))
  })

  test('inside the window: a free-form reply is sent and charged once, however often the form is sent', async () => {
    const page = await member.get(path(OPEN))
    expect(page.text).toContain('The 24-hour window is open until ')
    expect(page.text).toContain('name="body"')
    const before = await money(t, own.accountId)
    const token = await member.formToken(`${path(OPEN)}/reply`)
    const form = { _csrf: page.csrf!, _once: token!, body: 'Besok pagi, Budi' }
    const sent = await member.post(`${path(OPEN)}/reply`, form)
    expect([sent.status, sent.location]).toEqual([303, path(OPEN)])
    const shown = await member.follow(sent)
    expect(shown.text).toContain('Reply sent; 10 IDR charged.')
    expect(shown.text).toContain('Besok pagi, Budi')
    // The same form again: its message is found, not sent again.
    expect((await member.post(`${path(OPEN)}/reply`, form)).status).toBe(303)
    const [row] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where body = 'Besok pagi, Budi'`
    expect(row!.n).toBe(1)
    expect(await money(t, own.accountId)).toEqual({ balance: before.balance - 10, ledgerSum: before.balance - 10 })
  })

  test('outside the window: only the template form is offered; a free-form reply is refused uncharged; the template goes', async () => {
    const page = await member.get(path(CLOSED))
    expect(page.text).toContain('The 24-hour window is closed (the customer last wrote at ')
    expect(page.text).toContain('Outside the 24-hour window WhatsApp takes only approved templates')
    expect(page.text).not.toContain('name="body"')
    const before = await money(t, own.accountId)
    // A free-form reply all the same (a page loaded while the window was open, or a crafted form): refused before charging.
    await member.get(`${path(CLOSED)}?template=${own.templateId}`)
    const refusedReply = await member.post(`${path(CLOSED)}/reply`, { _csrf: page.csrf!, body: 'Halo?' })
    const shown = await member.follow(refusedReply)
    expect(shown.text).toContain('Not sent: to: the customer last wrote to this sender at ')
    expect(shown.text).toContain('send one with template_id')
    expect(await money(t, own.accountId)).toEqual(before)

    const chosen = await member.get(`${path(CLOSED)}?template=${own.templateId}`)
    expect(chosen.text).toContain('name="var_name" value="Sari"')
    const sent = await member.post(`${path(CLOSED)}/reply`, { _csrf: chosen.csrf!, template_id: String(own.templateId), var_name: 'Sari' })
    expect((await member.follow(sent)).text).toContain('Reply sent; 10 IDR charged.')
    expect(await money(t, own.accountId)).toEqual({ balance: before.balance - 10, ledgerSum: before.balance - 10 })
  })

  test("guards: another account's conversation is 404; a reply without the CSRF token or the form token is refused", async () => {
    expect((await member.get(path(OTHERS))).status).toBe(404)
    const page = await member.get(path(OPEN))
    expect((await member.post(`${path(OTHERS)}/reply`, { _csrf: page.csrf!, body: 'not yours' })).status).toBe(404)
    const [sentToOthers] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where body = 'not yours'`
    expect(sentToOthers!.n).toBe(0)
    const before = await money(t, own.accountId)
    expect((await member.post(`${path(OPEN)}/reply`, { body: 'no csrf' })).status).toBe(403)
    expect((await member.post(`${path(OPEN)}/reply`, { _csrf: page.csrf!, _once: 'forged.token', body: 'no form token' })).status).toBe(403)
    expect(await money(t, own.accountId)).toEqual(before)
    expect((await member.get('/dashboard/inbox/not-a-phone')).status).toBe(404)
    // The operator sees the account's inbox under its page, not the member paths.
    expect((await operator.get(`/dashboard/accounts/${own.accountId}/inbox`)).text).toContain('Budi (+6281277700001)')
    expect((await operator.get('/dashboard/inbox')).status).toBe(404)
  })
})
