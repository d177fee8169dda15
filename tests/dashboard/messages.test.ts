// The messages, message, ledger (and its CSV) and overview pages through app.handle: who sees which
// account, tampered ids, the filters and their errors, pagination, CSV quoting and formula
// neutralising, and escaping of what API clients sent. On a test clock: the simulator's reports come
// due as the test moves the clock, and its worker is stepped.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { inFlight } from '../helpers/in-flight'
import { TestClock } from '../../src/lib/clock'
import { dashboardUser, webClient } from '../helpers/web'
import { csvField } from '../../src/lib/csv'
import { lastDays } from '../../src/modules/accounts/overview-pages'

let t: TestApp
const clock = new TestClock()
const PASSWORD = 'correct horse battery'
type Client = Awaited<ReturnType<typeof dashboardUser>>['client']
let own: { accountId: number; key: string; keyId: number }
let other: { accountId: number; key: string; keyId: number }
let member: Client
let otherMember: Client
let operator: Client
const ids: Record<string, number> = {}

async function idOf(accountId: number, phone: string): Promise<number> {
  const [row] = await t.db.sql<{ id: number }[]>`
    select id from messages where account_id = ${accountId} and phone = ${phone} order by id limit 1`
  return row!.id
}

beforeAll(async () => {
  t = await testApp({ clock, runOnClock: true })
  own = await t.account(100_000)
  other = await t.account(100_000)
  await t.db
    .sql`insert into webhook_endpoints (api_key_id, url, signing_secret) values (${own.keyId}, 'https://hooks.example.com/x', 'whsec_dGVzdA==')`
  const send = async (key: string, to: string, body: string) => {
    const sent = await t.api('POST', '/messages/send', key, { to, body })
    if (sent.status !== 200) throw new Error(JSON.stringify(sent.body))
  }
  await send(own.key, '081234567890', '<script>alert(1)</script> hello')
  await send(own.key, '081234568888', 'this one fails')
  await send(own.key, '085700001111', 'third')
  await send(other.key, '081299990000', 'not yours')
  // Refused by the simulator at hand-off: failed and refunded.
  const refused = await t.api('POST', '/messages/send', own.key, { to: '081234569999', body: 'refused' })
  if (refused.status === 200) throw new Error('the simulator took a number ending in 9999')
  const bulk = await t.api('POST', '/messages/bulk', own.key, {
    messages: Array.from({ length: 51 }, (_, i) => ({ to: `08130000${String(1000 + i)}`, body: `bulk ${i}` })),
  })
  if (bulk.status !== 200) throw new Error(JSON.stringify(bulk.body))
  // The simulator's reports: delivered/failed after 50 ms, read after 100 ms.
  await clock.advance(250)
  await t.runWorker('simulator-reports')
  await clock.advance(150)
  await t.runWorker('simulator-reports')
  ids.script = await idOf(own.accountId, '+6281234567890')
  ids.failed = await idOf(own.accountId, '+6281234568888')
  ids.third = await idOf(own.accountId, '+6285700001111')
  ids.refunded = await idOf(own.accountId, '+6281234569999')
  ids.others = await idOf(other.accountId, '+6281299990000')
  // One delivery of the read message's webhook events, attempted twice (as the delivery worker logs it).
  const [event] = await t.db.sql<{ id: number }[]>`select id from webhook_events where message_id = ${ids.script} order by id limit 1`
  await t.db.sql`insert into webhook_attempts (event_id, attempt, url, status_code, latency_ms, error) values
    (${event!.id}, 1, 'https://hooks.example.com/x', 500, 1234, '<b>receiver said no</b>'),
    (${event!.id}, 2, 'https://hooks.example.com/x', 200, 87, null)`
  member = (await dashboardUser(t, 'messages@example.com', PASSWORD, own.accountId)).client
  otherMember = (await dashboardUser(t, 'other@example.com', PASSWORD, other.accountId)).client
  operator = (await dashboardUser(t, 'ops-messages@example.com', PASSWORD)).client
})
afterAll(() => t.close())

