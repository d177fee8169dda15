// WhatsApp templates in the fault test (issue 30): a Meta sender (a phone number of a WhatsApp Business
// Account of the fake Graph API, tests/helpers/fake-graph.ts) with three approved templates, synced at
// set-up, and an account of its own that sends them while Meta changes them. From the seed: single
// sends and bulks of the templates (some with an Idempotency-Key, repeated by the drain like every
// other), campaigns of one of them, and Meta's changes: paused, disabled, approved again (APPROVED or
// REINSTATED), flagged, recategorised (the completed notice and the impending one), its quality.
//
// Each change is made in the fake's store at once (a send handed over from then on is refused with
// 132015 / 132016 as Meta does), and its signed webhook is posted to the service: at once, later (the
// send may be handed over before the service hears of it), twice, or held back until the template's
// next change was posted (out of order; Meta's `time` orders them, one second apart per template as
// Meta's notifications are). Meta retries a webhook until the service answers 200 (an instance killed
// or the database away answers otherwise), as the fake does here. The first campaign is run while
// its template is paused (the webhook taken first), then the template is approved again; at the end
// of the fault phase every campaign's template is approved (Meta's last word for it), and every
// webhook held back is posted last, so the stale ones arrive after the newer ones.
//
// What the checks hold this against (invariants.ts, rule 7): `TemplateEvidence`.

import { fakeGraph, type FakeGraph, type FakeTemplate } from '../helpers/fake-graph'
import { metaPricing, metaStatusesBody, metaTemplateBody, metaWebhookHeaders, type MetaPricing } from '../helpers/meta-webhook'
import { seeded, type Random } from '../helpers/random'
import type { Account, Campaign, Client, Request } from './workload'

export const META_SENDER = {
  number: '+6281100000031',
  credentials: {
    access_token: 'EAAchaosMetaToken5ecretCCCCCCCCCCCC',
    phone_number_id: '100000000000031',
    app_secret: 'chaos-meta-app-5ecret-0123456789',
    business_account_id: '200000000000031',
  },
}
const WABA = META_SENDER.credentials.business_account_id
const LANGUAGE = 'en_US'
/** The templates' names; the first is the campaigns'. */
const NAMES = ['chaos_order_shipped', 'chaos_invoice_due', 'chaos_payment_received']
const BODY = (name: string) => `${name.replaceAll('_', ' ')}: order [{{1}}] is on its way`
const MAX_CAMPAIGNS = 3
/** The template account's prices per category (settled on Meta's pricing: settle `provider`). */
export const TEMPLATE_PRICES = { marketing: 7, utility: 3, authentication: 5, service: 1 }
/** Meta's pricing categories a report may carry (the two extra ones map onto marketing and authentication). */
const REPORTED_CATEGORIES = ['marketing', 'utility', 'authentication', 'service', 'marketing_lite', 'authentication_international']

/** One of Meta's changes to a template, and the fate of its webhook. */
export type TemplateNotice = {
  /** The template's id at the fake (Meta's) and here. */
  ref: string
  templateId: number
  kind: 'status' | 'flagged' | 'category' | 'impending' | 'quality'
  /** Meta's event or value (PAUSED, REINSTATED, MARKETING, RED...). */
  value: string
  /** The store's status and category once Meta made the change. */
  status: string
  category: string
  /** Meta's `time` of the notification (s). */
  metaTime: number
  /** When the store changed, when its webhook was first posted, and when the service first answered 200 (ms). */
  madeAt: number
  postedAt: number | null
  ackAt: number | null
  /** How it was posted: at once, later, twice, or after the template's next change. */
  delivery: 'now' | 'late' | 'twice' | 'held'
}

/**
 * Meta's status reports of one message it accepted (its wamid), all priced alike (Meta's `pricing` on
 * `sent`, `delivered` and `read`; none on `failed`), posted in a plan's order as the run goes on: in
 * order, out of order, repeated, or failed after (or before) its `sent`. Each post is retried until
 * the service answers 200 (ackAt), as Meta retries.
 */
