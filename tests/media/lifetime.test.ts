// An uploaded file's end (issue 32 §3): the retention worker's step deletes a file RETENTION_MEDIA_DAYS
// after its last use (the test clock moved past them): its bytes and its provider ids are gone, its id
// answers 404 (GET, a signed link to it, a send), and a message that sent it keeps its record; a file a
// queued message names stays. DELETE /api/v1/media/{id}: 204, then 404 (repeated, or another
// account's id), 409 while a queued message sends it.

import { afterAll, afterEach, beforeAll, describe, expect, test } from 'bun:test'
import { money, testApp, type TestApp } from '../helpers/app'
import { fakeTwilio } from '../helpers/fake-twilio'
import { fakeGraph, graphError } from '../helpers/fake-graph'
import { drain } from '../helpers/worker-steps'
import { TestClock } from '../../src/lib/clock'
import { signedLink } from '../../src/modules/media/signing'
import { assign, createSender, META_A, registerFakes, sendersEnv } from '../helpers/senders'
import { insertTemplate } from '../../src/modules/templates/catalog'

const DAY = 86_400_000
const clock = new TestClock(new Date('2026-12-01T00:00:00Z'))
const twilio = fakeTwilio()
const graph = fakeGraph({ clock })
registerFakes(twilio, graph)

const PDF = new TextEncoder().encode('%PDF-1.7\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n')

let t: TestApp
let metaSender: number
beforeAll(async () => {
  t = await testApp({ env: sendersEnv(twilio, graph, { RETENTION_MEDIA_DAYS: '30' }), clock, runOnClock: true })
  metaSender = await createSender(t, 'meta', META_A, { recipient_gap_ms: 0 })
  graph.reset()
}, 60_000)
afterAll(async () => {
  await t.close()
  twilio.stop()
  graph.stop()
})
afterEach(() => graph.reset())

async function call(method: string, path: string, key?: string, body?: Uint8Array, type?: string) {
  const headers: Record<string, string> = {}
  if (key) headers.authorization = `Bearer ${key}`
  if (type) headers['content-type'] = type
  const response = await t.app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
  const text = await response.text()
  let parsed: any = text
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: response.status, body: parsed }
}
const upload = async (key: string) => (await call('POST', '/api/v1/media', key, PDF, 'application/pdf')).body.data.id as string
const stored = async (id: string) =>
  (
    await t.db.sql<{ files: number; provider_ids: number }[]>`
      select (select count(*)::int from media where id = ${id}) as files,
             (select count(*)::int from media_provider_ids where media_id = ${id}) as provider_ids`
  )[0]!
const sendFile = (key: string, id: string) =>
  t.api('POST', '/messages/send', key, { to: '081234567890', type: 'document', document: { media_id: id, caption: 'Invoice' } })