describe('guards and scoping', () => {
  test('signed out: every page redirects to sign-in', async () => {
    const anon = webClient(t)
    for (const path of [
      '/dashboard/messages',
      `/dashboard/messages/${ids.script}`,
      '/dashboard/ledger',
      '/dashboard/ledger.csv',
      `/dashboard/accounts/${own.accountId}/messages`,
      `/dashboard/accounts/${own.accountId}/messages/${ids.script}`,
      `/dashboard/accounts/${own.accountId}/ledger`,
      `/dashboard/accounts/${own.accountId}/ledger.csv`,
      `/dashboard/accounts/${own.accountId}/overview`,
    ]) {
      const page = await anon.get(path)
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
  })

  test("a member sees only their own messages; another account's message id is 404, as are the operator's paths", async () => {
    const list = await member.get('/dashboard/messages?page=2') // the first three, behind the 51 of the bulk request
    expect(list.status).toBe(200)
    expect(list.text).toContain('<h1>Messages</h1>')
    expect(list.text).toContain('+6285700001111')
    expect(list.text).not.toContain('+6281299990000')
    expect(list.text).not.toContain('not yours')
    expect((await member.get(`/dashboard/messages/${ids.others}`)).status).toBe(404)
    expect((await otherMember.get(`/dashboard/messages/${ids.script}`)).status).toBe(404)
    for (const bad of ['abc', '0', '99999999', '1e3', '-1']) expect((await member.get(`/dashboard/messages/${bad}`)).status).toBe(404)
    for (const path of [
      `/dashboard/accounts/${own.accountId}/messages`,
      `/dashboard/accounts/${own.accountId}/messages/${ids.script}`,
      `/dashboard/accounts/${own.accountId}/ledger`,
      `/dashboard/accounts/${own.accountId}/ledger.csv`,
      `/dashboard/accounts/${own.accountId}/overview`,
    ]) {
      expect({ path, status: (await member.get(path)).status }).toEqual({ path, status: 404 })
    }
    const ledger = await otherMember.get('/dashboard/ledger')
    expect(ledger.text).not.toContain(`/messages/${ids.script}"`)
  })

  test("an operator sees any account's pages under /dashboard/accounts/:id; not the member paths; unknown accounts are 404", async () => {
    const list = await operator.get(`/dashboard/accounts/${other.accountId}/messages`)
    expect(list.status).toBe(200)
    expect(list.text).toContain('+6281299990000')
    expect(list.text).toContain(`href="/dashboard/accounts/${other.accountId}/messages/${ids.others}"`)
    expect((await operator.get(`/dashboard/accounts/${other.accountId}/messages/${ids.others}`)).status).toBe(200)
    // The message id must belong to the account of the URL.
    expect((await operator.get(`/dashboard/accounts/${own.accountId}/messages/${ids.others}`)).status).toBe(404)
    expect((await operator.get(`/dashboard/accounts/${other.accountId}/ledger`)).status).toBe(200)
    expect((await operator.get(`/dashboard/accounts/${other.accountId}/ledger.csv`)).status).toBe(200)
    expect((await operator.get(`/dashboard/accounts/${other.accountId}/overview`)).status).toBe(200)
    for (const path of [
      '/dashboard/accounts/99999999/messages',
      '/dashboard/accounts/99999999/ledger',
      '/dashboard/accounts/x/ledger.csv',
    ]) {
      expect({ path, status: (await operator.get(path)).status }).toEqual({ path, status: 404 })
    }
    for (const path of ['/dashboard/messages', '/dashboard/ledger', '/dashboard/ledger.csv']) {
      expect({ path, status: (await operator.get(path)).status }).toEqual({ path, status: 404 })
    }
  })
})

describe('messages', () => {
  test('filters: status, phone digits (0… read as 62…), sent_at dates; pagination 50 a page with the total', async () => {
    const failed = await member.get('/dashboard/messages?status=failed')
    expect(failed.status).toBe(200)
    expect(failed.text).toContain('+6281234568888')
    expect(failed.text).toContain('63016')
    expect(failed.text).not.toContain('+6285700001111')
    expect(failed.text).toContain('<option value="failed" selected>')
    const phone = await member.get('/dashboard/messages?phone=0857-0000')
    expect(phone.text).toContain('+6285700001111')
    expect(phone.text).toContain('1 message')
    expect(phone.text).not.toContain('+6281234568888')
    // Digits from the middle of the number, a leading 0 included, match too.
    const middle = await member.get('/dashboard/messages?phone=00001111')
    expect(middle.text).toContain('+6285700001111')
    expect(middle.text).toContain('1 message')
    const none = await member.get(`/dashboard/messages?date_from=${encodeURIComponent('2999-01-01 00:00:00')}`)
    expect(none.text).toContain('0 messages')
    const all = await member.get('/dashboard/messages')
    expect(all.text).toContain('<p>55 messages</p>')
    expect(all.text).toContain('Page 1 of 2')
    expect(all.text.match(/<tr>/g)!.length).toBe(51) // the header row and 50
    expect(all.text).toContain('href="/dashboard/messages?page=2">Next</a>')
    expect(all.text).not.toContain('>Previous</a>')
    const second = await member.get('/dashboard/messages?page=2')
    expect(second.text.match(/<tr>/g)!.length).toBe(6)
    expect(second.text).toContain('href="/dashboard/messages?page=1">Previous</a>')
    expect(second.text).not.toContain('>Next</a>')
    // The filter is kept in the page links.
    const bulk = await member.get('/dashboard/messages?phone=81300&status=read')
    expect(bulk.text).toContain('<p>51 messages</p>')
    expect(bulk.text).toContain('Page 1 of 2')
    expect(bulk.text).toContain('href="/dashboard/messages?status=read&amp;phone=81300&amp;page=2"')
  })

  test('bad filters re-render the page with the message and 422, never 500', async () => {
    const cases: [string, string][] = [
      ['status=pending', 'status: must be one of queued, sent, delivered, read, failed'],
      ['date_from=yesterday', 'date_from: must be a timestamp YYYY-MM-DD HH:MM:SS'],
      [`date_to=${encodeURIComponent('2026-02-30 10:00:00')}`, 'date_to: must be a timestamp'],
      ['phone=abc', 'phone: digits of the number'],
      ['page=0', 'page: must be a whole number from 1'],
      ['page=x', 'page: must be a whole number from 1'],
    ]
    for (const [query, message] of cases) {
      const page = await member.get(`/dashboard/messages?${query}`)
      expect({ query, status: page.status }).toEqual({ query, status: 422 })
      expect(page.text).toContain(message)
      expect(page.text).toContain('<h1>Messages</h1>')
    }
    const huge = await member.get('/dashboard/messages?page=999999999')
    expect(huge.status).toBe(200)
    expect(huge.text).toContain('href="/dashboard/messages?page=2">Previous</a>')
  })

  test('a body with <script> is shown as text in the list and on its page', async () => {
    const list = await member.get('/dashboard/messages?page=2')
    expect(list.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; hello')
    expect(list.text).not.toContain('<script>alert')
    const page = await member.get(`/dashboard/messages/${ids.script}`)
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; hello')
    expect(page.text).not.toContain('<script>')
  })

  test('the message page: timeline, cost from the ledger, webhook deliveries with every attempt', async () => {
    const page = await member.get(`/dashboard/messages/${ids.script}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('<h1>Message to +6281234567890</h1>')
    for (const step of ['Created', 'Sent', 'Delivered', 'Read']) expect(page.text).toContain(`<li class="done"><strong>${step}</strong>`)
    expect(page.text).not.toContain('<strong>Failed</strong>')
    expect(page.text).toMatch(/<td data-label="Kind">charge<\/td><td data-label="Amount" class="num">-\d+<\/td>/)
    expect(page.text).toContain('<dt>Refund</dt><dd>none</dd>')
    // Its webhook events (delivered, read), the first attempted twice.
    expect(page.text).toContain('delivered event')
    expect(page.text).toContain('read event')
    expect(page.text).toContain('1,234 ms')
    expect(page.text).toContain('<td data-label="Status code">500</td>')
    expect(page.text).toContain('<td data-label="Status code">200</td>')
    expect(page.text).toContain('&lt;b&gt;receiver said no&lt;/b&gt;')
    expect(page.text.indexOf('1,234 ms')).toBeLessThan(page.text.indexOf('87 ms')) // oldest attempt first
    expect(page.text).toContain('Not attempted yet.')

    const failed = await member.get(`/dashboard/messages/${ids.failed}`)
    expect(failed.text).toContain('<strong>Failed</strong>')
    expect(failed.text).toContain('63016 simulated delivery failure')
    expect(failed.text).toContain('<li class="pending"><strong>Delivered</strong> <span class="nowrap">not yet</span>')

    // Refused at hand-off: failed, and its charge refunded (both ledger rows shown).
    const refunded = await member.get(`/dashboard/messages/${ids.refunded}`)
    expect(refunded.status).toBe(200)
    expect(refunded.text).toContain('<strong>Refunded</strong>')
    expect(refunded.text).toMatch(/<dt>Refund<\/dt><dd>\d+ IDR<\/dd>/)
    expect(refunded.text).toMatch(/<td data-label="Kind">charge<\/td><td data-label="Amount" class="num">-\d+<\/td>/)
    expect(refunded.text).toMatch(/<td data-label="Kind">refund<\/td><td data-label="Amount" class="num">\d+<\/td>/)
    expect(refunded.text).toContain('simulator refused the message')
  })

  test('a failure after the provider accepted the message: refunded, its ledger row saying why; kept charged when its price says so', async () => {
    // The simulator accepts numbers ending in 8888 and reports them failed (63016) later.
    const failed = await member.get(`/dashboard/messages/${ids.failed}`)
    expect(failed.text).toContain('<strong>Refunded</strong>')
    expect(failed.text).toMatch(/<dt>Refund<\/dt><dd>\d+ IDR<\/dd>/)
    expect(failed.text).toContain('<td data-label="Note">the provider reported it failed after accepting it (error 63016)</td>')

    const kept = await t.account(1000)
    expect((await t.admin('PUT', '/price', { cost_per_message: 25, account_id: kept.accountId, refund_late_failures: false })).status).toBe(
      200,
    )
    const sent = await t.api('POST', '/messages/send', kept.key, { to: '081234568888', body: 'kept charged' })
    expect(sent.status).toBe(200)
    await clock.advance(100)
    await t.runWorker('simulator-reports')
    const id = await idOf(kept.accountId, '+6281234568888')
    const page = await operator.get(`/dashboard/accounts/${kept.accountId}/messages/${id}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('<strong>Failed</strong>')
    expect(page.text).not.toContain('<strong>Refunded</strong>')
    expect(page.text).toContain('<dt>Refund</dt><dd>none: its price keeps failures after acceptance charged</dd>')
  })
})

describe('ledger', () => {
  test('rows newest first with the balance after each, a message link, a date filter and pages', async () => {
    const page = await member.get('/dashboard/ledger')
    expect(page.status).toBe(200)
    expect(page.text).toContain('<h1>Ledger</h1>')
    const [count] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from ledger where account_id = ${own.accountId}`
    expect(page.text).toContain(`<p>${count!.n} rows</p>`)
    expect(page.text).toContain('Page 1 of 2')
    const [newest] = await t.db.sql<{ balance_after: number; message_id: number }[]>`
      select balance_after, message_id from ledger where account_id = ${own.accountId} order by id desc limit 1`
    expect(page.text).toContain(`<td data-label="Balance after" class="num">${newest!.balance_after.toLocaleString('en')}</td>`)
    expect(page.text).toContain(`href="/dashboard/messages/${newest!.message_id}"`)
    expect(page.text).toContain('href="/dashboard/ledger?page=2">Next</a>')
    expect(page.text).toContain('href="/dashboard/ledger.csv">Export CSV</a>')
    const second = await member.get('/dashboard/ledger?page=2')
    expect(second.text).toContain('+100,000') // the opening top-up, the oldest row
    const future = await member.get(`/dashboard/ledger?date_from=${encodeURIComponent('2999-01-01 00:00:00')}`)
    expect(future.text).toContain('0 rows')
    expect(future.text).toContain('href="/dashboard/ledger.csv?date_from=2999-01-01+00%3A00%3A00"')
    const bad = await member.get('/dashboard/ledger?date_to=soon')
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('date_to: must be a timestamp YYYY-MM-DD HH:MM:SS')
  })

  test('CSV: every row of the filter, quoted, with formulas neutralised; a bad filter is the page with 422', async () => {
    const account = await operator.get(`/dashboard/accounts/${own.accountId}`)
    const note = '=HYPERLINK("http://evil.example","click"), really'
    const topup = await operator.post(`/dashboard/accounts/${own.accountId}/topups`, { _csrf: account.csrf!, amount: '5', note })
    expect(topup.status).toBe(303)
    const csv = await member.get('/dashboard/ledger.csv')
    expect(csv.status).toBe(200)
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
    expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="ledger-account-${own.accountId}.csv"`)
    const lines = csv.text.trimEnd().split('\r\n')
    const [count] = await t.db.sql<{ n: number }[]>`select count(*)::int as n from ledger where account_id = ${own.accountId}`
    expect(lines.length).toBe(count!.n + 1) // all rows, not a page
    expect(lines[0]).toBe('id,created_at,kind,amount,balance_after,message_id,note,created_by')
    expect(lines[1]).toMatch(
      /^\d+,\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,topup,5,\d+,,"'=HYPERLINK\(""http:\/\/evil\.example"",""click""\), really",[^,@]+@[^,]+$/,
    )
    // A charge: a negative number, not neutralised; by no one. (The newest row before the top-up is the
    // refund of the message the simulator reported failed.)
    expect(lines.find((line) => line.includes(',charge,'))).toMatch(/^\d+,[\d :-]+,charge,-\d+,\d+,\d+,,$/)
    expect(lines.at(-1)).toMatch(/^\d+,[\d :-]+,topup,100000,100000,,/)
    const otherCsv = await otherMember.get('/dashboard/ledger.csv')
    expect(otherCsv.text).not.toContain('HYPERLINK')
    const filtered = await member.get(`/dashboard/ledger.csv?date_from=${encodeURIComponent('2999-01-01 00:00:00')}`)
    expect(filtered.text).toBe('id,created_at,kind,amount,balance_after,message_id,note,created_by\r\n')
    const bad = await member.get('/dashboard/ledger.csv?date_from=nope')
    expect(bad.status).toBe(422)
    expect(bad.headers.get('content-type')).toContain('text/html')
    expect(bad.text).toContain('date_from: must be a timestamp')
  })

  test('csvField', () => {
    expect(csvField('plain')).toBe('plain')
    expect(csvField(null)).toBe('')
    expect(csvField(-5)).toBe('-5')
    expect(csvField('a,b')).toBe('"a,b"')
    expect(csvField('say "hi"')).toBe('"say ""hi"""')
    expect(csvField('two\nlines')).toBe('"two\nlines"')
    for (const start of ['=', '+', '-', '@', '\t', '\r']) expect(csvField(`${start}1+1`)).toBe(`"'${start}1+1"`)
  })
})

describe('overview', () => {
  test('the chart of the last 30 days by status (server-built SVG), the legend, and recent failures', async () => {
    const page = await member.get('/dashboard')
    expect(page.status).toBe(200)
    expect(page.text).toContain('<h1>Overview</h1>')
    expect(page.text).toContain('Price per message')
    expect(page.text).toContain('<svg class="chart" viewBox="0 0 720 220" role="img" aria-labelledby="chart-title">')
    expect(page.text).toContain('<title id="chart-title">Messages per day over the last 30 days by status: 55 in all</title>')
    const today = lastDays(t.config.timezone, 1, clock.now())[0]!
    expect(page.text).toContain(`<title>${today}: 2 failed</title>`)
    expect(page.text).toContain('</span>failed: 2</li>')
    expect(page.text).toContain('</span>read: 53</li>')
    expect(page.text).toContain(`href="/dashboard/messages/${ids.failed}">+6281234568888</a>`)
    expect(page.text).toContain('>63016</a> simulated delivery failure')
    expect(page.text).not.toMatch(/<script(?![^>]*\ssrc=)/) // no inline script
    const others = await otherMember.get('/dashboard')
    expect(others.text).toContain('No failed messages.')
    expect(others.text).toContain('by status: 1 in all')
    const asOperator = await operator.get(`/dashboard/accounts/${own.accountId}/overview`)
    expect(asOperator.text).toContain(`href="/dashboard/accounts/${own.accountId}/messages/${ids.failed}"`)
  })

  test('lastDays: 30 calendar days ending today in the service time zone', () => {
    const days = lastDays('Asia/Jakarta', 30, new Date('2026-03-01T18:00:00Z'))
    expect(days.length).toBe(30)
    expect(days.at(-1)).toBe('2026-03-02')
    expect(days[0]).toBe('2026-02-01')
  })
})

describe('a message answered queued (throttled by the provider)', () => {
  test('is listed with status queued, found by the queued filter, and shows queued on its page until its outcome', async () => {
    // The simulator takes one message a second; the service's pace is far above it, so a send in the
    // same second as the one before is throttled (130429) and, with no wait allowed after a throttle,
    // answered 202 queued. On a test clock: the queued message goes out about a second after its
    // throttle, a time the clock does not reach here, so it stays queued while the pages are read.
    const qClock = new TestClock()
    const flight = inFlight()
    const q = await testApp({
      env: { SIM_RATE_PER_SECOND: '1', PROVIDER_MAX_PER_SECOND: '100', SEND_WAIT_MS: '0' },
      clock: qClock,
      wrapSql: flight.sql,
    })
    try {
      const account = await q.account(100)
      const { client } = await dashboardUser(q, 'queued@example.com', PASSWORD, account.accountId)
      // Sends one after the other, 20 ms apart (the service's pace lets each go), each on the clock up
      // to its answer (the clock stands still while a statement runs), until one is throttled: the
      // simulator took the one before within the same second. (The first goes.)
      const answers: { status: number; phone: string; answer: string | undefined }[] = []
      for (let i = 0; i < 5 && !answers.some((a) => a.status === 202); i++) {
        if (i > 0) await qClock.advance(20)
        const to = `0812345000${10 + i}`
        const answer = await qClock.run(q.api('POST', '/messages/send', account.key, { to, body: 'hello' }), undefined, flight.idle)
        answers.push({ status: answer.status, phone: `+62${to.slice(1)}`, answer: answer.body.data?.status })
      }
      const queued = answers.find((a) => a.status === 202)
      const sent = answers.find((a) => a.status === 200)
      expect([queued?.answer, sent?.answer]).toEqual(['queued', 'sent'])
      const filtered = await client.get('/dashboard/messages?status=queued')
      expect(filtered.status).toBe(200)
      expect(filtered.text).toContain('<option value="queued" selected')
      expect(filtered.text).toContain(queued!.phone)
      expect(filtered.text).not.toContain(sent!.phone)
      const [row] = await q.db.sql<{ id: number }[]>`select id from messages where phone = ${queued!.phone}`
      expect((await client.get(`/dashboard/messages/${row!.id}`)).text).toMatch(/queued/)
    } finally {
      await q.close()
    }
  }, 30_000)
})
