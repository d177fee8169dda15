// A tour of every dashboard page: a running service (embedded database, or PostgreSQL with
// DATABASE_URL) seeded through the admin API and the public API with a shop's realistic data, an
// operator and a member signed in, each in a browser of their own, plus a browser signed in as
// nobody, and the list of pages to visit. The accessibility test (tests/dashboard/look.outer.test.ts) and
// the README's screenshots (tests/dashboard/screenshots.ts) both walk it.

import type { Page } from 'playwright-core'
import { readConfig } from '../../src/config'
import { startService, type Running } from '../../src/server'
import { ADMIN_TOKEN } from './app'
import { createMigratedPostgresDatabase, migratedDataDir, usingPostgres } from './db'
import { openBrowser, type TestBrowser } from './browser'
import { startReceiver, type Receiver } from './receiver'
import { fakeTwilioAccount } from './fake-twilio-account'
import { fakeGraph } from './fake-graph'

export const PASSWORD = 'a long enough password'
/** The widths every page is checked and shown at: a phone and a desktop. */
export const WIDTHS = [375, 1440] as const

export type Who = 'guest' | 'member' | 'operator'
/**
 * One page of the tour: `name` names its screenshot (null: no screenshot, the same page as another one's);
 * `path` is its path and query.
 */
export type Stop = { name: string | null; who: Who; path: string; status: number }

export type Tour = {
  base: string
  pages: Record<Who, Page>
  stops: Stop[]
  /** Ids of the seeded data, for tests that look closer. */
  seeded: { accountId: number; messageId: number }
  close(): Promise<void>
}

type Answer = { status: number; body: any }

export async function startTour(): Promise<Tour> {
  const cleanups: (() => Promise<void> | void)[] = []
  const close = async () => {
    for (const c of cleanups.reverse()) await c()
  }
  try {
    return await tour(cleanups, close)
  } catch (error) {
    await close()
    throw error
  }
}

