// The message log and the overview an operator's day needs (issue 33 item 9), through app.handle on a
// test clock (the simulator's reports come due as the test moves it): search by a contact's name, the
// text and the phone; the same filter as CSV; error codes linked to a page that says what each means and
// what to do; the overview's delivery and read rates, errors by code and cost per day. Attacker tests:
// another account's member finds none of this account's messages by search, CSV or the operator's paths.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'
import { TestClock } from '../../src/lib/clock'
import { csvField } from '../../src/lib/csv'
import { ERROR_CODES, ERROR_CODE_ADVICE } from '../../src/providers/error-codes'

const PASSWORD = 'correct horse battery'
const clock = new TestClock()
let t: TestApp
let own: { accountId: number; key: string }
let other: { accountId: number; key: string }
let member: Awaited<ReturnType<typeof dashboardUser>>['client']
let attacker: Awaited<ReturnType<typeof dashboardUser>>['client']

async function send(key: string, to: string, body: string) {
  return t.api('POST', '/messages/send', key, { to, body })
}

beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
  own = await t.account(10_000, { price: 10 })
  other = await t.account(10_000, { price: 10 })
  expect((await t.api('POST', '/contacts', own.key, { name: 'Budi Santoso', phone: '081234560001' })).status).toBe(201)
  expect((await t.api('POST', '/contacts', other.key, { name: 'Budi Santoso', phone: '081234560009' })).status).toBe(201)
  expect((await send(own.key, '081234560001', 'Pesanan #12 sudah dikirim')).status).toBe(200)
  expect((await send(own.key, '081234560002', 'Tagihan bulan ini 50% lunas')).status).toBe(200)
  expect((await send(own.key, '081234560003', '=HYPERLINK("https://evil.example")')).status).toBe(200)
  expect((await send(own.key, '081234568888', 'gagal nanti')).status).toBe(200) // failed 63016 after its delivery time
  expect((await send(own.key, '081234567777', 'bukan pengguna WhatsApp')).status).toBe(502) // 131026, refunded
  expect((await send(other.key, '081234560009', 'Pesanan rahasia toko lain')).status).toBe(200)
  // Delivered and read (the test app's simulator: delivered after 50 ms, read after 100 ms) ...
  await clock.advance(250)
  await t.runWorker('simulator-reports')
  // ... and one more delivered, not read yet.
  expect((await send(own.key, '081234560004', 'Terima kasih')).status).toBe(200)
  await clock.advance(60)
  await t.runWorker('simulator-reports')
  member = (await dashboardUser(t, 'log-member@example.com', PASSWORD, own.accountId)).client
  attacker = (await dashboardUser(t, 'log-attacker@example.com', PASSWORD, other.accountId)).client
}, 60_000)
afterAll(() => t.close())

const count = (text: string) => /(\d+) messages?<\/p>/.exec(text)?.[1]

