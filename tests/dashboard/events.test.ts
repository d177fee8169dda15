// The dashboard's side of events beyond message.status, through app.handle: a member chooses a key's
// events with checkboxes (none checked is refused at the form, the choice shown and audited), the
// operator sets and clears the account's low-balance threshold (refused values at the field), and
// members see the threshold on their overview; delivery tables name each delivery's event.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser } from '../helpers/web'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
}, 60_000)
afterAll(() => t.close())

const PASSWORD = 'correct horse battery'
let n = 0
const email = (what: string) => `${what}-${++n}@example.com`
const checkbox = (text: string, form: string, name: string) => new RegExp(`<input[^>]*id="${form}-${name}"[^>]*>`).exec(text)?.[0]

describe('webhook page: events', () => {
  test('the checkboxes show the choice, change it, refuse none at the form, and the deliveries name their event', async () => {
    const own = await t.account(100, { price: 1 })
    const member = await dashboardUser(t, email('member'), PASSWORD, own.accountId)
    const page = await member.client.get('/dashboard/webhook')
    expect(page.status).toBe(200)
    const form = `url-${own.keyId}`
    // Not registered: the default is checked.
    expect(checkbox(page.text, form, 'event_message_status')).toContain('checked')
    expect(checkbox(page.text, form, 'event_message_received')).not.toContain('checked')
    expect(page.text).toContain('<legend>Events sent to this URL</legend>')

    const action = `/dashboard/webhook/keys/${own.keyId}`
    const chose = await member.client.post(action, {
      _csrf: page.csrf!,
      url: 'https://93.184.216.34/in',
      events_shown: '1',
      event_message_received: 'on',
      event_balance_low: 'on',
    })
    expect(chose.status).toBe(303)
    const after = await member.client.follow(chose)
    expect(after.text).toContain('Events: message.received, balance.low.')
    expect(checkbox(after.text, form, 'event_message_received')).toContain('checked')
    expect(checkbox(after.text, form, 'event_message_status')).not.toContain('checked')
    expect((await t.api('GET', '/webhook', own.key)).body.data.events).toEqual(['message.received', 'balance.low'])
    const [audited] = await t.db.sql<{ detail: any }[]>`
      select detail from audit_log where account_id = ${own.accountId} and action = 'webhook registered'`
    expect(audited!.detail).toMatchObject({ events: ['message.received', 'balance.low'], previous_events: null })

    const none = await member.client.post(action, { _csrf: after.csrf!, url: 'https://93.184.216.34/in', events_shown: '1' })
    expect(none.status).toBe(422)
    expect(none.text).toMatch(/role="alert">events: must name at least one of/)
    expect(checkbox(none.text, form, 'event_balance_low')).not.toContain('checked')
    expect((await t.api('GET', '/webhook', own.key)).body.data.events).toEqual(['message.received', 'balance.low'])

    // A balance.low delivery is listed as such.
    await t.admin('PATCH', `/accounts/${own.accountId}`, { low_balance_threshold: 100 })
    expect((await t.api('POST', '/messages/send', own.key, { to: '081299990001', body: 'x' })).status).toBe(200)
    const log = await member.client.get(`/dashboard/webhook?key=${own.keyId}`)
    expect(log.text).toMatch(/<span class="event">balance\.low<\/span> balance 99 below 100/)
  })
})

describe('low-balance threshold', () => {
  test('the operator sets it (as people type amounts), a bad one is refused at its field, empty clears it; the member sees it', async () => {
    const own = await t.account(500)
    const op = await dashboardUser(t, email('op'), PASSWORD)
    const member = await dashboardUser(t, email('member'), PASSWORD, own.accountId)
    const page = await op.client.get(`/dashboard/accounts/${own.accountId}`)
    expect(page.text).toContain('Low-balance alert')
    const action = `/dashboard/accounts/${own.accountId}/low-balance`

    const set = await op.client.post(action, { _csrf: page.csrf!, low_balance_threshold: '1,500' })
    expect(set.status).toBe(303)
    expect((await op.client.follow(set)).text).toContain('balance.low is sent when the balance falls below 1,500 IDR.')
    expect((await t.admin('GET', `/accounts/${own.accountId}`)).body.data.low_balance_threshold).toBe(1500)
    expect((await member.client.get('/dashboard')).text).toMatch(/Low-balance alert: below <strong>1,500 IDR<\/strong>/)

    for (const bad of ['0', 'lots']) {
      const refused = await op.client.post(action, { _csrf: page.csrf!, low_balance_threshold: bad })
      expect(refused.status).toBe(422)
      expect(refused.text).toMatch(
        /id="low-balance-low_balance_threshold"[^>]*aria-invalid="true"|aria-invalid="true"[^>]*id="low-balance-low_balance_threshold"/,
      )
    }
    expect((await t.admin('GET', `/accounts/${own.accountId}`)).body.data.low_balance_threshold).toBe(1500)

    const cleared = await op.client.post(action, { _csrf: page.csrf!, low_balance_threshold: '' })
    expect(cleared.status).toBe(303)
    expect((await t.admin('GET', `/accounts/${own.accountId}`)).body.data.low_balance_threshold).toBeNull()
    expect((await member.client.get('/dashboard')).text).toContain('No low-balance alert is set.')
    const actions = await t.db.sql<{ action: string }[]>`
      select action from audit_log where account_id = ${own.accountId} and action = 'low-balance threshold set'`
    expect(actions).toHaveLength(2)
    // Members cannot set it: operator pages are not theirs (404).
    const theirs = await member.client.get('/dashboard')
    expect((await member.client.post(action, { _csrf: theirs.csrf!, low_balance_threshold: '5' })).status).toBe(404)
    expect((await t.admin('GET', `/accounts/${own.accountId}`)).body.data.low_balance_threshold).toBeNull()
  })
})
