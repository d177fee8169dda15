// The inbox's manners and an agent's day through app.handle (issues 32 §2 and 33 items 3 and 6): the
// account's choice to mark a conversation read when an agent opens it (off by default), a reply that
// quotes the customer's message (reply_to), what inbound messages quote and the reactions messages hold,
// no reply box for a customer who wrote STOP (and why), the thread's latest page for the open page's
// poll, a template reply that would leave a placeholder empty refused before anything is charged, and
// the operator's way in from the account page. Attacker tests: a member of another account, with its
// own real session, can neither read, mark, quote nor poll this account's conversations.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'
import { boundTemplate } from '../helpers/templates'

const PASSWORD = 'correct horse battery'
let t: TestApp
let own: Awaited<ReturnType<typeof boundTemplate>>
let other: { accountId: number; key: string }
let member: Awaited<ReturnType<typeof dashboardUser>>['client']
let attacker: Awaited<ReturnType<typeof dashboardUser>>['client']
let operator: Awaited<ReturnType<typeof dashboardUser>>['client']

const BUDI = '+6281277800001' // writes, quotes, reacts
const SARI = '+6281277800002' // writes STOP
const RINA = '+6281277800003' // a contact without a city
const OTHERS = '+6281277800004' // the other account's customer

const path = (phone: string) => `/dashboard/inbox/${phone.slice(1)}`

/** The customer writes to the deployment's number (the conversation's account: the first to send to them). */
async function customerWrites(phone: string, body: string): Promise<{ id: number; pid: string }> {
  expect((await t.admin('POST', '/simulator/inbound', { phone, body })).status).toBe(200)
  const [row] = await t.db.sql<{ id: number; pid: string }[]>`
    select id, provider_message_id as pid from inbound_messages where phone = ${phone} order by id desc limit 1`
  return { id: Number(row!.id), pid: row!.pid }
}

async function readMarked(id: number): Promise<boolean> {
  const [row] = await t.db.sql<{ at: Date | null }[]>`select read_marked_at as at from inbound_messages where id = ${id}`
  return row!.at !== null
}

beforeAll(async () => {
  t = await testApp()
  own = await boundTemplate(
    t,
    'Hi {{name}}, your parcel reaches {{city}} today',
    { simulator: { ref: 'parcel', variables: ['name', 'city'] } },
    [
      { name: 'Budi', phone: BUDI },
      { name: 'Sari', phone: SARI },
      { name: 'Rina', phone: RINA },
    ],
  )
  other = await t.account(1_000, { price: 10 })
  for (const phone of [BUDI, SARI, RINA]) {
    expect((await t.api('POST', '/messages/send', own.key, { to: phone, body: `Halo ${phone}` })).status).toBe(200)
  }
  expect((await t.api('POST', '/messages/send', other.key, { to: OTHERS, body: 'Halo dari toko lain' })).status).toBe(200)
  member = (await dashboardUser(t, 'manners-member@example.com', PASSWORD, own.accountId)).client
  attacker = (await dashboardUser(t, 'manners-attacker@example.com', PASSWORD, other.accountId)).client
  operator = (await dashboardUser(t, 'manners-operator@example.com', PASSWORD)).client
}, 60_000)
afterAll(() => t.close())