describe('the message log', () => {
  test("search by a contact's name, by the text (LIKE's characters taken literally) and by the phone", async () => {
    const byName = await member.get('/dashboard/messages?q=santoso')
    expect(byName.text).toContain('name="q" value="santoso"')
    expect(count(byName.text)).toBe('1')
    expect(byName.text).toContain('Pesanan #12 sudah dikirim')
    const byText = await member.get('/dashboard/messages?q=TAGIHAN')
    expect(count(byText.text)).toBe('1')
    expect(byText.text).toContain('Tagihan bulan ini 50% lunas')
    expect(count((await member.get('/dashboard/messages?q=50%25')).text)).toBe('1')
    expect(count((await member.get('/dashboard/messages?q=5_%25')).text)).toBe('0')
    expect(count((await member.get('/dashboard/messages?phone=0812345600')).text)).toBe('4')
    expect(count((await member.get('/dashboard/messages?q=pesanan&phone=0812345600')).text)).toBe('1')
    const tooLong = await member.get(`/dashboard/messages?q=${'x'.repeat(101)}`)
    expect([tooLong.status, tooLong.text.includes('q: at most 100 characters')]).toEqual([422, true])
  })

  test("attacker: another account's member finds none of this account's messages, even by its contact's name", async () => {
    const theirs = await attacker.get('/dashboard/messages?q=Budi')
    expect(count(theirs.text)).toBe('1')
    expect(theirs.text).toContain('Pesanan rahasia toko lain')
    expect(theirs.text).not.toContain('Pesanan #12')
    const csv = await attacker.get('/dashboard/messages.csv?q=pesanan')
    expect(csv.text).toContain('Pesanan rahasia toko lain')
    expect(csv.text).not.toContain('Pesanan #12')
    expect((await attacker.get(`/dashboard/accounts/${own.accountId}/messages.csv`)).status).toBe(404)
    expect((await attacker.get(`/dashboard/accounts/${own.accountId}/messages?q=pesanan`)).status).toBe(404)
    // Ours does not see theirs.
    expect(count((await member.get('/dashboard/messages?q=rahasia')).text)).toBe('0')
  })

  test('CSV export of the same filter: a download with a header, the rows that match, formulas neutralised', async () => {
    const page = await member.get('/dashboard/messages?q=pesanan')
    expect(page.text).toContain('href="/dashboard/messages.csv?q=pesanan"')
    const csv = await member.get('/dashboard/messages.csv?q=pesanan')
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="messages-account-${own.accountId}.csv"`)
    const lines = csv.text.trimEnd().split('\r\n')
    expect(lines[0]).toBe(
      'id,created_at,phone,status,type,body,cost,category,error_code,error_message,sent_at,delivered_at,read_at,message_sid',
    )
    expect(lines).toHaveLength(2)
    expect(lines[1]).toContain(',+6281234560001,read,text,Pesanan #12 sudah dikirim,10,service,,,')
    const all = await member.get('/dashboard/messages.csv')
    expect(all.text.trimEnd().split('\r\n')).toHaveLength(1 + 6)
    expect(all.text).toContain(csvField('=HYPERLINK("https://evil.example")'))
    expect(all.text).toContain(',failed,text,gagal nanti,10,service,63016,')
    // A bad filter: the list page says what is wrong.
    const bad = await member.get('/dashboard/messages.csv?status=lost')
    expect([bad.status, bad.text.includes('status: must be one of')]).toEqual([422, true])
  })

  test('error codes link to what they mean and what to do', async () => {
    const failed = await member.get('/dashboard/messages?status=failed')
    expect(failed.text).toContain('<a href="/dashboard/error-codes#code-63016" aria-label="Error 63016: what it means">63016</a>')
    expect(failed.text).toContain('<a href="/dashboard/error-codes#code-131026"')
    const [row] = await t.db.sql<{ id: number }[]>`select id from messages where phone = '+6281234568888'`
    expect((await member.get(`/dashboard/messages/${row!.id}`)).text).toContain('href="/dashboard/error-codes#code-63016"')
    const codes = await member.get('/dashboard/error-codes')
    expect(codes.status).toBe(200)
    for (const c of ERROR_CODES) {
      expect(codes.text).toContain(`<tr id="code-${c.code}">`)
      expect(ERROR_CODE_ADVICE[c.code]?.length ?? 0).toBeGreaterThan(10)
    }
    const row63016 = codes.text.slice(codes.text.indexOf('<tr id="code-63016">'))
    expect(row63016.slice(0, row63016.indexOf('</tr>'))).toContain('Send an approved template')
    expect(codes.text).toContain('id="other-codes"')
  })
})

describe('the overview', () => {
  test('delivery and read rates, errors by code linked, and cost per day', async () => {
    const page = await member.get('/dashboard')
    expect(page.status).toBe(200)
    // Out: 4 read or delivered + 2 failed; read: 3 of the 4 delivered.
    const rates = page.text.slice(page.text.indexOf('id="rates"'), page.text.indexOf('Cost per day</h2>'))
    expect(rates).toContain('66.7%')
    expect(rates).toContain('Delivered: 4 of 6 messages that went out')
    expect(rates).toContain('75%')
    expect(rates).toContain('Read: 3 of the 4 delivered')
    expect(rates).toContain('Failed: 2 of 6')
    // Charged: 6 messages of 10; the one refused at hand-off was refunded; the one failed later too.
    const [paid] = await t.db.sql<{ n: number }[]>`
      select coalesce(sum(cost), 0)::int as n from messages where account_id = ${own.accountId} and refunded_at is null`
    expect(page.text).toContain(`Cost per day over the last 30 days: ${paid!.n} IDR in all`)
    expect(page.text).toContain(`${paid!.n} IDR in the last 30 days`)
    const errors = page.text.slice(page.text.indexOf('Errors by code</h2>'), page.text.indexOf('Recent failures</h2>'))
    expect(errors).toContain('href="/dashboard/error-codes#code-63016"')
    expect(errors).toContain('href="/dashboard/error-codes#code-131026"')
    expect(errors).toContain('outside the 24-hour window')
    // The other account's overview knows none of it.
    const theirs = await attacker.get('/dashboard')
    expect(theirs.text).toContain('No failed messages in the last 30 days.')
    expect(theirs.text).toContain('Delivered: 1 of 1 messages that went out')
  })
})
