// Outer ring (real time): it drives a real Chromium (playwright-core), whose pages run on real time.
// The dashboard's user flows in a real browser: headless Debian Chromium driven by playwright-core,
// against the service listening on a loopback port (embedded database, or PostgreSQL with
// DATABASE_URL). Each person is a fresh browser profile. A failed step leaves a screenshot whose path
// the failure names.

import { describe, expect, test } from 'bun:test'
import type { Page } from 'playwright-core'
import { ADMIN_TOKEN } from '../helpers/app'
import { skipBrowserTests, step } from '../helpers/browser'
import { dashboardInChromium, PASSWORD } from '../helpers/dashboard-browser'
import { makeTestTls, startReceiver, type Receiver } from '../helpers/receiver'

describe.skipIf(skipBrowserTests())('dashboard in Chromium', () => {
  let receiver: Receiver
  const web = dashboardInChromium('dashboard-browser-', (cleanup) => {
    const tls = makeTestTls()
    receiver = startReceiver(tls)
    cleanup(() => receiver.stop())
    cleanup(() => tls.remove())
    return {
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_CA_FILE: tls.caFile,
      // Reads are not due for an hour: flow 4 brings them forward once its page is open, so that the
      // page is sure to see its read count move (a slow machine once opened it after every read came).
      SIM_DELIVERED_MS: '2000',
      SIM_READ_MS: '3600000',
    }
  })
  const { person } = web

  const admin = (path: string, body: unknown) =>
    fetch(`${web.url}/admin/v1${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  // Links name PUBLIC_BASE_URL, which says port 0 here (the port is chosen at listen time).
  const local = (link: string) => `${web.url}${new URL(link).pathname}`
  const h1 = (page: Page) => page.locator('h1').innerText()
  const balanceWith = (key: string) =>
    fetch(`${web.url}/api/v1/balance`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status)

  let operatorPage: Page
  let memberPage: Page
  let memberLink = ''
  let memberKey = ''

  test('1. the operator made on the command line sets a password and signs in; wrong passwords, then the lockout', async () => {
    const made = await admin('/operators', { email: 'ops@example.com' })
    expect(made.status).toBe(201)
    const page = await person()
    await step(page, 'set the password through the link', async () => {
      await page.goto(local(made.body.data.link))
      expect(await h1(page)).toBe('Set your password')
      await page.getByLabel('New password').fill(PASSWORD)
      await page.keyboard.press('Enter')
      await page.waitForURL(`${web.url}/dashboard/accounts`)
      expect(await h1(page)).toBe('Accounts')
    })
    await step(page, 'sign out and in again', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForURL(`${web.url}/dashboard/sign-in`)
      await page.getByLabel('E-mail').fill('ops@example.com')
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.waitForURL(`${web.url}/dashboard/accounts`)
    })
    await step(page, 'five wrong passwords lock the e-mail', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      for (let i = 0; i < 5; i++) {
        await page.getByLabel('E-mail').fill('ops@example.com')
        await page.getByLabel('Password', { exact: true }).fill('not the password')
        await page.getByRole('button', { name: 'Sign in' }).click()
        await page.waitForLoadState()
      }
      await page.getByLabel('E-mail').fill('ops@example.com')
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD)
      await page.getByRole('button', { name: 'Sign in' }).click()
      await page.waitForLoadState()
      expect(await page.getByRole('alert').innerText()).toContain('Too many failed sign-ins')
      expect(page.url()).toBe(`${web.url}/dashboard/sign-in`)
    })
  }, 120_000)

  test('2. an operator creates an account, tops it up and invites a member, who sees only that account', async () => {
    const made = await admin('/operators', { email: 'second-ops@example.com' })
    operatorPage = await person()
    const page = operatorPage
    await page.goto(local(made.body.data.link))
    await page.getByLabel('New password').fill(PASSWORD)
    await page.keyboard.press('Enter')
    await page.waitForURL(`${web.url}/dashboard/accounts`)
    await step(page, 'create an account with an opening balance', async () => {
      await page.getByLabel('Name', { exact: true }).fill('Toko <b>Maju</b>')
      await page.getByLabel('Opening balance (IDR)').fill('1000')
      await page.getByRole('button', { name: 'Create account' }).click()
      await page.waitForURL(/\/dashboard\/accounts\/\d+$/)
      expect(await h1(page)).toBe('Toko <b>Maju</b>') // shown as text, not markup
    })
    await step(page, 'top it up', async () => {
      await page.getByLabel('Amount (IDR)').fill('500')
      await page.getByLabel('Note', { exact: true }).fill('bank transfer 17')
      await page.getByRole('button', { name: 'Top up' }).click()
      await page.waitForLoadState()
      expect(await page.locator('.stat .value').first().innerText()).toBe('1,500')
    })
    await step(page, 'invite a member', async () => {
      await page.getByLabel('E-mail of the new member').fill('member@toko.example')
      await page.getByRole('button', { name: 'Invite' }).click()
      memberLink = await page.locator('#invite-link').innerText()
      expect(memberLink).toMatch(/\/dashboard\/link\/\w{43}$/)
    })

    memberPage = await person()
    const member = memberPage
    await step(member, 'the member sets a password and sees the account', async () => {
      await member.goto(local(memberLink))
      await member.getByLabel('New password').fill(PASSWORD)
      await member.getByRole('button', { name: 'Set password and sign in' }).click()
      await member.waitForURL(`${web.url}/dashboard`)
      expect(await h1(member)).toBe('Overview')
      expect(await member.locator('.stat .value').first().innerText()).toBe('1,500')
    })
    await step(member, 'operator pages do not exist for a member', async () => {
      const other = await member.goto(`${web.url}/dashboard/accounts`)
      expect(other!.status()).toBe(404)
      expect(await h1(member)).toBe('Not found')
    })
  }, 120_000)

  test('3. the member creates a key, sees it once, uses it, deactivates it (401) and activates it (200)', async () => {
    const page = memberPage
    let key = ''
    await step(page, 'create a key', async () => {
      await page.goto(`${web.url}/dashboard/keys`)
      await page.getByLabel('Label', { exact: true }).fill('ERP production')
      await page.keyboard.press('Enter')
      key = (await page.locator('#new-key').innerText()).trim()
      expect(key).toMatch(/^pm_/)
    })
    await step(page, 'copy it with the button', async () => {
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: web.url })
      await page.getByRole('button', { name: 'Copy key' }).click()
      await page.getByRole('button', { name: 'Copied' }).waitFor()
      expect(await page.evaluate('navigator.clipboard.readText()')).toBe(key)
    })
    memberKey = key
    expect(await balanceWith(key)).toBe(200)
    await step(page, 'the key is not shown again', async () => {
      await page.goto(`${web.url}/dashboard/keys`)
      expect(await page.content()).not.toContain(key)
    })
    await step(page, 'deactivate and activate it', async () => {
      await page.getByRole('button', { name: 'Deactivate key ERP production' }).click()
      await page.waitForLoadState()
      expect(await balanceWith(key)).toBe(401)
      await page.getByRole('button', { name: 'Activate key ERP production' }).click()
      await page.waitForLoadState()
      expect(await balanceWith(key)).toBe(200)
    })
  }, 120_000)

  test('4. contacts from a CSV file, a template, a segment, and a campaign run to the end with its progress moving on the page', async () => {
    const page = memberPage
    const rows = Array.from({ length: 30 }, (_, i) => `Customer ${i},0813${String(i).padStart(8, '0')},c${i}@example.com,Bandung,promo`)
    const csv = ['name,phone,email,city,tags', ...rows.slice(0, 10), 'Broken,12,,Bandung,promo', ...rows.slice(10)].join('\n')
    await step(page, 'import the CSV, valid rows only', async () => {
      await page.goto(`${web.url}/dashboard/contacts`)
      await page.getByLabel('CSV file').setInputFiles({ name: 'contacts.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) })
      await page.getByLabel('Import the valid rows').check()
      await page.getByRole('button', { name: 'Import contacts' }).click()
      await page.waitForLoadState()
      expect(await page.locator('#imported').innerText()).toBe('30')
      expect(await page.locator('#bad-rows').innerText()).toBe('1')
      expect(await page.locator('table').innerText()).toContain(
        '12\tphone: not a valid Indonesian phone number: write it like 081234567890, 6281234567890 or +6281234567890',
      )
    })
    await step(page, 'a template and a segment', async () => {
      await page.goto(`${web.url}/dashboard/templates`)
      const template = page.locator('form', { has: page.getByRole('button', { name: 'Create template' }) })
      await template.getByLabel('Name', { exact: true }).fill('Launch')
      await template.getByLabel('Text').fill('Hi {{name}}, the new collection is out')
      await template.getByRole('button', { name: 'Create template' }).click()
      await page.waitForLoadState()
      const segment = page.locator('form', { has: page.getByRole('button', { name: 'Create segment' }) })
      await segment.getByLabel('Name', { exact: true }).fill('Promo list')
      await segment.getByLabel(/^Tag/).fill('promo')
      await segment.getByRole('button', { name: 'Create segment' }).click()
      await page.waitForLoadState()
      expect(await page.content()).toContain('Promo list')
    })
    let campaignUrl = ''
    await step(page, 'create the campaign and run it', async () => {
      await page.goto(`${web.url}/dashboard/campaigns`)
      await page.getByLabel('Name', { exact: true }).fill('November launch')
      await page.getByRole('button', { name: 'Create campaign' }).click()
      await page.waitForURL(/\/dashboard\/campaigns\/\d+$/)
      campaignUrl = page.url()
      await page.getByRole('button', { name: 'Run now' }).click()
      await page.waitForURL(campaignUrl)
    })
    await step(page, 'the counts move without a reload until every message is read', async () => {
      const text = (id: string) => page.locator(id).innerText()
      const deadline = Date.now() + 45_000
      const waitFor = async (what: string, done: () => Promise<boolean>) => {
        while (!(await done())) {
          if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
          await Bun.sleep(200)
        }
      }
      // Every message sent (the page loads itself again once, when the campaign becomes sent) and none read yet.
      await waitFor(
        'the campaign to be sent',
        async () => (await text('#campaign-status')) === 'sent' && (await text('#count-sent')) === '30',
      )
      expect(await text('#count-read')).toBe('0')
      // A mark in this very page: a reload would lose it. The page keeps polling its progress meanwhile.
      await page.evaluate('window.stillThisPage = true')
      let polls = 0
      const polled = (request: { url(): string }) => void (request.url().endsWith('/progress') && polls++)
      page.on('request', polled)
      await waitFor('the page to poll its progress twice', async () => polls >= 2)
      // The simulator's reads fall due now instead of in an hour.
      await web.sql`update simulator_reports set due_at = now() where status = 'read'`
      await waitFor('every message to be read', async () => (await text('#count-read')) === '30')
      page.off('request', polled)
      expect(await page.evaluate('window.stillThisPage === true')).toBe(true)
      expect(await text('#campaign-status')).toBe('sent')
    })
    const id = campaignUrl.split('/').pop()
    const api = await fetch(`${web.url}/admin/v1/campaigns/${id}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(
      (r) => r.json() as any,
    )
    for (const name of ['total', 'sent', 'delivered', 'read', 'failed'] as const) {
      expect({ name, shown: await page.locator(`#count-${name}`).innerText() }).toEqual({ name, shown: String(api.data.stats[name]) })
    }
  }, 120_000)

  test('5. a failing webhook receiver shows failed attempts; once it is fixed, a replay delivers', async () => {
    const page = memberPage
    receiver.handler = () => new Response('down for maintenance', { status: 500 })
    await step(page, 'register the receiver for the key', async () => {
      await page.goto(`${web.url}/dashboard/webhook`)
      const section = page.locator('section', { has: page.getByRole('heading', { name: /ERP production/ }) })
      await section.getByLabel('URL', { exact: true }).fill(receiver.url('localhost', '/hooks/erp'))
      await section.getByRole('button', { name: 'Register URL' }).click()
      await page.waitForLoadState()
      expect(await page.content()).toContain(receiver.url('localhost', '/hooks/erp'))
    })
    const sent = await fetch(`${web.url}/api/v1/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${memberKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '081234567890', body: 'order shipped' }),
    })
    expect(sent.status).toBe(200)
    await receiver.waitFor(1, 15_000)
    expect(receiver.requests.length).toBeGreaterThan(0)
    let webhookId = ''
    await step(page, 'the failed attempt is shown', async () => {
      await page.reload()
      const row = page.locator('tbody tr').first()
      expect(await row.innerText()).toContain('HTTP 500')
      await page
        .getByText(/^Attempts of delivery/)
        .first()
        .click()
      expect(await page.locator('ul.attempts').first().innerText()).toContain('HTTP 500')
      webhookId = receiver.requests[0]!.headers['webhook-id']!
    })
    receiver.handler = () => new Response('ok')
    await step(page, 'replay delivers it', async () => {
      const before = receiver.byId(webhookId).length
      await page
        .getByRole('button', { name: /^Replay delivery/ })
        .last()
        .click()
      await page.waitForLoadState()
      const deadline = Date.now() + 15_000
      while (!receiver.byId(webhookId).slice(before).length && Date.now() < deadline) await Bun.sleep(100)
      expect(receiver.byId(webhookId).length).toBeGreaterThan(before)
      // the same event, the same webhook-id, now answered 200 and shown delivered
      const deadline2 = Date.now() + 10_000
      for (;;) {
        await page.reload()
        if ((await page.locator('tbody').innerText()).includes('delivered')) break
        if (Date.now() > deadline2) throw new Error('the delivery is not shown delivered')
        await Bun.sleep(300)
      }
    })
  }, 120_000)

  test('6. sign-out ends the session, and the old cookie is refused', async () => {
    const page = memberPage
    const [cookie] = (await page.context().cookies()).filter((c) => c.name === '__Host-session')
    expect(cookie).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict', path: '/' })
    await step(page, 'sign out', async () => {
      await page.getByRole('button', { name: 'Sign out' }).click()
      await page.waitForURL(`${web.url}/dashboard/sign-in`)
    })
    const replay = await fetch(`${web.url}/dashboard`, { headers: { cookie: `__Host-session=${cookie!.value}` }, redirect: 'manual' })
    expect(replay.status).toBe(303)
    expect(replay.headers.get('location')).toBe('/dashboard/sign-in')
  }, 60_000)
})