describe('the inbox marks a conversation read when an agent opens it, if the account chose so', () => {
  test('off by default: opening leaves the message unread; switched on, opening marks it read', async () => {
    const first = await customerWrites(BUDI, 'Paket saya di mana?')
    const inbox = await member.get('/dashboard/inbox')
    expect(inbox.text).toContain('Mark a conversation read when an agent opens it')
    expect(inbox.text).toContain('The customer sees read receipts (blue ticks)')
    expect(inbox.text).not.toMatch(/name="marks_read" checked/)
    expect((await member.get(path(BUDI))).status).toBe(200)
    expect(await readMarked(first.id)).toBe(false)

    const saved = await member.post('/dashboard/inbox/settings', { _csrf: inbox.csrf!, marks_read: 'on' })
    expect([saved.status, saved.location]).toEqual([303, '/dashboard/inbox'])
    const shown = await member.follow(saved)
    expect(shown.text).toContain('Opening a conversation now marks the customer&#39;s messages read')
    expect(shown.text).toMatch(/name="marks_read" checked/)
    // The attacker's own account is untouched by this account's choice.
    const [theirs] = await t.db.sql<{ on: boolean }[]>`select inbox_marks_read as on from accounts where id = ${other.accountId}`
    expect(theirs!.on).toBe(false)

    expect((await member.get(path(BUDI))).status).toBe(200)
    expect(await readMarked(first.id)).toBe(true)
    // Without the CSRF token the setting does not change.
    expect((await member.post('/dashboard/inbox/settings', { marks_read: '' })).status).toBe(403)
  })

  test("attacker: another account's member can neither open, poll nor mark this account's conversation", async () => {
    const unread = await customerWrites(BUDI, 'Halo? (belum dibaca)')
    expect((await attacker.get(path(BUDI))).status).toBe(404)
    expect((await attacker.get(`${path(BUDI)}/thread`)).status).toBe(404)
    expect((await attacker.get(`/dashboard/accounts/${own.accountId}/inbox/${BUDI.slice(1)}`)).status).toBe(404)
    expect(await readMarked(unread.id)).toBe(false)
    // Its own inbox lists its own customer only.
    const theirs = await attacker.get('/dashboard/inbox')
    expect(theirs.text).toContain(OTHERS)
    expect(theirs.text).not.toContain(BUDI)
    // Switching its own account's setting on marks nothing of this account.
    await attacker.post('/dashboard/inbox/settings', { _csrf: theirs.csrf!, marks_read: 'on' })
    expect((await attacker.get(path(BUDI))).status).toBe(404)
    expect(await readMarked(unread.id)).toBe(false)
  })
})

