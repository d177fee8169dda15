import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test('templates: unknown placeholders are rejected at save; get, update and delete follow the campaign rules', async () => {
  const a = await t.account(0)
  const bad = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'x', body: 'Hi {{first_name}}' })
  expect([bad.status, bad.body.code]).toEqual([422, 'VALIDATION_ERROR'])
  expect(bad.body.error).toContain('{{first_name}}')

  const created = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'promo', body: 'Hi {{name}}' })
  const id = created.body.data.id
  expect((await t.admin('GET', `/templates/${id}`)).body.data).toMatchObject({ id, name: 'promo', body: 'Hi {{name}}' })
  expect((await t.admin('PATCH', `/templates/${id}`, { body: 'Hello {{ name }} in {{city}}' })).body.data.body).toBe(
    'Hello {{ name }} in {{city}}',
  )
  expect((await t.admin('PATCH', `/templates/${id}`, { body: 'Hello {{nama}}' })).status).toBe(422)

  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 's', tag: 'vip' })
  const campaign = await t.api('POST', '/campaigns', a.key, { name: 'c', template_id: id, segment_id: segment.body.data.id })
  // a draft uses it: it may change, but not be deleted
  expect((await t.admin('PATCH', `/templates/${id}`, { name: 'promo 2' })).status).toBe(200)
  const del = await t.admin('DELETE', `/templates/${id}`)
  expect([del.status, del.body.code]).toEqual([409, 'CONFLICT'])
  // a running (here: paused, no balance) campaign uses it: it may not change
  await t.api('POST', '/contacts', a.key, { name: 'V', phone: '081234567890', tags: 'vip' })
  await t.admin('POST', `/campaigns/${campaign.body.data.campaign.id}/run`)
  await t.runWorker('campaign-runner')
  expect((await t.admin('GET', `/campaigns/${campaign.body.data.campaign.id}`)).body.data.campaign.status).toBe('paused')
  const locked = await t.admin('PATCH', `/templates/${id}`, { name: 'promo 3' })
  expect([locked.status, locked.body.code]).toEqual([409, 'CONFLICT'])

  const unused = await t.admin('POST', `/accounts/${a.accountId}/templates`, { name: 'spare', body: 'x' })
  expect((await t.admin('DELETE', `/templates/${unused.body.data.id}`)).status).toBe(200)
  expect((await t.admin('GET', `/templates/${unused.body.data.id}`)).status).toBe(404)
})

test('segments: the contacts carrying the tag, case-insensitive, counted now', async () => {
  const a = await t.account(0)
  for (const [i, tags] of ['VIP,jakarta', 'vip', 'Vip ', 'other', ''].entries()) {
    const res = await t.api('POST', '/contacts', a.key, { name: `c${i}`, phone: `08123456780${i}`, tags })
    expect(res.status).toBe(201)
  }
  const segment = await t.admin('POST', `/accounts/${a.accountId}/segments`, { name: 'vips', tag: 'vip' })
  expect(segment.body.data).toMatchObject({ name: 'vips', tag: 'vip', contact_count: 3 })
  await t.api('POST', '/contacts', a.key, { name: 'late', phone: '081234567809', tags: 'VIP' })
  expect((await t.admin('GET', `/segments/${segment.body.data.id}`)).body.data.contact_count).toBe(4)
  const listed = await t.admin('GET', `/accounts/${a.accountId}/segments`)
  expect(listed.body.data.items[0].contact_count).toBe(4)
  // another account's contacts never count
  const b = await t.account(0)
  await t.api('POST', '/contacts', b.key, { name: 'b', phone: '081234567810', tags: 'vip' })
  expect((await t.admin('GET', `/segments/${segment.body.data.id}`)).body.data.contact_count).toBe(4)
})
