// The webhook page (members and operators) and the operator pages (price, users, failed deliveries,
// audit log) through app.handle: guards, CSRF, each change and its audit row, escaping. Deliveries go
// to a real local HTTPS receiver through the service's own delivery pipeline, on a test clock: the
// pipeline is stepped (deliverAll) once a test's events are written, so each request has arrived and
// each outcome is recorded when the step ends.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { makeTestTls, startReceiver, type Receiver, type TestTls } from '../helpers/receiver'
import { deliverAll } from '../helpers/delivery'
import { dashboardUser, webClient } from '../helpers/web'
import { reportStatus } from '../helpers/reports'
import { signPayload } from '../../src/modules/webhooks/sender'
import { TestClock } from '../../src/lib/clock'

let t: TestApp
let tls: TestTls
let rx: Receiver
const PASSWORD = 'correct horse battery'
const clock = new TestClock()

beforeAll(async () => {
  tls = makeTestTls()
  rx = startReceiver(tls, clock)
  t = await testApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_CA_FILE: tls.caFile }, clock, runOnClock: true })
}, 60_000)
afterAll(async () => {
  await t.close()
  rx.stop()
  tls.remove()
}, 30_000)

/** Steps the service's delivery pipeline until nothing is due: every request made and every outcome recorded. */
const deliver = () => deliverAll(t)
afterEach(() => rx.reset())

let n = 0
const email = (what: string) => `${what}-${++n}@example.com`
const actions = async (accountId: number | null) =>
  (
    await t.db.sql<{ action: string }[]>`
      select action from audit_log where ${accountId === null ? t.db.sql`account_id is null` : t.db.sql`account_id = ${accountId}`}
      order by id`
  ).map((a) => a.action)
const events = (keyId: number) =>
  t.db.sql<{ id: number; status: string; attempts: number; lease_token: string | null; payload: string; webhook_id: string }[]>`
    select id, status, attempts, lease_token, payload, webhook_id from webhook_events where api_key_id = ${keyId} order by id`
/** The key's events, every one satisfying `done` with its outcome recorded (no lease held). */
async function settled(keyId: number, done: (e: { status: string; attempts: number }) => boolean, what: string) {
  const rows = await events(keyId)
  const unsettled = rows.filter((e) => !(e.lease_token === null && done(e)))
  if (rows.length === 0 || unsettled.length > 0) throw new Error(`not settled: ${what}: ${JSON.stringify(unsettled)}`)
  return rows
}
const operator = () => dashboardUser(t, email('op'), PASSWORD)
/** A jsonb value as the driver returns it: an object, or its text (embedded mode). */
const json = (value: unknown) => (typeof value === 'string' ? JSON.parse(value) : value)

describe('guards', () => {
  test('anonymous: every page and change redirects to sign-in', async () => {
    const anon = webClient(t)
    const { accountId } = await t.account(0)
    for (const path of [
      '/dashboard/webhook',
      `/dashboard/accounts/${accountId}/webhook`,
      '/dashboard/price',
      '/dashboard/users',
      '/dashboard/deliveries',
      '/dashboard/audit',
    ]) {
      const page = await anon.get(path)
      expect({ path, status: page.status, location: page.location }).toEqual({ path, status: 303, location: '/dashboard/sign-in' })
    }
    for (const path of [
      '/dashboard/price',
      '/dashboard/users/invites',
      '/dashboard/users/1/active',
      '/dashboard/deliveries/1/replay',
      '/dashboard/webhook/keys/1',
    ]) {
      const page = await anon.post(path, { _csrf: 'x' })
      expect({ path, status: page.status }).toEqual({ path, status: 303 })
    }
  })

  test('members: operator pages and /accounts/:id/webhook are 404; operators: the member page is 404, any account by URL', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('member'), PASSWORD, own.accountId)
    for (const path of [
      '/dashboard/price',
      '/dashboard/users',
      '/dashboard/deliveries',
      '/dashboard/audit',
      `/dashboard/accounts/${own.accountId}/webhook`,
    ]) {
      expect({ path, status: (await member.client.get(path)).status }).toEqual({ path, status: 404 })
    }
    const page = await member.client.get('/dashboard/webhook')
    expect(page.status).toBe(200)
    for (const path of ['/dashboard/price', '/dashboard/users/invites', `/dashboard/accounts/${own.accountId}/price`]) {
      expect({
        path,
        status: (await member.client.post(path, { _csrf: page.csrf!, cost_per_message: '1', email: 'x@example.com' })).status,
      }).toEqual({
        path,
        status: 404,
      })
    }
    const op = await operator()
    expect((await op.client.get('/dashboard/webhook')).status).toBe(404)
    const opPage = await op.client.get(`/dashboard/accounts/${own.accountId}/webhook`)
    expect(opPage.status).toBe(200)
    expect(opPage.text).toContain('<h1>Webhook · ')
    expect((await op.client.get('/dashboard/accounts/99999999/webhook')).status).toBe(404)
    for (const path of ['/dashboard/price', '/dashboard/users', '/dashboard/deliveries', '/dashboard/audit']) {
      expect({ path, status: (await op.client.get(path)).status }).toEqual({ path, status: 200 })
    }
  })
})