async function tour(cleanups: (() => Promise<void> | void)[], close: () => Promise<void>): Promise<Tour> {
  const dataDir = await migratedDataDir('dashboard-tour-', (fn) => cleanups.push(fn))
  // The shop's ERP answers its webhook, though it is busy the first time it hears of one message (a
  // retry delivers it); the web shop's endpoint is down (500), then removed.
  const receiver: Receiver = startReceiver(null)
  const busyOnce = new Set<string>()
  receiver.handler = (r) => {
    if (r.path === '/hooks/shop') return new Response('down for maintenance', { status: 500 })
    const id = r.headers['webhook-id'] ?? ''
    if (r.body.includes('6283844447010') && !busyOnce.has(id)) {
      busyOnce.add(id)
      return new Response('busy', { status: 503 })
    }
    return new Response('ok')
  }
  cleanups.push(() => receiver.stop())
  // Twilio's account resource, which a Twilio sender's check reads.
  const twilio = fakeTwilioAccount('Toko Budi (WhatsApp)')
  cleanups.push(() => twilio.stop())
  // The Graph API, which the Meta sender's template sync lists (its business account has none).
  const graph = fakeGraph()
  cleanups.push(() => graph.stop())
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    ADMIN_TOKEN,
    LOG_LEVEL: 'error',
    TIMEZONE: 'Asia/Jakarta',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    // The address the providers would call, as a deployment sets it: the senders' pages show it to paste.
    PUBLIC_BASE_URL: 'https://wa.tokobudi.example',
    TWILIO_API_BASE: twilio.url,
    // Creating or checking a Twilio or Meta sender syncs its templates: from these fakes, never the Internet.
    TWILIO_CONTENT_API_BASE: twilio.url,
    META_API_BASE: graph.apiBase,
  }
  if (usingPostgres()) {
    const db = await createMigratedPostgresDatabase()
    env.DATABASE_URL = db.url
    cleanups.push(db.drop)
  }
  const service: Running = await startService(readConfig(env))
  cleanups.push(() => service.stop())
  const base = service.url

  const call = async (method: string, path: string, token: string, body?: unknown): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const answer = { status: response.status, body: (await response.json()) as any }
    if (answer.status >= 300) throw new Error(`${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`)
    return answer
  }
  const admin = (method: string, path: string, body?: unknown) =>
    call(method, `/admin/v1${path}`, ADMIN_TOKEN, body).then((a) => a.body.data)
  const api = (key: string, method: string, path: string, body?: unknown) =>
    call(method, `/api/v1${path}`, key, body).then((a) => a.body.data)
  const until = async (what: string, done: () => Promise<boolean>, ms = 30_000) => {
    const end = Date.now() + ms
    while (!(await done())) {
      if (Date.now() > end) throw new Error(`tour: ${what} did not happen within ${ms} ms`)
      await Bun.sleep(200)
    }
  }

  // Accounts, keys, money and people.
  const operator = await admin('POST', '/operators', { email: 'ops@example.com' })
  await admin('PUT', '/price', { cost_per_message: 350 })
  const account = await admin('POST', '/accounts', { name: 'Toko Budi', balance: 250_000 })
  await admin('POST', `/accounts/${account.id}/topups`, { amount: 100_000, note: 'bank transfer BCA 0412' })
  for (const [name, balance] of [
    ['Warung Sari', 48_000],
    ['Apotek Sehat Sentosa', 1_250_000],
  ] as const)
    await admin('POST', '/accounts', { name, balance })
  const erp = await admin('POST', `/accounts/${account.id}/keys`, { label: 'ERP production' })
  const shop = await admin('POST', `/accounts/${account.id}/keys`, { label: 'Web shop' })
  // The web shop's key has limits of its own: a lower rate and a daily spend cap.
  await admin('PATCH', `/keys/${shop.id}`, { rate_limit_per_minute: 120, daily_spend_cap: 250_000 })
  const member = await admin('POST', `/accounts/${account.id}/members`, { email: 'budi@tokobudi.example' })
  // Invited and not signed in yet: the page of this link is on the tour (opening it does not use it).
  const invited = await admin('POST', '/operators', { email: 'sari@example.com' })

  // Senders: the shop sends from its own simulated number (its default) and has a Twilio number too,
  // checked; a Meta number is set up and disabled, given to nobody yet.
  const own = await admin('POST', '/senders', { provider: 'simulator', name: 'Toko Budi', number: '+6281100007001' })
  const sid = 'AC7d2a91c3b84e4f0a9c6b5e3d2f1a0b9c'
  twilio.tokens.set(sid, '9b1c7e5f3a2d4c6b8e0f1a3c5e7d9b2f')
  const viaTwilio = await admin('POST', '/senders', {
    provider: 'twilio',
    name: 'Toko Budi Jakarta',
    number: '+6281100007002',
    credentials: { account_sid: sid, auth_token: twilio.tokens.get(sid) },
    rate_per_second: 20,
  })
  await admin('POST', `/senders/${viaTwilio.id}/check`)
  // The Meta number as the Graph API knows it: its quality is read when the sender is created.
  graph.phone('106540352242922', 'EAAG-tour-token', {
    display_phone_number: '62 811-0000-7003',
    verified_name: 'Apotek Sehat',
    quality_rating: 'YELLOW',
    appSecret: 'tour-app-secret',
  })
  graph.accountOf.set('106540352242922', '102290129340398')
  const viaMeta = await admin('POST', '/senders', {
    provider: 'meta',
    name: 'Apotek Sehat',
    number: '+6281100007003',
    credentials: {
      access_token: 'EAAG-tour-token',
      phone_number_id: '106540352242922',
      app_secret: 'tour-app-secret',
      business_account_id: '102290129340398',
    },
  })
  // Meta's word on its health, signed with its app secret to the service's webhook route: a yellow
  // quality, the portfolio's messaging limit, a week's restriction of business-initiated sends, then an
  // upgrade (its page's health line and history).
  graph.callback = { publicBaseUrl: base, deliver: (request: Request) => fetch(request) }
  const said = Math.floor(Date.now() / 1000)
  for (const health of [
    { capability: 2000, time: said - 3 },
    { restrictions: [{ restriction_type: 'RESTRICTED_BIZ_INITIATED_MESSAGING', expiration: said + 7 * 86_400 }], time: said - 2 },
    { quality: { phoneNumberId: '106540352242922', event: 'UPGRADE', current_limit: 'TIER_2K' }, time: said - 1 },
  ]) {
    const answer = await graph.sayHealth({ waba: '102290129340398', ...health })
    if (answer.status !== 200) throw new Error(`tour: Meta's health webhook answered ${answer.status}`)
  }
  await admin('POST', `/senders/${viaMeta.id}/disable`)
  await admin('PUT', `/accounts/${account.id}/senders/${own.id}`)
  await admin('PUT', `/accounts/${account.id}/senders/${viaTwilio.id}`)
  // A WhatsApp template of the shop's own number, in the Cloud API's JSON (a simulator's is stored pending).
  const waTemplate = await admin('POST', `/senders/${own.id}/templates`, {
    name: 'order_shipped',
    language: 'id',
    category: 'UTILITY',
    components: [
      { type: 'HEADER', format: 'TEXT', text: 'Pesanan {{1}}', example: { header_text: ['INV-1001'] } },
      {
        type: 'BODY',
        text: 'Halo {{1}}, pesanan {{2}} sudah dikirim lewat {{3}}. Terima kasih.',
        example: { body_text: [['Budi', 'INV-1001', 'JNE']] },
      },
      { type: 'FOOTER', text: 'Toko Budi' },
      {
        type: 'BUTTONS',
        buttons: [{ type: 'URL', text: 'Lacak paket', url: 'https://tokobudi.example/lacak/{{1}}', example: ['INV-1001'] }],
      },
    ],
  })
  // And a payment reminder with named parameters, whose values a campaign takes from the contacts' attributes.
  const reminder = await admin('POST', `/senders/${own.id}/templates`, {
    name: 'payment_reminder',
    language: 'id',
    category: 'UTILITY',
    parameter_format: 'named',
    components: [
      {
        type: 'BODY',
        text: 'Halo {{customer_name}}, tagihan {{invoice_id}} sebesar {{amount}} jatuh tempo {{due_date}}. Terima kasih.',
        example: {
          body_text_named_params: [
            { param_name: 'customer_name', example: 'Budi' },
            { param_name: 'invoice_id', example: 'INV-1041' },
            { param_name: 'amount', example: 'Rp 125.000' },
            { param_name: 'due_date', example: '5 Desember' },
          ],
        },
      },
      { type: 'FOOTER', text: 'Toko Budi' },
      {
        type: 'BUTTONS',
        buttons: [{ type: 'URL', text: 'Bayar sekarang', url: 'https://tokobudi.example/bayar/{{1}}', example: ['INV-1041'] }],
      },
    ],
  })

  // Webhooks: the ERP's works; the web shop's fails, and its URL is removed while the delivery waits
  // for its retry, so the delivery gives up (a failed delivery for the operator's list).
  await api(erp.key, 'POST', '/webhook', { url: receiver.url('localhost', '/hooks/erp') })
  await api(shop.key, 'POST', '/webhook', { url: receiver.url('localhost', '/hooks/shop') })
  const test = await admin('POST', `/keys/${shop.id}/webhook/test`)
  await until('the web shop test event failing once', async () => (await admin('GET', `/deliveries/${test.id}`)).attempts >= 1)
  await api(shop.key, 'DELETE', '/webhook')

  // Contacts, templates, segments, a campaign that runs and one scheduled.
  // Some have attributes of their own: their last order, its courier, what they owe and when.
  const people: [string, string, string, string, string, Record<string, string>?][] = [
    [
      'Budi Santoso',
      '0812-3456-7001',
      'budi@example.com',
      'Jakarta',
      'vip, promo',
      { order_id: 'INV-1041', courier: 'JNE REG', amount: 'Rp 1.250.000', due_date: '5 Desember', tracking_no: 'JNE0012345678901' },
    ],
    ['Siti Rahma', '0813-2222-7002', 'siti@example.com', 'Bandung', 'promo', { order_id: 'INV-1042', courier: 'SiCepat' }],
    ['Agus Wijaya', '0815-7777-7003', '', 'Surabaya', 'promo, reseller'],
    [
      'Dewi Lestari',
      '0817-1234-7004',
      'dewi.lestari@example.com',
      'Yogyakarta',
      'vip',
      { order_id: 'INV-1044', courier: 'J&T Express', amount: 'Rp 89.000', due_date: '12 Desember' },
    ],
    ['Rudi Hartono', '0819-8888-8888', '', 'Medan', 'promo'],
    ['Putri Ayu', '0821-5555-7006', 'putri@example.com', 'Denpasar', 'promo, vip'],
  ]
  const contacts: { id: number }[] = []
  for (const [name, phone, email, city, tags, attributes] of people)
    contacts.push(await api(erp.key, 'POST', '/contacts', { name, phone, email, city, tags, ...(attributes ? { attributes } : {}) }))
  const budi = contacts[0]!
  const shipped = await admin('POST', `/accounts/${account.id}/templates`, {
    name: 'Order shipped',
    body: 'Hi {{name}}, your order has shipped.',
  })
  const promo = await admin('POST', `/accounts/${account.id}/templates`, {
    name: 'November promo',
    body: 'Hi {{name}}, 20% off everything at our {{city}} store this week. Reply STOP to opt out.',
  })
  await admin('PUT', `/templates/${promo.id}/bindings/simulator`, { ref: 'november_promo', language: 'id', variables: ['name', 'city'] })
  const promoList = await admin('POST', `/accounts/${account.id}/segments`, { name: 'Promo list', tag: 'promo' })
  const vipList = await admin('POST', `/accounts/${account.id}/segments`, { name: 'VIP customers', tag: 'vip' })
  const { campaign } = await api(erp.key, 'POST', '/campaigns', { name: 'November promo', template_id: promo.id, segment_id: promoList.id })
  await admin('POST', `/campaigns/${campaign.id}/run`)
  const nextYear = new Date().getFullYear() + 1
  await api(erp.key, 'POST', '/campaigns', {
    name: 'New year catalogue',
    template_id: shipped.id,
    segment_id: promoList.id,
    schedule_at: `${nextYear}-01-02 09:00:00`,
  })
  // A draft of the payment reminder (once the simulator approved it): each parameter from a contact's
  // field, one of its attributes or a constant.
  await until('the WhatsApp templates approved', async () => {
    const statuses = await Promise.all([waTemplate, reminder].map((t) => admin('GET', `/whatsapp-templates/${t.id}`)))
    return statuses.every((t) => t.status === 'approved')
  })
  const { campaign: reminders } = await api(erp.key, 'POST', '/campaigns', {
    name: 'Payment reminders',
    template_id: reminder.id,
    segment_id: vipList.id,
    parameters: {
      variables: {
        customer_name: { field: 'name' },
        invoice_id: { attribute: 'order_id' },
        amount: { attribute: 'amount' },
        due_date: { constant: 'akhir bulan ini' },
      },
      buttons: { '0': { attribute: 'order_id' } },
    },
  })

  // Single sends; numbers ending in 8888 fail at the simulator (and are refunded).
  const sends = [
    ['0812-3456-7001', 'Hi Budi, your order #1041 has shipped. Track it at https://tokobudi.example/t/1041'],
    ['0813-2222-7002', 'Your payment of Rp 125.000 for order #1042 is received. Thank you!'],
    ['0852-1111-8888', 'Hi, your order #1043 is ready for pick-up at our Jakarta store.'],
    ['0817-1234-7004', 'Hi Dewi, your order #1044 has shipped.'],
    ['0838-4444-7010', 'Your one-time code is 482913. It expires in 5 minutes.'],
  ]
  for (const [to, body] of sends) await api(erp.key, 'POST', '/messages/send', { to, body })
  await until('the campaign finishing', async () => (await admin('GET', `/campaigns/${campaign.id}`)).campaign.status === 'sent')
  await until('every message delivered, read or failed', async () => {
    const list = await api(erp.key, 'GET', '/messages?limit=100')
    return list.items.every((m: { status: string }) => m.status === 'read' || m.status === 'failed')
  })
  await until('the web shop delivery giving up', async () => (await admin('GET', `/deliveries/${test.id}`)).status === 'failed')
  await until('the ERP taking every delivery', async () => (await admin('GET', `/keys/${erp.id}/deliveries?status=pending`)).total === 0)

  // Three people, each in a browser of their own; the operator and the member set their passwords.
  const browsers: TestBrowser[] = []
  cleanups.push(async () => {
    for (const b of browsers) await b.close()
  })
  const person = async () => {
    const browser = await openBrowser()
    browsers.push(browser)
    return browser.page
  }
  const local = (link: string) => `${base}${new URL(link).pathname}`
  const signedIn = async (link: string, landing: string) => {
    const page = await person()
    await page.goto(local(link))
    await page.getByLabel('New password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${base}${landing}`)
    return page
  }
  const pages: Record<Who, Page> = {
    guest: await person(),
    operator: await signedIn(operator.link, '/dashboard/accounts'),
    member: await signedIn(member.link, '/dashboard'),
  }

  // The page of a failed message (its timeline, error and webhook deliveries), as the member finds it.
  await pages.member.goto(`${base}/dashboard/messages?status=failed`)
  const href = await pages.member.locator('main a[href^="/dashboard/messages/"]').first().getAttribute('href')
  const messageId = Number(href?.split('/').pop())

  const a = `/dashboard/accounts/${account.id}`
  const stop = (name: string | null, who: Who, path: string, status = 200): Stop => ({ name, who, path, status })
  const stops: Stop[] = [
    stop('sign-in', 'guest', '/dashboard/sign-in'),
    stop('set-password', 'guest', new URL(invited.link).pathname),
    stop(null, 'guest', '/dashboard/assets/no-such-file', 404),
    stop('overview', 'member', '/dashboard'),
    stop('keys', 'member', '/dashboard/keys'),
    stop('messages', 'member', '/dashboard/messages'),
    stop('message', 'member', `/dashboard/messages/${messageId}`),
    stop('ledger', 'member', '/dashboard/ledger'),
    stop('usage', 'member', '/dashboard/usage'),
    stop('contacts', 'member', '/dashboard/contacts'),
    stop('contact', 'member', `/dashboard/contacts/${budi.id}`),
    stop(null, 'member', '/dashboard/contacts/import'),
    stop('templates', 'member', '/dashboard/templates'),
    stop('template', 'member', `/dashboard/templates/${promo.id}`),
    stop('wa-templates', 'member', '/dashboard/whatsapp-templates'),
    stop('wa-template', 'member', `/dashboard/whatsapp-templates/${waTemplate.id}`),
    stop('campaigns', 'member', '/dashboard/campaigns'),
    stop('campaign', 'member', `/dashboard/campaigns/${campaign.id}`),
    stop('campaign-wa-form', 'member', `/dashboard/campaigns?wa_template=${waTemplate.id}`),
    stop(null, 'member', `/dashboard/campaigns?wa_template=${reminder.id}`),
    stop('campaign-wa', 'member', `/dashboard/campaigns/${reminders.id}`),
    stop('webhook', 'member', '/dashboard/webhook'),
    stop(null, 'member', '/dashboard/inbox'),
    stop(null, 'member', '/dashboard/inbox/6281234567001'),
    stop('not-found', 'member', '/dashboard/messages/999999999', 404),
    stop('accounts', 'operator', '/dashboard/accounts'),
    stop('account', 'operator', a),
    stop(null, 'operator', `${a}/overview`),
    stop(null, 'operator', `${a}/messages`),
    stop(null, 'operator', `${a}/messages/${messageId}`),
    stop(null, 'operator', `${a}/ledger`),
    stop(null, 'operator', `${a}/usage`),
    stop(null, 'operator', `${a}/contacts`),
    stop(null, 'operator', `${a}/contacts/${budi.id}`),
    stop(null, 'operator', `${a}/templates`),
    stop(null, 'operator', `${a}/templates/${promo.id}`),
    stop(null, 'operator', `${a}/campaigns`),
    stop(null, 'operator', `${a}/campaigns/${campaign.id}`),
    stop(null, 'operator', `${a}/campaigns?wa_template=${reminder.id}`),
    stop(null, 'operator', `${a}/campaigns/${reminders.id}`),
    stop(null, 'operator', `${a}/webhook`),
    stop(null, 'operator', `${a}/inbox`),
    stop(null, 'operator', `${a}/keys`),
    stop('key-limits', 'operator', `${a}/keys/${shop.id}/limits`),
    stop('price', 'operator', '/dashboard/price'),
    stop('senders', 'operator', '/dashboard/senders'),
    stop('sender', 'operator', `/dashboard/senders/${viaTwilio.id}`),
    stop('sender-meta', 'operator', `/dashboard/senders/${viaMeta.id}`),
    stop(null, 'operator', `/dashboard/senders/${own.id}`),
    stop(null, 'operator', `/dashboard/senders/${own.id}/templates/${waTemplate.id}`),
    stop('wa-template-new', 'operator', `/dashboard/senders/${own.id}/templates/new`),
    stop(null, 'operator', `${a}/whatsapp-templates`),
    stop('users', 'operator', '/dashboard/users'),
    stop('deliveries', 'operator', '/dashboard/deliveries'),
    stop('audit', 'operator', '/dashboard/audit'),
    stop(null, 'operator', '/dashboard/no-such-page', 404),
  ]
  return { base, pages, stops, seeded: { accountId: account.id, messageId }, close }
}

/** Opens a stop's page at `width` and checks it is the page meant: its status, and no redirect (to the sign-in). */
export async function visit(tour: Tour, stop: Stop, width: number): Promise<Page> {
  const page = tour.pages[stop.who]
  await page.setViewportSize({ width, height: 900 })
  const response = await page.goto(`${tour.base}${stop.path}`)
  const status = response?.status()
  const url = new URL(page.url())
  const at = url.pathname + url.search
  if (status !== stop.status || at !== stop.path)
    throw new Error(`${stop.path} as ${stop.who}: ${status} at ${at}, expected ${stop.status}`)
  return page
}