describe('quotes and reactions', () => {
  test("a reply quoting the customer's message goes with reply_to; the quote shows in the box and in the thread", async () => {
    const asked = await customerWrites(BUDI, 'Bisa kirim hari Sabtu?')
    const page = await member.get(path(BUDI))
    expect(page.text).toContain(`href="${path(BUDI)}?reply_to=${asked.id}#reply-title"`)
    const quoting = await member.get(`${path(BUDI)}?reply_to=${asked.id}`)
    expect(quoting.text).toContain('Quoting their message: Bisa kirim hari Sabtu?')
    expect(quoting.text).toContain(`name="reply_to" value="${asked.id}"`)
    const before = await money(t, own.accountId)
    const sent = await member.post(`${path(BUDI)}/reply`, { _csrf: quoting.csrf!, reply_to: String(asked.id), body: 'Bisa, Sabtu pagi.' })
    const shown = await member.follow(sent)
    expect(shown.text).toContain('Reply sent; 10 IDR charged.')
    const [row] = await t.db.sql<{ reply_to: string | null }[]>`select reply_to from messages where body = 'Bisa, Sabtu pagi.'`
    expect(row!.reply_to).toBe(asked.pid)
    expect(shown.text).toContain('Quoting their message: Bisa kirim hari Sabtu?')
    expect(await money(t, own.accountId)).toEqual({ balance: before.balance - 10, ledgerSum: before.balance - 10 })
  })

  test("attacker: another account's message cannot be quoted, in the box or in a crafted form; nothing is charged", async () => {
    const [budi] = await t.db.sql<{ id: number }[]>`select id from inbound_messages where phone = ${BUDI} order by id limit 1`
    const theirs = await attacker.get(`${path(OTHERS)}?reply_to=${budi!.id}`)
    expect(theirs.status).toBe(200)
    expect(theirs.text).not.toContain('Quoting their message')
    const before = await money(t, other.accountId)
    const crafted = await attacker.post(`${path(OTHERS)}/reply`, { _csrf: theirs.csrf!, reply_to: String(budi!.id), body: 'quoting yours' })
    expect((await attacker.follow(crafted)).text).toContain('Not sent: reply_to:')
    expect(await money(t, other.accountId)).toEqual(before)
    const [n] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from messages where body = 'quoting yours'`
    expect(n!.n).toBe(0)
  })

  test('an inbound reaction shows on the message it reacts to; an inbound quote shows what it quotes', async () => {
    const [ours] = await t.db.sql<{ sid: string }[]>`select message_sid as sid from messages where body = 'Bisa, Sabtu pagi.'`
    await t.db.sql`
      insert into inbound_messages (provider, provider_message_id, account_id, phone, type, text, content, raw, received_at, reply_to)
      values ('simulator', 'react-1', ${own.accountId}, ${BUDI}, 'reaction', '🙏', ${JSON.stringify({ emoji: '🙏', message_id: ours!.sid })}::text::jsonb,
              '{}'::jsonb, now(), null),
             ('simulator', 'quote-1', ${own.accountId}, ${BUDI}, 'text', 'Oke, jam berapa?', '{"body":"Oke, jam berapa?"}'::jsonb,
              '{}'::jsonb, now(), ${ours!.sid})`
    const page = await member.get(path(BUDI))
    expect(page.text).toContain('🙏 from the customer')
    expect(page.text).toContain('Quoting your message: Bisa, Sabtu pagi.')
    // The reaction sits on our message's bubble.
    const bubble = page.text.slice(page.text.lastIndexOf('<li', page.text.indexOf('🙏 from the customer')))
    expect(bubble.slice(0, bubble.indexOf('</li>'))).toContain('Bisa, Sabtu pagi.')
  })
})

describe('STOP, the open thread, and templates with every value', () => {
  test('a customer who wrote STOP gets no reply box: the page says why; a crafted reply is refused uncharged', async () => {
    await customerWrites(SARI, 'STOP')
    const page = await member.get(path(SARI))
    expect(page.text).toContain('This customer has opted out (they wrote STOP')
    expect(page.text).not.toContain('name="body"')
    expect(page.text).not.toContain('Send an approved template instead')
    expect(page.text).not.toContain('Reply quoting this message')
    const before = await money(t, own.accountId)
    const token = await member.formToken(`${path(BUDI)}/reply`)
    const crafted = await member.post(`${path(SARI)}/reply`, { _csrf: page.csrf!, _once: token!, body: 'Halo lagi' })
    expect((await member.follow(crafted)).text).toContain('Not sent:')
    expect(await money(t, own.accountId)).toEqual(before)
    // START opens the box again.
    await customerWrites(SARI, 'START')
    expect((await member.get(path(SARI))).text).toContain('name="body"')
  })

  test("the open page's poll: the thread's latest page alone, with a message that arrived since", async () => {
    const page = await member.get(path(RINA))
    expect(page.text).toContain(`data-thread-url="${path(RINA)}/thread"`)
    expect(page.text).toContain('src="/dashboard/assets/inbox.js"')
    expect(page.text).toContain('Check for new messages')
    await customerWrites(RINA, 'Pesanan baru masuk')
    const fragment = await member.get(`${path(RINA)}/thread`)
    expect(fragment.status).toBe(200)
    expect(fragment.text).toStartWith('<ol id="thread"')
    expect(fragment.text).toContain('Pesanan baru masuk')
    expect(fragment.text).not.toContain('<html')
    expect((await member.get(`${path(OTHERS)}/thread`)).status).toBe(404)
    const script = await t.app.handle(new Request('http://localhost/dashboard/assets/inbox.js'))
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8'])
  })

  test('a template whose {{city}} the contact lacks: the page says so, and an empty value is not sent', async () => {
    const chosen = await member.get(`${path(RINA)}?template=${own.templateId}`)
    expect(chosen.text).toContain('name="var_name" value="Rina" maxlength="1000" required')
    expect(chosen.text).toContain('name="var_city" value="" maxlength="1000" required')
    expect(chosen.text).toContain('The contact has no city: type the value to send.')
    const before = await money(t, own.accountId)
    const action = `${path(RINA)}/reply`
    const empty = await member.post(action, { _csrf: chosen.csrf!, template_id: String(own.templateId), var_name: 'Rina', var_city: ' ' })
    expect(empty.location).toBe(`${path(RINA)}?template=${own.templateId}`)
    expect((await member.follow(empty)).text).toContain('Not sent: {{city}} has no value')
    expect(await money(t, own.accountId)).toEqual(before)
    const page = await member.get(`${path(RINA)}?template=${own.templateId}`)
    const sent = await member.post(action, {
      _csrf: page.csrf!,
      template_id: String(own.templateId),
      var_name: 'Rina',
      var_city: 'Bandung',
    })
    expect((await member.follow(sent)).text).toContain('Reply sent; 10 IDR charged.')
    const [row] = await t.db.sql<{ body: string }[]>`select body from messages where phone = ${RINA} order by id desc limit 1`
    expect(row!.body).toBe('Hi Rina, your parcel reaches Bandung today')
  })

  test("the operator reaches an account's inbox from its account page", async () => {
    const account = await operator.get(`/dashboard/accounts/${own.accountId}`)
    expect(account.text).toContain(`<a href="/dashboard/accounts/${own.accountId}/inbox">Inbox</a>`)
    const inbox = await operator.get(`/dashboard/accounts/${own.accountId}/inbox`)
    expect(inbox.status).toBe(200)
    expect(inbox.text).toContain('Budi (+6281277800001)')
  })
})
