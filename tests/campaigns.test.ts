import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { testApp, type TestApp } from './helpers/app'
import { formatTimestamp } from '../src/lib/time'
import { TestClock } from '../src/lib/clock'

const clock = new TestClock()
let t: TestApp
beforeAll(async () => {
  t = await testApp({ clock })
}, 60_000)
afterAll(() => t.close())

/** An account with a key, one template and one segment. */
async function setup() {
  const account = await t.account()
  const template = await t.admin('POST', `/accounts/${account.accountId}/templates`, { name: 'Shipped', body: 'Hi {{name}}, shipped.' })
  const segment = await t.admin('POST', `/accounts/${account.accountId}/segments`, { name: 'VIP', tag: 'vip' })
  return { ...account, templateId: template.body.data.id as number, segmentId: segment.body.data.id as number }
}

const inOneHour = () => formatTimestamp(new Date(clock.now().getTime() + 3_600_000), 'UTC')!

describe('admin: templates and segments', () => {
  test('create and list templates', async () => {
    const { accountId } = await t.account()
    const created = await t.admin('POST', `/accounts/${accountId}/templates`, { name: ' Promo ', body: 'Hello {{name}}!' })
    expect(created.status).toBe(201)
    expect(created.body.data).toEqual({
      id: expect.any(Number),
      name: 'Promo',
      body: 'Hello {{name}}!',
      created_at: expect.any(String),
      bindings: [],
    })
    await t.admin('POST', `/accounts/${accountId}/templates`, { name: 'Second', body: 'x' })
    const list = await t.admin('GET', `/accounts/${accountId}/templates`)
    expect(list.status).toBe(200)
    expect(list.body.data).toMatchObject({ total: 2, limit: 50, offset: 0, has_more: false })
    expect(list.body.data.items.map((x: { name: string }) => x.name)).toEqual(['Second', 'Promo'])
    const page = await t.admin('GET', `/accounts/${accountId}/templates?limit=1&offset=1`)
    expect(page.body.data).toMatchObject({ total: 2, limit: 1, offset: 1, has_more: false, items: [{ name: 'Promo' }] })
  })

  test('create and list segments', async () => {
    const { accountId } = await t.account()
    const created = await t.admin('POST', `/accounts/${accountId}/segments`, { name: 'Resellers', tag: ' reseller ' })
    expect(created.status).toBe(201)
    expect(created.body.data).toEqual({
      id: expect.any(Number),
      name: 'Resellers',
      tag: 'reseller',
      contact_count: 0,
      created_at: expect.any(String),
    })
    const list = await t.admin('GET', `/accounts/${accountId}/segments`)
    expect(list.body.data).toMatchObject({ total: 1, items: [{ name: 'Resellers', tag: 'reseller' }] })
  })

  test('validation, 401 and 404', async () => {
    const { accountId, key } = await t.account()
    const cases: [string, unknown, number, RegExp][] = [
      ['templates', { body: 'x' }, 400, /^name: is required/],
      ['templates', { name: 'x' }, 400, /^body: is required/],
      ['templates', { name: 'x', body: 5 }, 400, /^body: must be a string/],
      ['templates', { name: ' ', body: 'x' }, 422, /^name: must not be empty/],
      ['templates', { name: 'x', body: '  ' }, 422, /^body: must not be empty/],
      ['templates', { name: 'x', body: 'x'.repeat(4097) }, 422, /^body: must be at most 4096/],
      ['segments', { name: 'x' }, 400, /^tag: is required/],
      ['segments', { name: 'x', tag: '' }, 422, /^tag: must not be empty/],
      ['segments', { name: 'x', tag: 'a,b' }, 422, /^tag: must not contain a comma/],
      ['segments', { name: 'x', tag: 'x'.repeat(101) }, 422, /^tag: must be at most 100/],
    ]
    for (const [what, body, status, message] of cases) {
      const res = await t.admin('POST', `/accounts/${accountId}/${what}`, body)
      expect({ what, body, status: res.status, code: res.body.code }).toEqual({ what, body, status, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    for (const what of ['templates', 'segments']) {
      const missing = await t.admin(
        'POST',
        `/accounts/999999/${what}`,
        what === 'templates' ? { name: 'x', body: 'x' } : { name: 'x', tag: 'x' },
      )
      expect(missing.status).toBe(404)
      expect(missing.body.code).toBe('NOT_FOUND')
      expect((await t.admin('GET', `/accounts/999999/${what}`)).status).toBe(404)
      expect((await t.admin('GET', `/accounts/${accountId}/${what}?limit=0`)).status).toBe(422)
      const withApiKey = await t.request('GET', `/admin/v1/accounts/${accountId}/${what}`, { key })
      expect(withApiKey.status).toBe(401)
      expect((await t.request('GET', `/admin/v1/accounts/${accountId}/${what}`)).status).toBe(401)
    }
  })
})

describe('POST /campaigns', () => {
  test('201 with a draft campaign', async () => {
    const { key, keyId, templateId, segmentId } = await setup()
    const scheduleAt = inOneHour()
    const res = await t.api('POST', '/campaigns', key, {
      name: ' Ramadan ',
      template_id: templateId,
      segment_id: segmentId,
      schedule_at: scheduleAt,
    })
    expect(res.status).toBe(201)
    expect(res.body).toEqual({
      success: true,
      data: {
        campaign: {
          id: expect.any(Number),
          name: 'Ramadan',
          status: 'draft',
          template_id: templateId,
          segment_id: segmentId,
          sender_id: null,
          parameters: null,
          schedule_at: scheduleAt,
          created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
        },
      },
    })
    const [row] = await t.db.sql`select api_key_id, status from campaigns where id = ${res.body.data.campaign.id}`
    expect(row).toEqual({ api_key_id: keyId, status: 'draft' })
  })

  test('schedule_at is optional; the current second is not the past', async () => {
    const { key, templateId, segmentId } = await setup()
    const bare = await t.api('POST', '/campaigns', key, { name: 'Now', template_id: templateId, segment_id: segmentId })
    expect(bare.status).toBe(201)
    expect(bare.body.data.campaign.schedule_at).toBeNull()
    const now = formatTimestamp(clock.now(), 'UTC')!
    // To the last millisecond of that second: it is still now, not the past.
    await clock.advance(999)
    const res = await t.api('POST', '/campaigns', key, { name: 'Now', template_id: templateId, segment_id: segmentId, schedule_at: now })
    expect(res.status).toBe(201)
  })

  test('validation: 400 for shape, 422 for values, each naming the field', async () => {
    const { key, accountId, templateId, segmentId } = await setup()
    const ok = { name: 'C', template_id: templateId, segment_id: segmentId }
    const cases: [unknown, number, RegExp][] = [
      [{ template_id: templateId, segment_id: segmentId }, 400, /^name: is required/],
      [{ name: 'C', segment_id: segmentId }, 400, /^template_id: is required/],
      [{ name: 'C', template_id: templateId }, 400, /^segment_id: is required/],
      [{ ...ok, name: 3 }, 400, /^name: must be a string/],
      [{ ...ok, template_id: String(templateId) }, 400, /^template_id: must be an integer/],
      [{ ...ok, template_id: 1.5 }, 400, /^template_id: must be an integer/],
      [{ ...ok, segment_id: null }, 400, /^segment_id: must be an integer/],
      [{ ...ok, schedule_at: 20300101 }, 400, /^schedule_at: must be a string/],
      [[ok], 400, /body must be a JSON object/],
      [{ ...ok, name: '  ' }, 422, /^name: must not be empty/],
      [{ ...ok, name: 'x'.repeat(201) }, 422, /^name: must be at most 200/],
      [{ ...ok, schedule_at: '2099-01-01T00:00:00' }, 422, /^schedule_at: must be a timestamp YYYY-MM-DD HH:MM:SS/],
      [{ ...ok, schedule_at: '2099-02-30 00:00:00' }, 422, /^schedule_at: must be a timestamp/],
      [{ ...ok, schedule_at: '2099-01-01 24:00:00' }, 422, /^schedule_at: must be a timestamp/],
      [{ ...ok, schedule_at: '2099-01-01' }, 422, /^schedule_at: must be a timestamp/],
      [{ ...ok, schedule_at: '' }, 422, /^schedule_at: must be a timestamp/],
      [{ ...ok, schedule_at: '2020-01-01 00:00:00' }, 422, /^schedule_at: must not be in the past/],
      [
        { ...ok, schedule_at: formatTimestamp(new Date(clock.now().getTime() - 5_000), 'UTC') },
        422,
        /^schedule_at: must not be in the past/,
      ],
      [{ ...ok, template_id: 999999 }, 422, /^template_id: template 999999 does not exist/],
      [{ ...ok, segment_id: 999999 }, 422, /^segment_id: segment 999999 does not exist/],
      [{ ...ok, template_id: 0 }, 422, /^template_id: /],
      [{ ...ok, template_id: -4 }, 422, /^template_id: /],
      [{ ...ok, template_id: 1e20 }, 422, /^template_id: /],
      [{ ...ok, segment_id: segmentId + 100 }, 422, /^segment_id: /],
    ]
    for (const [body, status, message] of cases) {
      const res = await t.api('POST', '/campaigns', key, body)
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(message)
    }
    const [count] = await t.db.sql`select count(*)::int as n from campaigns where account_id = ${accountId}`
    expect(count!.n).toBe(0)
  })

  test("another account's template or segment is 422, as if it did not exist", async () => {
    const mine = await setup()
    const theirs = await setup()
    const template = await t.api('POST', '/campaigns', mine.key, { name: 'C', template_id: theirs.templateId, segment_id: mine.segmentId })
    expect(template.status).toBe(422)
    expect(template.body.error).toBe(`template_id: template ${theirs.templateId} does not exist`)
    const segment = await t.api('POST', '/campaigns', mine.key, { name: 'C', template_id: mine.templateId, segment_id: theirs.segmentId })
    expect(segment.status).toBe(422)
    expect(segment.body.error).toBe(`segment_id: segment ${theirs.segmentId} does not exist`)
  })

  test('the schema itself refuses a campaign built from another account', async () => {
    const mine = await setup()
    const theirs = await setup()
    const attempt = t.db.sql`
      insert into campaigns (account_id, name, template_id, segment_id)
      values (${mine.accountId}, 'x', ${theirs.templateId}, ${mine.segmentId})`
    await expect(attempt).rejects.toMatchObject({ code: '23503' })
  })

  test('401 before validation', async () => {
    const missing = await t.request('POST', '/api/v1/campaigns', { body: { name: 1 } })
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe('AUTH_MISSING_HEADER')
    const wrong = await t.request('POST', '/api/v1/campaigns', { key: 'pm_' + 'y'.repeat(40), body: {} })
    expect(wrong.body.code).toBe('AUTH_INVALID_KEY')
  })
})

describe('schedule_at in the configured time zone', () => {
  let jakarta: TestApp
  beforeAll(async () => {
    jakarta = await testApp({ clock, env: { TIMEZONE: 'Asia/Jakarta' } })
  }, 60_000)
  afterAll(() => jakarta.close())

  test('read and written as Asia/Jakarta wall-clock time, stored as the instant', async () => {
    const { key, accountId } = await jakarta.account()
    const template = await jakarta.admin('POST', `/accounts/${accountId}/templates`, { name: 'T', body: 'b' })
    const segment = await jakarta.admin('POST', `/accounts/${accountId}/segments`, { name: 'S', tag: 'x' })
    const res = await jakarta.api('POST', '/campaigns', key, {
      name: 'C',
      template_id: template.body.data.id,
      segment_id: segment.body.data.id,
      schedule_at: '2099-06-01 09:00:00',
    })
    expect(res.status).toBe(201)
    expect(res.body.data.campaign.schedule_at).toBe('2099-06-01 09:00:00')
    const [row] = await jakarta.db.sql<{ schedule_at: Date }[]>`select schedule_at from campaigns where id = ${res.body.data.campaign.id}`
    expect(row!.schedule_at.toISOString()).toBe('2099-06-01T02:00:00.000Z')
  })
})

describe('GET /campaigns/{id}', () => {
  test('the campaign and its message counts by status', async () => {
    const { key, accountId, templateId, segmentId } = await setup()
    const created = await t.api('POST', '/campaigns', key, { name: 'Stats', template_id: templateId, segment_id: segmentId })
    const id = created.body.data.campaign.id
    const other = await t.api('POST', '/campaigns', key, { name: 'Other', template_id: templateId, segment_id: segmentId })
    const statuses = ['queued', 'sent', 'sent', 'delivered', 'delivered', 'delivered', 'read', 'failed', 'failed']
    for (const [i, status] of statuses.entries()) {
      await t.db.sql`
        insert into messages (account_id, campaign_id, phone, body, status, cost)
        values (${accountId}, ${id}, ${`+6281200000${String(i).padStart(3, '0')}`}, 'b', ${status}, 1)`
    }
    await t.db.sql`
      insert into messages (account_id, campaign_id, phone, body, status, cost)
      values (${accountId}, ${other.body.data.campaign.id}, '+62812000099', 'b', 'read', 1),
             (${accountId}, null, '+62812000098', 'b', 'read', 1)`
    const res = await t.api('GET', `/campaigns/${id}`, key)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      success: true,
      data: {
        campaign: {
          ...created.body.data.campaign,
          started_at: null,
          finished_at: null,
          pause_reason: null,
        },
        stats: { total: 9, sent: 6, delivered: 4, read: 1, failed: 2, window_closed: 0, opted_out: 0, missing_values: 0, user_id_only: 0 },
      },
    })
  })

  test('a campaign without messages has zero counts', async () => {
    const { key, templateId, segmentId } = await setup()
    const created = await t.api('POST', '/campaigns', key, { name: 'Empty', template_id: templateId, segment_id: segmentId })
    const res = await t.api('GET', `/campaigns/${created.body.data.campaign.id}`, key)
    expect(res.body.data.stats).toEqual({
      total: 0,
      sent: 0,
      delivered: 0,
      read: 0,
      failed: 0,
      window_closed: 0,
      opted_out: 0,
      missing_values: 0,
      user_id_only: 0,
    })
  })

  test("404 for unknown ids and another account's; 400 for a non-integer id", async () => {
    const mine = await setup()
    const theirs = await setup()
    const created = await t.api('POST', '/campaigns', theirs.key, {
      name: 'Theirs',
      template_id: theirs.templateId,
      segment_id: theirs.segmentId,
    })
    for (const id of [created.body.data.campaign.id, 999999, 0, -1, '99999999999999999999']) {
      const res = await t.api('GET', `/campaigns/${id}`, mine.key)
      expect({ id, status: res.status, code: res.body.code }).toEqual({ id, status: 404, code: 'NOT_FOUND' })
    }
    for (const id of ['abc', '1.5', '1e3x']) {
      const res = await t.api('GET', `/campaigns/${id}`, mine.key)
      expect({ id, status: res.status, code: res.body.code }).toEqual({ id, status: 400, code: 'VALIDATION_ERROR' })
      expect(res.body.error).toMatch(/^id: must be an integer/)
    }
    expect((await t.request('GET', '/api/v1/campaigns/1')).status).toBe(401)
  })

  test("the schema refuses a message counted for another account's campaign", async () => {
    const mine = await setup()
    const theirs = await setup()
    const created = await t.api('POST', '/campaigns', theirs.key, {
      name: 'Theirs',
      template_id: theirs.templateId,
      segment_id: theirs.segmentId,
    })
    const attempt = t.db.sql`
      insert into messages (account_id, campaign_id, phone, body, status, cost)
      values (${mine.accountId}, ${created.body.data.campaign.id}, '+62812000097', 'b', 'sent', 1)`
    await expect(attempt).rejects.toMatchObject({ code: '23503' })
  })
})

describe('GET /campaigns', () => {
  test('newest first, ties broken by id; offset counts records; tenant isolation', async () => {
    const { key, accountId, templateId, segmentId } = await setup()
    const other = await setup()
    await t.api('POST', '/campaigns', other.key, { name: 'Not mine', template_id: other.templateId, segment_id: other.segmentId })
    await t.db.sql`
      insert into campaigns (account_id, name, template_id, segment_id, created_at)
      select ${accountId}, 'same ' || g, ${templateId}, ${segmentId}, '2025-01-01 00:00:00+00' from generate_series(1, 4) g`
    await t.db.sql`
      insert into campaigns (account_id, name, template_id, segment_id, status, created_at)
      values (${accountId}, 'old', ${templateId}, ${segmentId}, 'sent', '2024-01-01 00:00:00+00')`
    const fresh = await t.api('POST', '/campaigns', key, { name: 'fresh', template_id: templateId, segment_id: segmentId })
    const all = await t.api('GET', '/campaigns', key)
    expect(all.status).toBe(200)
    expect(all.body.data).toMatchObject({ total: 6, limit: 50, offset: 0, has_more: false })
    expect(all.body.data.items.map((c: { name: string }) => c.name)).toEqual(['fresh', 'same 4', 'same 3', 'same 2', 'same 1', 'old'])
    expect(all.body.data.items[0]).toEqual(fresh.body.data.campaign)
    expect(all.body.data.items[5]).toMatchObject({ status: 'sent', created_at: '2024-01-01 00:00:00', schedule_at: null })
    const ids: number[] = []
    for (let offset = 0; offset < 6; offset += 4) {
      const res = await t.api('GET', `/campaigns?limit=4&offset=${offset}`, key)
      expect(res.body.data).toMatchObject({ total: 6, limit: 4, offset, has_more: offset + 4 < 6 })
      ids.push(...res.body.data.items.map((c: { id: number }) => c.id))
    }
    expect(ids).toEqual(all.body.data.items.map((c: { id: number }) => c.id))
    const theirs = await t.api('GET', '/campaigns', other.key)
    expect(theirs.body.data.items.map((c: { name: string }) => c.name)).toEqual(['Not mine'])
  })

  test('query validation and 401', async () => {
    const { key } = await t.account()
    const cases: [string, number, RegExp][] = [
      ['limit=x', 400, /^limit: must be an integer/],
      ['limit=0', 422, /^limit: must be from 1 to 200/],
      ['limit=201', 422, /^limit: must be from 1 to 200/],
      ['offset=-5', 422, /^offset: must not be negative/],
    ]
    for (const [query, status, message] of cases) {
      const res = await t.api('GET', `/campaigns?${query}`, key)
      expect({ query, status: res.status }).toEqual({ query, status })
      expect(res.body.error).toMatch(message)
    }
    expect((await t.api('GET', '/campaigns', key)).body.data).toEqual({ items: [], total: 0, limit: 50, offset: 0, has_more: false })
    expect((await t.request('GET', '/api/v1/campaigns')).body.code).toBe('AUTH_MISSING_HEADER')
  })
})