export type PricedReports = { wamid: string; pricing: MetaPricing; posts: { status: string; ackAt: number | null }[] }

/** A template send as the checks need it beside its Request: the template each entry named. */
export type TemplateCampaign = Campaign & { templateId: number; pausedFirst: boolean }

export type TemplateEvidence = {
  senderId: number
  accountId: number
  templates: { id: number; ref: string; name: string }[]
  notices: TemplateNotice[]
  /** The fake's store at the end: Meta's last word per template (by its id here). */
  final: Map<number, { status: string; category: string; quality: string }>
  /** Every message request the fake got from the sender: when (ms since the epoch), its tag, its answer. */
  handoffs: { at: number; tag: string; status: number; code: number | null }[]
  /** The message ids (wamid) the fake gave the messages it accepted. */
  wamids: Set<string>
  campaigns: TemplateCampaign[]
  /** What GET /admin/v1/campaigns/{id} showed, polled while the run went on. */
  observed: Map<number, { at: number; status: string; reason: string | null }[]>
  /** Meta's priced status reports, per message it accepted (rule 8). */
  reports: PricedReports[]
}

export type TemplateWorld = ReturnType<typeof createTemplateWorld>

export function createTemplateWorld(seed: number) {
  const graph: FakeGraph = fakeGraph()
  const random: Random = seeded(seed ^ 0x7e3a)
  graph.phone(META_SENDER.credentials.phone_number_id, META_SENDER.credentials.access_token, {
    display_phone_number: '62 811-0000-0031',
    verified_name: 'Chaos Meta',
    appSecret: META_SENDER.credentials.app_secret,
  })
  graph.accountOf.set(META_SENDER.credentials.phone_number_id, WABA)
  const fakes = NAMES.map((name) =>
    graph.template(WABA, {
      name,
      language: LANGUAGE,
      category: 'UTILITY',
      status: 'APPROVED',
      parameter_format: 'POSITIONAL',
      components: [{ type: 'BODY', text: BODY(name), example: { body_text: [['A-1']] } }],
      quality_score: { score: 'GREEN' },
    }),
  )
  // The fake's clock is monotonic: its requests' times as ms since the epoch.
  const epochOf = (at: number) => performance.timeOrigin + at

  const notices: TemplateNotice[] = []
  const campaigns: TemplateCampaign[] = []
  const observed = new Map<number, { at: number; status: string; reason: string | null }[]>()
  const deliveries: Promise<void>[] = []
  const reports = new Map<string, PricedReports>()
  const reporting: Random = seeded(seed ^ 0x9e1c)
  /** Per template (fake id): Meta's last `time`, and webhooks held back until its next change is posted. */
  const lastTime = new Map<string, number>()
  const held = new Map<string, (() => void)[]>()
  let base = ''
  let senderId = 0
  let account: Account | undefined
  let accountIndex = -1
  const ids = new Map<string, number>() // fake id → id here
  let phones = 0
  const phone = () => `0819${String(++phones).padStart(8, '0')}`
  let sequence = 0

  /** Posts a webhook until the service answers 200 (Meta retries), or `deadline`; when it was taken. */
  const postWebhook = (body: string, deadline: number) => postMetaWebhook(base, body, META_SENDER.credentials.app_secret, deadline)

  /** Meta changes template `t` and says so by webhook, delivered as `delivery` says. */
  function change(t: FakeTemplate, kind: TemplateNotice['kind'], value: string, delivery: TemplateNotice['delivery'], deadline: number) {
    const metaTime = Math.max(Math.floor(Date.now() / 1000), (lastTime.get(t.id) ?? 0) + 1)
    lastTime.set(t.id, metaTime)
    let field = 'message_template_status_update'
    let said: Record<string, unknown>
    if (kind === 'status' || kind === 'flagged') {
      said = {
        event: value,
        reason: value === 'PAUSED' || value === 'DISABLED' ? 'LOW_QUALITY' : 'NONE',
        message_template_category: t.category,
      }
      if (kind === 'status') t.status = value === 'REINSTATED' ? 'APPROVED' : value
    } else if (kind === 'category') {
      field = 'template_category_update'
      said = { previous_category: t.category, new_category: value }
      t.category = value as FakeTemplate['category']
    } else if (kind === 'impending') {
      field = 'template_category_update'
      said = { correct_category: value, new_category: t.category, category_update_timestamp: metaTime + 86_400 }
    } else {
      field = 'message_template_quality_update'
      said = { previous_quality_score: t.quality_score?.score ?? 'UNKNOWN', new_quality_score: value }
      t.quality_score = { score: value as 'GREEN' }
    }
    const body = metaTemplateBody(WABA, field, t, said, metaTime)
    const notice: TemplateNotice = {
      ref: t.id,
      templateId: ids.get(t.id)!,
      kind,
      value,
      status: t.status,
      category: t.category,
      metaTime,
      madeAt: Date.now(),
      postedAt: null,
      ackAt: null,
      delivery,
    }
    notices.push(notice)
    const send = async (wait: number) => {
      if (wait > 0) await Bun.sleep(wait)
      notice.postedAt ??= Date.now()
      const at = await postWebhook(body, deadline)
      if (notice.ackAt === null && at !== null) notice.ackAt = at
    }
    // What this template's earlier changes held back goes after this one.
    const waiting = held.get(t.id) ?? []
    held.set(t.id, [])
    let done: Promise<void>
    if (delivery === 'held') {
      done = new Promise<void>((resolve) => held.get(t.id)!.push(() => void send(0).then(resolve)))
    } else if (delivery === 'late') done = send(random.int(300, 2_500))
    else if (delivery === 'twice') done = send(0).then(() => send(random.int(100, 1_500)))
    else done = send(0)
    const after = done.then(() => waiting.forEach((release) => release()))
    deliveries.push(after)
    return after
  }

  /** A random change of Meta's to a random template. */
  function someChange(deadline: number) {
    const t = random.pick(fakes)
    const r = random.next()
    const d = random.next()
    const delivery: TemplateNotice['delivery'] = d < 0.5 ? 'now' : d < 0.7 ? 'late' : d < 0.85 ? 'twice' : 'held'
    if (r < 0.22) return change(t, 'status', 'PAUSED', delivery, deadline)
    if (r < 0.3) return change(t, 'status', 'DISABLED', delivery, deadline)
    if (r < 0.5) return change(t, 'status', 'APPROVED', delivery, deadline)
    if (r < 0.6) return change(t, 'status', 'REINSTATED', delivery, deadline)
    if (r < 0.66) return change(t, 'flagged', 'FLAGGED', delivery, deadline)
    if (r < 0.78) return change(t, 'category', t.category === 'UTILITY' ? 'MARKETING' : 'UTILITY', delivery, deadline)
    if (r < 0.86) return change(t, 'impending', t.category === 'UTILITY' ? 'MARKETING' : 'UTILITY', delivery, deadline)
    return change(t, 'quality', random.pick(['GREEN', 'YELLOW', 'RED']), delivery, deadline)
  }

  /**
   * Meta reports on a message it accepted and not reported yet (maybe before the service recorded its
   * id: the report is then parked): one pricing for all its reports, posted in one of the plans' orders.
   */
  function reportOne(deadline: number) {
    // Only its own sender's messages: the fake's other phone numbers (user-ids.ts) are other senders.
    const fresh = graph.delivered
      .filter((d) => d.phoneNumberId === META_SENDER.credentials.phone_number_id && !reports.has(d.id))
      .map((d) => d.id)
    if (fresh.length === 0) return
    const wamid = reporting.pick(fresh)
    const type = reporting.chance(0.8) ? 'regular' : reporting.pick(['free_customer_service', 'free_entry_point'] as const)
    const pricing = metaPricing(reporting.pick(REPORTED_CATEGORIES), type)
    const r = reporting.next()
    const plan =
      r < 0.45
        ? ['sent', 'delivered']
        : r < 0.6
          ? ['delivered', 'sent']
          : r < 0.75
            ? ['sent', 'sent', 'read']
            : r < 0.88
              ? ['sent', 'failed']
              : ['failed', 'sent']
    const entry: PricedReports = { wamid, pricing, posts: [] }
    reports.set(wamid, entry)
    deliveries.push(
      (async () => {
        for (const status of plan) {
          const post = { status, ackAt: null as number | null }
          entry.posts.push(post)
          const body = metaStatusesBody(META_SENDER.credentials.phone_number_id, [
            { id: wamid, status, pricing: status === 'failed' ? null : pricing },
          ])
          post.ackAt = await postWebhook(body, deadline)
          await Bun.sleep(reporting.int(0, 400))
        }
      })(),
    )
  }

  /** A single send or a bulk of the templates, recorded in the client's requests (rule 5 and the drain's repeats). */
  function sendRequest(client: Client, accounts: Account[], bulk: boolean) {
    const n = ++sequence
    const size = bulk ? random.int(2, 6) : 1
    const tags: string[] = []
    const recipients: Request['recipients'] = []
    const templates: number[] = []
    const entries = Array.from({ length: size }, (_, i) => {
      const tag = bulk ? `mb${n}-${i}` : `m${n}`
      const t = random.pick(fakes)
      const to = phone()
      tags.push(tag)
      recipients.push({ phone: to, sender: senderId })
      templates.push(ids.get(t.id)!)
      client.senderOf.set(tag, senderId)
      return { to, template_id: ids.get(t.id)!, variables: { '1': tag } }
    })
    const request: Request = {
      kind: bulk ? 'bulk' : 'send',
      account: accountIndex,
      idempotencyKey: random.chance(0.5) ? `key-${tags[0]}` : undefined,
      payload: bulk ? { messages: entries } : entries[0],
      tags,
      recipients,
      templates,
      issuedAt: Date.now(),
      answers: [],
    }
    client.requests.push(request)
    return client.issue(request, accounts)
  }

  /** Contacts, a segment and a draft campaign of the first template; null when a step's answer was lost. */
  async function draftCampaign(client: Client): Promise<{ id: number; tags: string[]; phones: string[] } | null> {
    const n = ++sequence
    const a = account!
    const count = random.int(5, 10)
    const tags = Array.from({ length: count }, (_, i) => `mc${n}-${i}`)
    const phonesOf = tags.map(() => phone())
    for (const [i, tag] of tags.entries()) {
      client.senderOf.set(tag, senderId)
      const made = await client.call('POST', '/api/v1/contacts', { name: tag, phone: phonesOf[i], tags: `mk${n}` }, a.key)
      if (made?.status !== 201) return null
    }
    const segment = await client.call('POST', `/admin/v1/accounts/${a.id}/segments`, { name: `ms${n}`, tag: `mk${n}` })
    if (segment?.status !== 201) return null
    const draft = await client.call(
      'POST',
      '/api/v1/campaigns',
      {
        name: `template campaign ${n}`,
        template_id: ids.get(fakes[0]!.id)!,
        segment_id: segment.body.data.id,
        parameters: { variables: { '1': { field: 'name' } } },
      },
      a.key,
    )
    if (draft?.status !== 201) return null
    return { id: draft.body.data.campaign.id as number, tags, phones: phonesOf }
  }

  /** Runs a drafted campaign (safe to repeat: a running one answers 409) and records it. */
  async function runCampaign(client: Client, draft: { id: number; tags: string[]; phones: string[] }, pausedFirst: boolean) {
    const c: TemplateCampaign = {
      id: draft.id,
      account: accountIndex,
      tags: draft.tags,
      sender: senderId,
      phones: draft.phones,
      ranAt: Date.now(),
      templateId: ids.get(fakes[0]!.id)!,
      pausedFirst,
      template: true,
    }
    campaigns.push(c)
    client.campaigns.push(c)
    observed.set(c.id, [])
    for (let i = 0; i < 40; i++) {
      const ran = await client.call('POST', `/admin/v1/campaigns/${c.id}/run`)
      if (ran && ran.body?.code !== 'CHAOS_FRONT' && ran.status !== 503) return
      await Bun.sleep(250)
    }
  }

  let observing = true
  /** Polls the campaigns' states while the run goes on. */
  async function observe(client: Client) {
    while (observing) {
      for (const c of campaigns) {
        const detail = await client.call('GET', `/admin/v1/campaigns/${c.id}`)
        const campaign = detail?.status === 200 ? detail.body.data.campaign : null
        if (campaign) observed.get(c.id)!.push({ at: Date.now(), status: campaign.status, reason: campaign.pause_reason })
      }
      await Bun.sleep(200)
    }
  }
  let observer: Promise<void> = Promise.resolve()
  let firstDraft: { id: number; tags: string[]; phones: string[] } | null = null

  return {
    graph,
    /** The environment the service needs for the fake Graph API. */
    env: { META_API_BASE: graph.apiBase },

    /** The Meta sender (its templates synced) and its account, before the faults. The account's index in `accounts`. */
    async setup(client: Client, accounts: Account[], url: string): Promise<void> {
      base = url
      const made = await client.call('POST', '/admin/v1/senders', {
        provider: 'meta',
        name: 'chaos meta sender',
        ...META_SENDER,
        rate_per_second: 50,
        recipient_gap_ms: 0,
        late_failures: 'refund',
      })
      if (made?.status !== 201) throw new Error(`meta sender creation failed: ${JSON.stringify(made)}`)
      senderId = made.body.data.id
      const synced = await client.call('POST', `/admin/v1/senders/${senderId}/templates/sync`)
      if (synced?.status !== 200) throw new Error(`template sync failed: ${JSON.stringify(synced)}`)
      const listed = await client.call('GET', `/admin/v1/senders/${senderId}/templates`)
      for (const t of fakes) {
        const row = (listed?.body?.data ?? []).find((r: any) => r.name === t.name)
        if (!row || row.status !== 'approved') throw new Error(`template ${t.name} not synced approved: ${JSON.stringify(listed)}`)
        ids.set(t.id, row.id)
      }
      const acc = await client.call('POST', '/admin/v1/accounts', { name: 'chaos templates', balance: 3_000 })
      const key = await client.call('POST', `/admin/v1/accounts/${acc!.body.data.id}/keys`, { label: 'chaos templates' })
      const priced = await client.call('PUT', '/admin/v1/price', {
        account_id: acc!.body.data.id,
        cost_per_message: TEMPLATE_PRICES.service,
        prices: TEMPLATE_PRICES,
        settle: 'provider',
      })
      if (priced?.status !== 200) throw new Error(`template account's prices not set: ${JSON.stringify(priced)}`)
      const assigned = await client.call('PUT', `/admin/v1/accounts/${acc!.body.data.id}/senders/${senderId}`, { default: true })
      if (assigned?.status !== 200) throw new Error(`meta sender assignment failed: ${JSON.stringify(assigned)}`)
      account = {
        id: acc!.body.data.id,
        key: key!.body.data.key,
        keyId: key!.body.data.id,
        webhook: false,
        senders: [{ id: senderId, number: META_SENDER.number }],
      }
      accountIndex = accounts.length
      accounts.push(account)
      // The first campaign's contacts, segment and draft, before any crash can abandon them halfway.
      firstDraft = await draftCampaign(client)
      observer = observe(client)
    },

    /**
     * The fault phase's template work until `until`: first the campaign run while its template is
     * paused, then the seed's mix of sends, bulks, campaigns and Meta's changes.
     */
    async run(client: Client, accounts: Account[], until: number, deadline: number): Promise<void> {
      const work: Promise<unknown>[] = []
      // Its own draws, so that the mix's plan does not depend on how long this takes.
      const first = seeded(seed ^ 0xf1a7)
      if (firstDraft) {
        const draft = firstDraft
        work.push(
          (async () => {
            await change(fakes[0]!, 'status', 'PAUSED', 'now', deadline)
            await runCampaign(client, draft, true)
            await Bun.sleep(first.int(1_500, 3_000))
            await change(fakes[0]!, 'status', first.chance(0.5) ? 'APPROVED' : 'REINSTATED', 'now', deadline)
          })(),
        )
      }
      // Meta's status reports of what it accepted, priced, on their own clock.
      work.push(
        (async () => {
          while (Date.now() < until) {
            await Bun.sleep(reporting.int(150, 400))
            reportOne(deadline)
          }
        })(),
      )
      while (Date.now() < until) {
        const r = random.next()
        if (r < 0.4) work.push(sendRequest(client, accounts, false))
        else if (r < 0.6) work.push(sendRequest(client, accounts, true))
        else if (r < 0.9) void someChange(deadline)
        else if (r < 0.95 && campaigns.length < MAX_CAMPAIGNS)
          work.push(draftCampaign(client).then((d) => d && runCampaign(client, d, false)))
        await Bun.sleep(random.int(80, 300))
      }
      await Promise.all(work)
    },

    /**
     * The end of Meta's changes: the campaigns' template approved (its last word), then every webhook
     * held back posted (stale ones after newer ones), and every delivery taken or given up at `deadline`.
     */
    async finish(deadline: number): Promise<void> {
      const t = fakes[0]!
      if (t.status !== 'APPROVED') await change(t, 'status', 'APPROVED', 'now', deadline)
      for (const [, waiting] of held) waiting.splice(0).forEach((release) => release())
      for (let settled = 0; settled < deliveries.length;) {
        const now = deliveries.length
        await Promise.all(deliveries.slice(settled))
        settled = now
      }
    },

    /** Stops the observer. */
    async stop(): Promise<void> {
      observing = false
      await observer
    },

    evidence(): TemplateEvidence {
      const final = new Map(
        fakes.map((t) => [
          ids.get(t.id)!,
          {
            status: t.status.toLowerCase(),
            category: t.category.toLowerCase(),
            quality: (t.quality_score?.score ?? 'UNKNOWN').toLowerCase(),
          },
        ]),
      )
      // The tag is the body's one parameter.
      const tagOf = (body: string) => {
        try {
          const sent = JSON.parse(body)
          const c = (sent.template?.components ?? []).find((x: any) => x.type === 'body')
          return String(c?.parameters?.[0]?.text ?? '')
        } catch {
          return ''
        }
      }
      return {
        senderId,
        accountId: account?.id ?? 0,
        templates: fakes.map((t) => ({ id: ids.get(t.id)!, ref: t.id, name: t.name })),
        notices,
        final,
        handoffs: graph.requests
          .filter((r) => r.method === 'POST' && r.path.endsWith('/messages'))
          .map((r) => ({
            at: epochOf(r.at),
            tag: tagOf(r.body),
            status: r.status,
            code: r.code,
          })),
        wamids: new Set(graph.ids),
        campaigns,
        observed,
        reports: [...reports.values()],
      }
    },
  }
}

/**
 * Posts a signed Meta webhook to the service at `base` until an instance answers 200 (Meta retries), or
 * `deadline`: when it was taken, or null. Each try is bounded by the deadline too, so a webhook held
 * back behind this one never outlives the run's budget.
 */
export async function postMetaWebhook(base: string, body: string, secret: string, deadline: number): Promise<number | null> {
  while (Date.now() < deadline) {
    try {
      const answer = await fetch(`${base}/provider/meta/webhook`, {
        method: 'POST',
        headers: metaWebhookHeaders(body, secret),
        body,
        signal: AbortSignal.timeout(Math.max(1, Math.min(30_000, deadline - Date.now()))),
      })
      if (answer.status === 200) return Date.now()
    } catch {
      // the instance went away with it: again
    }
    await Bun.sleep(300)
  }
  return null
}