describe('retention', () => {
  test('a file unused past RETENTION_MEDIA_DAYS goes: bytes and Graph id deleted, its id 404, the message that sent it kept', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const file = await upload(key)
    const sent = await sendFile(key, file)
    expect(sent.status).toBe(200)
    expect(await stored(file)).toEqual({ files: 1, provider_ids: 1 })

    // A day short of 30 days since its last use: kept.
    await clock.advance(29 * DAY)
    await drain(t, clock, 'retention')
    expect(await stored(file)).toEqual({ files: 1, provider_ids: 1 })

    await clock.advance(DAY + 1000)
    expect(await drain(t, clock, 'retention')).toBeGreaterThanOrEqual(1)
    expect(await stored(file)).toEqual({ files: 0, provider_ids: 0 })
    const shown = await call('GET', `/api/v1/media/${file}`, key)
    expect({ status: shown.status, code: shown.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    // A link this service signs now still finds nothing.
    const link = new URL(await signedLink(t.deps.secrets, clock, 'http://localhost', file))
    const fetched = await call('GET', `${link.pathname}${link.search}`)
    expect({ status: fetched.status, code: fetched.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    // A send by it is refused before charging.
    const before = await money(t, accountId)
    const again = await sendFile(key, file)
    expect({ status: again.status, code: again.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    expect(await money(t, accountId)).toEqual(before)
    // The message that sent it keeps its record, the id it named too.
    const message = await t.api('GET', `/messages/${sent.body.data.message_id}`, key)
    expect(message.status).toBe(200)
    expect(message.body.data).toMatchObject({ status: 'sent', content: { media_id: file, caption: 'Invoice' } })
  })

  test('a file a queued message names stays past its days', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const file = await upload(key)
    await clock.advance(31 * DAY)
    // Meta throttles the hand-off: the message stays queued, naming the file.
    graph.answer = () => graphError(400, 130429, '(#130429) Rate limit hit')
    const queued = await sendFile(key, file)
    expect(queued.body.data?.status).toBe('queued')
    await drain(t, clock, 'retention')
    expect((await stored(file)).files).toBe(1)
  })

  test("a campaign's header file stays past its days while the campaign may still send it; cancelled, it goes", async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const tpl = await t.db.sql.begin((tx) =>
      insertTemplate(
        tx,
        clock,
        {
          status: 'approved',
          language: 'id',
          category: 'marketing',
          parameterFormat: 'positional',
          components: [
            { type: 'HEADER', format: 'DOCUMENT', example: { header_handle: ['https://example.com/h.pdf'] } },
            { type: 'BODY', text: 'Katalog minggu ini.' },
          ],
          name: `katalog_${Math.random().toString(36).slice(2, 8)}`,
          senderId: metaSender,
          provider: 'meta',
        },
        'sync',
      ),
    )
    expect((await t.api('POST', '/contacts', key, { name: 'Budi', phone: '081234567891', tags: 'vip' })).status).toBe(201)
    const segment = await t.admin('POST', `/accounts/${accountId}/segments`, { name: 'vips', tag: 'vip' })
    const file = await upload(key)
    const made = await t.api('POST', '/campaigns', key, {
      name: 'katalog',
      template_id: tpl!.id,
      segment_id: segment.body.data.id,
      parameters: { header: { type: 'document', media_id: file } },
    })
    expect(made.status).toBe(201)
    const campaign = made.body.data.campaign.id as number

    await clock.advance(31 * DAY)
    // (The months ahead get their partitions, as the worker keeps them a running service.)
    await drain(t, clock, 'partitions')
    await drain(t, clock, 'retention')
    expect((await stored(file)).files).toBe(1)
    const refused = await call('DELETE', `/api/v1/media/${file}`, key)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'CONFLICT' })
    expect(refused.body.error).toContain('a campaign not yet sent or cancelled')

    expect((await t.admin('POST', `/campaigns/${campaign}/cancel`)).status).toBe(200)
    expect(await drain(t, clock, 'retention')).toBeGreaterThanOrEqual(1)
    expect((await stored(file)).files).toBe(0)
  })
})

describe('DELETE /api/v1/media/{id}', () => {
  test("204 and gone; again 404; another account's id 404 and kept; no key 401", async () => {
    const owner = await t.account(0)
    const other = await t.account(0)
    const file = await upload(owner.key)
    const theirs = await call('DELETE', `/api/v1/media/${file}`, other.key)
    expect({ status: theirs.status, code: theirs.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    expect((await stored(file)).files).toBe(1)
    expect((await call('DELETE', `/api/v1/media/${file}`)).status).toBe(401)

    const deleted = await call('DELETE', `/api/v1/media/${file}`, owner.key)
    expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 204, body: '' })
    expect(await stored(file)).toEqual({ files: 0, provider_ids: 0 })
    const repeated = await call('DELETE', `/api/v1/media/${file}`, owner.key)
    expect({ status: repeated.status, code: repeated.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
    expect((await call('GET', `/api/v1/media/${file}`, owner.key)).status).toBe(404)
    const notAnId = await call('DELETE', '/api/v1/media/not-an-id', owner.key)
    expect({ status: notAnId.status, code: notAnId.body.code }).toEqual({ status: 404, code: 'NOT_FOUND' })
  })

  test('a file sent through Meta: its Graph id goes with it, the message keeps its record; 409 while a queued message sends one', async () => {
    const { accountId, key } = await t.account(1000, { price: 10 })
    await assign(t, accountId, metaSender, true)
    const file = await upload(key)
    const sent = await sendFile(key, file)
    expect(sent.body.data?.status).toBe('sent')
    expect(await stored(file)).toEqual({ files: 1, provider_ids: 1 })
    expect((await call('DELETE', `/api/v1/media/${file}`, key)).status).toBe(204)
    expect(await stored(file)).toEqual({ files: 0, provider_ids: 0 })
    expect((await t.api('GET', `/messages/${sent.body.data.message_id}`, key)).body.data.content).toMatchObject({ media_id: file })

    const busy = await upload(key)
    graph.answer = () => graphError(400, 130429, '(#130429) Rate limit hit')
    expect((await sendFile(key, busy)).body.data?.status).toBe('queued')
    const refused = await call('DELETE', `/api/v1/media/${busy}`, key)
    expect({ status: refused.status, code: refused.body.code }).toEqual({ status: 409, code: 'CONFLICT' })
    expect(refused.body.error).toContain('queued message')
    expect((await stored(busy)).files).toBe(1)
  })
})