describe('webhook page', () => {
  test('register (same rules as the API), replace, reveal the secret once, test event, delivery log, delete; all audited', async () => {
    const own = await t.account(100)
    const other = await t.account(100)
    const member = await dashboardUser(t, email('hook'), PASSWORD, own.accountId)
    let page = await member.client.get('/dashboard/webhook')
    expect(page.text).toContain('No URL registered.')
    const csrf = page.csrf!

    // The API's rules and messages.
    const plain = await member.client.post(`/dashboard/webhook/keys/${own.keyId}`, { _csrf: csrf, url: 'http://93.184.216.34/hook' })
    expect(plain.status).toBe(422)
    expect(plain.text).toContain(
      'url: must be https (plain http only to localhost, on a development service where an operator allowed private addresses)',
    )
    expect((await member.client.post(`/dashboard/webhook/keys/${own.keyId}`, { _csrf: csrf, url: 'nonsense' })).status).toBe(422)

    page = await member.client.post(`/dashboard/webhook/keys/${own.keyId}`, { _csrf: csrf, url: rx.url('localhost', '/first') })
    expect(page.status).toBe(303)
    page = await member.client.post(`/dashboard/webhook/keys/${own.keyId}`, { _csrf: csrf, url: rx.url() })
    expect(page.status).toBe(303)
    expect((await t.api('GET', '/webhook', own.key)).body.data.url).toBe(rx.url())
    page = await member.client.get('/dashboard/webhook')
    expect(page.text).toContain(rx.url())

    // The secret: not on the page until revealed, then the stored one.
    const [{ signing_secret }] = await t.db.sql<[{ signing_secret: string }]>`
      select signing_secret from webhook_endpoints where api_key_id = ${own.keyId}`
    expect(page.text).not.toContain(signing_secret)
    const revealed = await member.client.follow(await member.client.post(`/dashboard/webhook/keys/${own.keyId}/secret`, { _csrf: csrf }))
    expect(revealed.status).toBe(200)
    expect(/id="signing-secret">([^<]+)</.exec(revealed.text)![1]).toBe(signing_secret)
    expect((await member.client.get('/dashboard/webhook')).text).not.toContain(signing_secret)

    // A test event: through the outbox, signed, marked as a test.
    expect((await member.client.post(`/dashboard/webhook/keys/${own.keyId}/test`, { _csrf: csrf })).status).toBe(303)
    await deliver()
    const [received] = rx.requests
    expect(received!.path).toBe('/hook')
    const body = JSON.parse(received!.body)
    expect(body).toMatchObject({ event: 'message.status', data: { test: true, status: 'delivered' } })
    const signature = signPayload(
      signing_secret,
      received!.headers['webhook-id']!,
      Number(received!.headers['webhook-timestamp']),
      received!.body,
    )
    expect(received!.headers['webhook-signature']).toBe(signature)
    await settled(own.keyId, (e) => e.status === 'delivered', 'the test event')
    page = await member.client.get('/dashboard/webhook')
    expect(page.text).toContain('test event')
    expect(page.text).toMatch(/#1 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d: HTTP 200, \d[\d,]* ms/)
    // The admin API lists it as well (message_sid null).
    const listed = await t.admin('GET', `/keys/${own.keyId}/deliveries`)
    expect(listed.status).toBe(200)
    expect(listed.body.data.items[0]).toMatchObject({ message_sid: null, status: 'delivered', payload: { data: { test: true } } })

    // Another account's key is not found, and is left alone.
    await t.api('POST', '/webhook', other.key, { url: rx.url() })
    for (const action of ['', '/delete', '/secret', '/test']) {
      const refused = await member.client.post(`/dashboard/webhook/keys/${other.keyId}${action}`, {
        _csrf: csrf,
        url: rx.url('localhost', '/x'),
      })
      expect({ action, status: refused.status }).toEqual({ action, status: 404 })
    }
    expect((await t.api('GET', '/webhook', other.key)).body.data.url).toBe(rx.url())

    expect((await member.client.post(`/dashboard/webhook/keys/${own.keyId}/delete`, { _csrf: csrf })).status).toBe(303)
    expect((await t.api('GET', '/webhook', own.key)).status).toBe(404)
    const again = await member.client.post(`/dashboard/webhook/keys/${own.keyId}/delete`, { _csrf: csrf })
    expect(again.status).toBe(404)
    expect(again.text).toContain('no webhook is registered')

    expect(await actions(own.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'webhook registered',
      'webhook replaced',
      'webhook secret revealed',
      'webhook test sent',
      'webhook deleted',
    ])
    const [detail] = await t.db.sql<{ detail: any; actor: string }[]>`
      select detail, actor from audit_log where account_id = ${own.accountId} and action = 'webhook replaced'`
    expect(json(detail!.detail)).toMatchObject({ key_id: own.keyId, url: rx.url(), previous_url: rx.url('localhost', '/first') })
  }, 30_000)

  test('replay one delivery and the failed ones since a time; another account delivery is 404; the operator sees the same page', async () => {
    const own = await t.account(1000000)
    const other = await t.account(1000000)
    await t.api('POST', '/webhook', own.key, { url: rx.url() })
    await t.api('POST', '/webhook', other.key, { url: rx.url() })
    const sent = await t.api('POST', '/messages/send', own.key, { to: '081234567001', body: 'hi' })
    const sid = sent.body.data.message_id
    await reportStatus(t, sid, 'delivered')
    const otherSent = await t.api('POST', '/messages/send', other.key, { to: '081234567002', body: 'hi' })
    await reportStatus(t, otherSent.body.data.message_id, 'delivered')
    rx.handler = () => new Response('no', { status: 500 })
    await deliver()
    await settled(own.keyId, (e) => e.attempts === 1, 'the first attempt')
    await settled(other.keyId, (e) => e.attempts === 1, 'the other first attempt')
    // As after the last retry.
    await t.db.sql`update webhook_events set status = 'failed' where api_key_id in (${own.keyId}, ${other.keyId})`
    const [event] = await events(own.keyId)
    const [otherEvent] = await events(other.keyId)

    const member = await dashboardUser(t, email('replay'), PASSWORD, own.accountId)
    let page = await member.client.get('/dashboard/webhook')
    expect(page.text).toContain(sid)
    expect(page.text).toContain('HTTP 500')
    expect(page.text).toMatch(/#1 [\d:\- ]+: HTTP 500, \d[\d,]* ms</)
    const csrf = page.csrf!
    expect((await member.client.post(`/dashboard/webhook/deliveries/${otherEvent!.id}/replay`, { _csrf: csrf })).status).toBe(404)
    expect((await events(other.keyId))[0]!.status).toBe('failed')

    rx.handler = () => new Response('ok')
    expect((await member.client.post(`/dashboard/webhook/deliveries/${event!.id}/replay`, { _csrf: csrf })).status).toBe(303)
    await deliver()
    await settled(own.keyId, (e) => e.status === 'delivered', 'the replay')
    const replayed = rx.byId(event!.webhook_id)
    expect(replayed.length).toBe(2)

    // Failed since a time, through the operator's copy of the page.
    await t.db.sql`update webhook_events set status = 'failed' where api_key_id = ${own.keyId}`
    const op = await operator()
    page = await op.client.get(`/dashboard/accounts/${own.accountId}/webhook?key=${own.keyId}`)
    expect(page.text).toContain(sid)
    const bad = await op.client.post(`/dashboard/accounts/${own.accountId}/webhook/keys/${own.keyId}/replay-failed`, {
      _csrf: page.csrf!,
      since: 'yesterday',
    })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('since: must be a timestamp')
    // A key of another account under this account's URL is 404.
    expect(
      (
        await op.client.post(`/dashboard/accounts/${own.accountId}/webhook/keys/${other.keyId}/replay-failed`, {
          _csrf: page.csrf!,
          since: '2020-01-01T00:00',
        })
      ).status,
    ).toBe(404)
    const ok = await op.client.post(`/dashboard/accounts/${own.accountId}/webhook/keys/${own.keyId}/replay-failed`, {
      _csrf: page.csrf!,
      since: '2020-01-01T00:00',
    })
    expect(ok.status).toBe(303)
    expect(ok.location).toBe(`/dashboard/accounts/${own.accountId}/webhook?key=${own.keyId}`)
    await deliver()
    await settled(own.keyId, (e) => e.status === 'delivered', 'the replay of failed ones')
    expect(rx.byId(event!.webhook_id).length).toBe(3)
    expect((await events(other.keyId))[0]!.status).toBe('failed')

    const audit = await t.db.sql<{ action: string; actor: string; detail: any }[]>`
      select action, actor, detail from audit_log where account_id = ${own.accountId} and action like 'webhook%' order by id`
    expect(audit.map((a) => a.action)).toEqual(['webhook delivery replayed', 'webhook deliveries replayed'])
    expect(json(audit[1]!.detail)).toMatchObject({ key_id: own.keyId, since: '2020-01-01 00:00:00', replayed: 1 })
    expect(audit[0]!.actor).toMatch(/^replay-/)
    expect(audit[1]!.actor).toMatch(/^op-/)
  }, 30_000)

  test('pagination of the delivery log', async () => {
    const own = await t.account(0)
    await t.api('POST', '/webhook', own.key, { url: rx.url() })
    const member = await dashboardUser(t, email('pages'), PASSWORD, own.accountId)
    let page = await member.client.get('/dashboard/webhook')
    for (let i = 0; i < 21; i++) await member.client.post(`/dashboard/webhook/keys/${own.keyId}/test`, { _csrf: page.csrf! })
    page = await member.client.get('/dashboard/webhook')
    expect(page.text).toContain('21 deliveries')
    expect(page.text).toContain(`href="/dashboard/webhook?key=${own.keyId}&amp;offset=20"`)
    expect(page.text).not.toContain('>Previous<')
    const second = await member.client.get(`/dashboard/webhook?key=${own.keyId}&offset=20`)
    expect(second.text.match(/Replay delivery/g)!.length).toBe(1)
    expect(second.text).toContain(`href="/dashboard/webhook?key=${own.keyId}">Previous<`)
  })
})

describe('CSRF', () => {
  test('changes without the form token are refused (403) and change nothing', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('csrf'), PASSWORD, own.accountId)
    const op = await operator()
    const before = (await t.admin('GET', '/price')).body.data.cost_per_message
    const refusedMember = [
      [`/dashboard/webhook/keys/${own.keyId}`, { url: rx.url() }],
      [`/dashboard/webhook/keys/${own.keyId}/test`, {}],
    ] as const
    for (const [path, form] of refusedMember) {
      expect({ path, status: (await member.client.post(path, { _csrf: 'wrong', ...form })).status }).toEqual({ path, status: 403 })
    }
    const target = await dashboardUser(t, email('target'), PASSWORD, own.accountId)
    const refusedOperator = [
      ['/dashboard/price', { cost_per_message: '999' }],
      [`/dashboard/accounts/${own.accountId}/price`, { cost_per_message: '999' }],
      ['/dashboard/users/invites', { email: 'nobody-csrf@example.com' }],
      [`/dashboard/users/${target.id}/active`, { active: 'false' }],
      [`/dashboard/users/${target.id}/link`, {}],
    ] as const
    for (const [path, form] of refusedOperator) {
      expect({ path, status: (await op.client.post(path, { _csrf: 'wrong', ...form })).status }).toEqual({ path, status: 403 })
      const page = await op.client.get('/dashboard/users')
      expect({
        path,
        status: (await op.client.post(path, { _csrf: page.csrf!, ...form }, { 'sec-fetch-site': 'cross-site' })).status,
      }).toEqual({
        path,
        status: 403,
      })
    }
    expect((await t.api('GET', '/webhook', own.key)).status).toBe(404)
    expect((await t.admin('GET', '/price')).body.data.cost_per_message).toBe(before)
    expect((await t.admin('GET', `/price?account_id=${own.accountId}`)).body.data.account_override).toBe(false)
    const [{ n }] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from users where email = 'nobody-csrf@example.com'`
    expect(n).toBe(0)
    expect((await target.client.get('/dashboard')).status).toBe(200)
    expect(await actions(own.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'member invited',
      'password set',
    ])
  })
})

describe('price', () => {
  test('the global price and an account override (set and clear), audited; the account page links its pages', async () => {
    const op = await operator()
    const own = await t.account(0)
    let page = await op.client.get('/dashboard/price')
    const bad = await op.client.post('/dashboard/price', { _csrf: page.csrf!, cost_per_message: '0' })
    expect(bad.status).toBe(422)
    expect(bad.text).toContain('cost_per_message: must be a positive integer')
    expect((await op.client.post('/dashboard/price', { _csrf: page.csrf!, cost_per_message: 'abc' })).status).toBe(422)
    expect((await op.client.post('/dashboard/price', { _csrf: page.csrf!, cost_per_message: '1234' })).status).toBe(303)
    expect((await t.admin('GET', '/price')).body.data.cost_per_message).toBe(1234)
    page = await op.client.get('/dashboard/price')
    expect(page.text).toContain('1,234')

    page = await op.client.get(`/dashboard/accounts/${own.accountId}`)
    for (const sub of ['messages', 'ledger', 'contacts', 'templates', 'campaigns', 'webhook', 'keys']) {
      expect(page.text).toContain(`href="/dashboard/accounts/${own.accountId}/${sub}"`)
    }
    expect(page.text).toContain('the global price')
    expect(page.text).not.toContain('Clear own price')
    expect((await op.client.post(`/dashboard/accounts/${own.accountId}/price`, { _csrf: page.csrf!, cost_per_message: '77' })).status).toBe(
      303,
    )
    expect((await t.admin('GET', `/price?account_id=${own.accountId}`)).body.data).toMatchObject({
      cost_per_message: 77,
      account_override: true,
    })
    page = await op.client.get(`/dashboard/accounts/${own.accountId}`)
    expect(page.text).toContain('its own price')
    expect((await op.client.post(`/dashboard/accounts/${own.accountId}/price/clear`, { _csrf: page.csrf! })).status).toBe(303)
    expect((await t.admin('GET', `/price?account_id=${own.accountId}`)).body.data).toMatchObject({
      cost_per_message: 1234,
      account_override: false,
    })
    expect((await op.client.post('/dashboard/accounts/99999999/price', { _csrf: page.csrf!, cost_per_message: '5' })).status).toBe(404)

    expect(await actions(own.accountId)).toEqual(['account created', 'key created', 'account price set', 'account price cleared'])
    const [global] = await t.db.sql<{ detail: any; actor: string }[]>`
      select detail, actor from audit_log where action = 'price set' order by id desc limit 1`
    expect(json(global!.detail)).toMatchObject({ cost_per_message: 1234 })
    expect(global!.actor).toMatch(/^op-/)
  })
})

describe('late failures', () => {
  test('the price forms set whether late failures are refunded, globally and for an account; the pages show it; audited', async () => {
    const op = await operator()
    const own = await t.account(0)
    const global = (await t.admin('GET', '/price')).body.data
    const radio = (text: string, value: string) =>
      new RegExp(`<input type="radio" name="late_failures" value="${value}"( checked)?`).exec(text)?.[1] === ' checked'
    try {
      let page = await op.client.get('/dashboard/price')
      expect(page.text).toContain('<legend>Messages that fail after the provider accepted them</legend>')
      expect(page.text).toContain('<div class="value" id="late-failures">refunded</div>')
      expect([radio(page.text, 'refund'), radio(page.text, 'charge')]).toEqual([true, false])
      const bad = await op.client.post('/dashboard/price', { _csrf: page.csrf!, cost_per_message: '40', late_failures: 'sometimes' })
      expect(bad.status).toBe(422)
      expect(bad.text).toContain('late_failures: choose whether to refund late failures or keep them charged')
      expect((await t.admin('GET', '/price')).body.data).toEqual(global)

      const set = await op.client.follow(
        await op.client.post('/dashboard/price', { _csrf: page.csrf!, cost_per_message: '40', late_failures: 'charge' }),
      )
      expect(set.text).toContain(
        'The global price is now 40 IDR per message (it was ' +
          `${global.cost_per_message.toLocaleString('en')} IDR). Messages charged from now on that fail after the provider accepted ` +
          'them are kept charged.',
      )
      expect((await t.admin('GET', '/price')).body.data).toMatchObject({ cost_per_message: 40, refund_late_failures: false })
      page = await op.client.get('/dashboard/price')
      expect(page.text).toContain('<div class="value" id="late-failures">kept charged</div>')
      expect([radio(page.text, 'refund'), radio(page.text, 'charge')]).toEqual([false, true])

      // The account follows the global choice until its own price says otherwise.
      page = await op.client.get(`/dashboard/accounts/${own.accountId}`)
      expect(page.text).toContain('<div class="value" id="late-failures">kept charged</div>')
      expect([radio(page.text, 'refund'), radio(page.text, 'charge')]).toEqual([false, true])
      const own1 = await op.client.post(`/dashboard/accounts/${own.accountId}/price`, {
        _csrf: page.csrf!,
        cost_per_message: '55',
        late_failures: 'refund',
      })
      expect(own1.status).toBe(303)
      expect((await t.admin('GET', `/price?account_id=${own.accountId}`)).body.data).toMatchObject({
        cost_per_message: 55,
        account_override: true,
        refund_late_failures: true,
      })
      page = await op.client.get(`/dashboard/accounts/${own.accountId}`)
      expect(page.text).toContain('<div class="value" id="late-failures">refunded</div>')
      expect([radio(page.text, 'refund'), radio(page.text, 'charge')]).toEqual([true, false])
      // A form without the choice (an older page) keeps it.
      expect(
        (await op.client.post(`/dashboard/accounts/${own.accountId}/price`, { _csrf: page.csrf!, cost_per_message: '56' })).status,
      ).toBe(303)
      expect((await t.admin('GET', `/price?account_id=${own.accountId}`)).body.data.refund_late_failures).toBe(true)

      const [audited] = await t.db.sql<{ detail: any }[]>`
        select detail from audit_log where action = 'account price set' and account_id = ${own.accountId} order by id limit 1`
      expect(json(audited!.detail)).toMatchObject({ refund_late_failures: true, previous_refund_late_failures: false })
      const [globalAudit] = await t.db.sql<{ detail: any }[]>`
        select detail from audit_log where action = 'price set' order by id desc limit 1`
      expect(json(globalAudit!.detail)).toMatchObject({
        cost_per_message: 40,
        refund_late_failures: false,
        previous_refund_late_failures: true,
      })
    } finally {
      await t.admin('PUT', '/price', { cost_per_message: global.cost_per_message, refund_late_failures: true })
    }
  })
})

describe('users', () => {
  test('invite an operator: the link is shown once and works', async () => {
    const op = await operator()
    let page = await op.client.get('/dashboard/users')
    const invited = await op.client.follow(
      await op.client.post('/dashboard/users/invites', { _csrf: page.csrf!, email: 'New-Op@Example.com' }),
    )
    expect(invited.status).toBe(200)
    const link = /id="user-link">([^<]+)</.exec(invited.text)![1]!
    expect(link).toMatch(/^http:\/\/localhost\/dashboard\/link\/[A-Za-z0-9]{43}$/)
    page = await op.client.get('/dashboard/users')
    expect(page.text).toContain('new-op@example.com')
    expect(page.text).not.toContain(link)
    const dup = await op.client.post('/dashboard/users/invites', { _csrf: page.csrf!, email: 'new-op@example.com' })
    expect(dup.status).toBe(409)
    const browser = webClient(t)
    expect((await browser.useLink(link, PASSWORD)).status).toBe(303)
    expect((await browser.get('/dashboard/users')).status).toBe(200)
    const [row] = await t.db.sql<{ action: string; detail: any }[]>`
      select action, detail from audit_log where action = 'operator invited' order by id desc limit 1`
    expect(json(row!.detail).email).toBe('new-op@example.com')
  })

  test('a reset link signs the user in and ends their old sessions', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('reset'), PASSWORD, own.accountId)
    expect((await member.client.get('/dashboard')).status).toBe(200)
    const op = await operator()
    const page = await op.client.get('/dashboard/users')
    const made = await op.client.follow(await op.client.post(`/dashboard/users/${member.id}/link`, { _csrf: page.csrf! }))
    expect(made.status).toBe(200)
    const link = /id="user-link">([^<]+)</.exec(made.text)![1]!
    expect((await op.client.post('/dashboard/users/99999999/link', { _csrf: page.csrf! })).status).toBe(404)
    const browser = webClient(t)
    expect((await browser.useLink(link, 'a brand new password')).status).toBe(303)
    expect((await browser.get('/dashboard')).status).toBe(200)
    // The old session is gone; the new password works, the old one does not.
    expect((await member.client.get('/dashboard')).location).toBe('/dashboard/sign-in')
    expect((await webClient(t).signIn((await userEmail(member.id))!, PASSWORD)).status).toBe(401)
    expect((await webClient(t).signIn((await userEmail(member.id))!, 'a brand new password')).status).toBe(303)
    expect(await actions(own.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'password reset link made',
      'password set',
    ])
  })

  test('deactivation refuses the session at once; reactivation lets them sign in again; no self-deactivation', async () => {
    const own = await t.account(0)
    const member = await dashboardUser(t, email('off'), PASSWORD, own.accountId)
    expect((await member.client.get('/dashboard')).status).toBe(200)
    const op = await operator()
    let page = await op.client.get('/dashboard/users')
    expect((await op.client.post(`/dashboard/users/${member.id}/active`, { _csrf: page.csrf!, active: 'false' })).status).toBe(303)
    expect((await member.client.get('/dashboard')).location).toBe('/dashboard/sign-in')
    const address = (await userEmail(member.id))!
    expect((await webClient(t).signIn(address, PASSWORD)).status).toBe(401)
    page = await op.client.get('/dashboard/users')
    expect(page.text).toContain(`aria-label="Reactivate ${address}"`)
    expect((await op.client.post(`/dashboard/users/${member.id}/active`, { _csrf: page.csrf!, active: 'true' })).status).toBe(303)
    expect((await webClient(t).signIn(address, PASSWORD)).status).toBe(303)
    const self = await op.client.post(`/dashboard/users/${op.id}/active`, { _csrf: page.csrf!, active: 'false' })
    expect(self.status).toBe(422)
    expect((await op.client.get('/dashboard/users')).status).toBe(200)
    expect(await actions(own.accountId)).toEqual([
      'account created',
      'key created',
      'member invited',
      'password set',
      'user deactivated',
      'user reactivated',
    ])
  })
})

async function userEmail(id: number) {
  const [row] = await t.db.sql<{ email: string }[]>`select email from users where id = ${id}`
  return row?.email
}

describe('failed deliveries and the audit log', () => {
  test('failed deliveries across accounts, newest first, replayed from the list; escaping', async () => {
    const a = await t.account(1000000)
    const op = await operator()
    const accounts = await op.client.get('/dashboard/accounts')
    const created = await op.client.post('/dashboard/accounts', {
      _csrf: accounts.csrf!,
      name: '<script>alert(1)</script> Shop',
      balance: '1000000',
    })
    const bId = Number(created.location!.split('/').pop())
    const bKey = await t.admin('POST', `/accounts/${bId}/keys`, { label: '<b>key</b>' })
    await t.api('POST', '/webhook', a.key, { url: rx.url() })
    await t.api('POST', '/webhook', bKey.body.data.key, { url: rx.url() })
    const member = await dashboardUser(t, email('fail'), PASSWORD, a.accountId)
    let page = await member.client.get('/dashboard/webhook')
    await member.client.post(`/dashboard/webhook/keys/${a.keyId}/test`, { _csrf: page.csrf! })
    const sent = await t.api('POST', '/messages/send', bKey.body.data.key, { to: '081234567003', body: 'hi' })
    expect(sent.body).toMatchObject({ success: true })
    await reportStatus(t, sent.body.data.message_id, 'delivered')
    const ids = await t.db.sql<{ id: number }[]>`
      update webhook_events set status = 'failed', attempts = 8, last_error = 'HTTP 500'
      where api_key_id in (${a.keyId}, ${bKey.body.data.id}) returning id`
    expect(ids.length).toBe(2)

    page = await op.client.get('/dashboard/deliveries')
    expect(page.status).toBe(200)
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Shop')
    expect(page.text).toContain('&lt;b&gt;key&lt;/b&gt;')
    expect(page.text).not.toContain('<script>alert')
    expect(page.text).toContain(sent.body.data.message_id)
    // Newest first: account B's event was written after A's test event.
    expect(page.text.indexOf(sent.body.data.message_id)).toBeLessThan(page.text.indexOf('test event'))
    const [bEvent] = await events(bKey.body.data.id)
    expect((await op.client.post(`/dashboard/deliveries/${bEvent!.id}/replay`, { _csrf: page.csrf! })).status).toBe(303)
    expect((await events(bKey.body.data.id))[0]!.status).toBe('pending')
    expect((await op.client.post('/dashboard/deliveries/99999999/replay', { _csrf: page.csrf! })).status).toBe(404)
    expect((await op.client.get('/dashboard/deliveries')).text).not.toContain(sent.body.data.message_id)
    expect(await actions(bId)).toEqual(['account created', 'key created', 'webhook delivery replayed'])
    await t.db.sql`update webhook_events set status = 'failed' where api_key_id = ${bKey.body.data.id}`

    // The audit log: newest first, filtered by account, escaped.
    const audit = await op.client.get(`/dashboard/audit?account=${bId}`)
    expect(audit.status).toBe(200)
    expect(audit.text.indexOf('webhook delivery replayed')).toBeLessThan(audit.text.indexOf('account created'))
    expect(audit.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt; Shop')
    expect(audit.text).not.toContain('<script>alert')
    expect(audit.text).not.toContain('webhook test sent')
    // The detail is a JSON object (not a JSON string), shown as its text.
    expect(audit.text).toContain('{&quot;name&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt; Shop&quot;')
    const [kind] = await t.db.sql<{ type: string }[]>`select jsonb_typeof(detail) as type from audit_log where account_id = ${bId} limit 1`
    expect(kind!.type).toBe('object')
    const all = await op.client.get('/dashboard/audit')
    expect(all.text).toContain('webhook test sent')
    expect(all.text).toContain('admin token')
    expect((await op.client.get('/dashboard/audit?account=abc')).status).toBe(422)
    // Pagination.
    const [{ n }] = await t.db.sql<[{ n: number }]>`select count(*)::int as n from audit_log`
    if (n > 50) expect(all.text).toContain('href="/dashboard/audit?offset=50"')
  }, 30_000)
})
