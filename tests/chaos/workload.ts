// The chaos runner's client side: the plan of operations drawn from the seed, the calls that carry
// them out against the cluster's front, and every answer, so the final checks can hold each one
// against the database. Idempotent repeats are checked as they come: once a request has a final
// answer, every repeat with its Idempotency-Key must get exactly that answer. An account with two
// senders alternates `from` between them (by id or by number), message by message, bulk entries and
// campaigns included; an account with one sends from its default (no `from`). The sender each message
// must go through is recorded by its tag.
//
// Customers write in (issue 19), racing the sends: a new customer writes to one of an account's
// senders, one writes again, one writes STOP (opting out of the account the service gives the message
// to), one who stopped writes START. Messages go mostly to customers who wrote to the sender they go
// through (the window is open), some to new numbers (closed: refused before charging), some to
// customers who wrote STOP (refused before charging). Each entry records whom it went to and when it
// was first asked for, so the checks can hold its answer against what the customers had done by then.

import { ADMIN_TOKEN } from '../helpers/app'
import type { Random } from '../helpers/random'
import type { Inbound } from './fake-twilio'

export type Answer = { status: number; body: any } | null // null: no answer (the instance died with it)

/** A send or a bulk as the client made it; `tags[i]` names entry i's message (null: an invalid entry). */
export type Request = {
  kind: 'send' | 'bulk'
  account: number
  idempotencyKey?: string
  payload: any
  tags: (string | null)[]
  /** Entry i's recipient (0812…) and the sender it names; null for an invalid entry. */
  recipients: ({ phone: string; sender: number } | null)[]
  /** A send of WhatsApp templates (templates.ts): the template each entry named; exempt from the window rules. */
  templates?: number[]
  /** A send to customers known by a WhatsApp user id (user-ids.ts): `recipients[i].phone` is the user id; rule 9 checks it, not rule 6. */
  byUserId?: boolean
  /** When it was first asked for, and when it got its first final answer. */
  issuedAt: number
  answeredAt?: number
  answers: Answer[]
  /** The first final answer: what every repeat with the same Idempotency-Key must get. */
  reference?: { status: number; body: any }
}

/** A stored sender as the client names it: its id, or its number. */
export type SenderRef = { id: number; number: string }
/** `senders[0]` is the account's default. */
export type Account = { id: number; key: string; keyId: number; webhook: boolean; senders: SenderRef[] }
export type Campaign = {
  id: number
  account: number
  tags: string[]
  sender: number
  phones: string[]
  ranAt: number
  /** A campaign of a WhatsApp template (templates.ts): exempt from the window rules. */
  template?: boolean
}

/** What customers can do: write for the first time, write again, write STOP, or write START after a STOP. */
export type CustomerAction = 'new' | 'again' | 'stop' | 'start'

export type Op =
  | { kind: 'send'; account: number; idempotent: boolean }
  | { kind: 'bulk'; account: number; idempotent: boolean; size: number; invalidEvery: number }
  | { kind: 'repeat'; pick: number }
  | { kind: 'campaign'; account: number; contacts: number }
  | { kind: 'resume' }
  | { kind: 'topup'; account: number; amount: number }
  | { kind: 'price'; account: number; cost: number }
  | { kind: 'inbound'; account: number; action: CustomerAction; pick: number; repeat: number }

export function planOps(random: Random, accounts: number, count: number): Op[] {
  // A campaign first, set up before the faults begin (scenario.ts): every run hands campaign messages over.
  // And a customer of the first account who writes STOP early, so every run has an opt-out racing its sends.
  const ops: Op[] = [{ kind: 'campaign', account: 0, contacts: 8 }]
  for (let i = 1; i < count; i++) {
    if (i === 3) {
      ops.push({ kind: 'inbound', account: 0, action: 'stop', pick: 0, repeat: 0 })
      continue
    }
    const r = random.next()
    const account = random.int(0, accounts - 1)
    if (r < 0.34) ops.push({ kind: 'send', account, idempotent: random.chance(0.5) })
    else if (r < 0.54)
      ops.push({ kind: 'bulk', account, idempotent: random.chance(0.6), size: random.int(2, 25), invalidEvery: random.int(4, 12) })
    else if (r < 0.69) ops.push({ kind: 'repeat', pick: random.next() })
    else if (r < 0.76) ops.push({ kind: 'campaign', account, contacts: random.int(3, 15) })
    else if (r < 0.8) ops.push({ kind: 'resume' })
    else if (r < 0.86) ops.push({ kind: 'topup', account, amount: random.int(20, 300) })
    else if (r < 0.9) ops.push({ kind: 'price', account, cost: random.int(1, 5) })
    else {
      const a = random.next()
      const action: CustomerAction = a < 0.45 ? 'new' : a < 0.75 ? 'again' : a < 0.9 ? 'stop' : 'start'
      ops.push({ kind: 'inbound', account, action, pick: random.next(), repeat: random.chance(0.2) ? 1 : 0 })
    }
  }
  return ops
}

/** An answer as a repeat must give it again: an error's `request_id` names the request that got it, so it differs. */
const comparable = (a: { status: number; body: any }) =>
  JSON.stringify(a.body?.success === false ? { ...a, body: { ...a.body, request_id: undefined } } : a)

/**
 * An answer the service gave (not the front's "no instance") that ends the request: not a 409 "still at
 * work", nor a 503 "the database could not be reached; retry shortly".
 */
export const isFinal = (a: Answer): a is { status: number; body: any } =>
  a !== null && a.body?.code !== 'CHAOS_FRONT' && a.status !== 409 && a.body?.code !== 'SERVICE_UNAVAILABLE'

/** How the client makes customers write: sender `index` (into the fake's accounts), from `phone` (E.164). */
export type Customers = { write(index: number, phone: string, body: string, repeat?: number): Promise<Inbound> }

/** 0812… as the customer's E.164 number. */
export const e164 = (phone: string) => `+62${phone.slice(1)}`

export function createClient(base: string, violations: string[], customers: Customers, senderIndex: Map<number, number>, random: Random) {
  async function call(method: string, path: string, body?: unknown, key?: string, headers: Record<string, string> = {}): Promise<Answer> {
    try {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${key ?? ADMIN_TOKEN}`, 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(90_000),
      })
      return { status: res.status, body: await res.json().catch(() => null) }
    } catch {
      return null
    }
  }

  const requests: Request[] = []
  const campaigns: Campaign[] = []
  /** The sender each tag's message must go through. */
  const senderOf = new Map<string, number>()
  let sequence = 0
  let phones = 0
  const phone = () => `0812${String(++phones).padStart(8, '0')}`
  /** The customers who wrote to each sender (by id), and those of them who last wrote STOP. */
  const writers = new Map<number, string[]>()
  const stopped = new Set<string>()
  /**
   * A recipient for a message through `sender`: mostly a customer who wrote to it (its window is open;
   * some of them wrote STOP), else a new number (its window is closed).
   */
  function recipient(sender: number): string {
    const known = writers.get(sender) ?? []
    return known.length > 0 && random.chance(0.85) ? known[random.int(0, known.length - 1)]! : phone()
  }

  /** A customer writes `body` to `sender` (by id); once the service took it, the customer counts as a writer of that sender. */
  async function write(sender: number, from: string, body: string, repeat = 0): Promise<boolean> {
    const entry = await customers.write(senderIndex.get(sender)!, e164(from), body, repeat)
    if (entry.ackAt === null) return false
    const known = writers.get(sender) ?? []
    if (!known.includes(from)) writers.set(sender, [...known, from])
    return true
  }

  /**
   * The `from` of the n-th operation's i-th message for `account`, and the sender it names: none (the
   * default) for an account with one sender; else one sender then the other, named by id, then by number.
   */
  function fromFor(account: Account, n: number, i = 0): { from?: string; sender: number } {
    const [first] = account.senders
    if (!first) throw new Error(`account ${account.id} has no sender`)
    if (account.senders.length < 2) return { sender: first.id }
    const k = n + i
    const sender = account.senders[k % account.senders.length]!
    return { from: Math.floor(k / account.senders.length) % 2 === 0 ? String(sender.id) : sender.number, sender: sender.id }
  }

  /** Sends (or repeats) a request and checks the answer against its reference. */
  async function issue(request: Request, accounts: Account[]): Promise<void> {
    const path = request.kind === 'send' ? '/api/v1/messages/send' : '/api/v1/messages/bulk'
    const headers: Record<string, string> = request.idempotencyKey ? { 'idempotency-key': request.idempotencyKey } : {}
    const answer = await call('POST', path, request.payload, accounts[request.account]!.key, headers)
    request.answers.push(answer)
    if (!isFinal(answer)) return
    if (answer.status >= 500 && answer.body?.code === 'INTERNAL_ERROR')
      violations.push(`${path} answered 500: ${JSON.stringify(answer.body)}`)
    if (!request.reference) {
      request.reference = answer
      request.answeredAt = Date.now()
    } else if (request.idempotencyKey && comparable(answer) !== comparable(request.reference)) {
      violations.push(
        `Idempotency-Key ${request.idempotencyKey}: a repeat got ${JSON.stringify(answer).slice(0, 300)}, the first answer was ${JSON.stringify(request.reference).slice(0, 300)}`,
      )
    }
  }

  async function run(op: Op, accounts: Account[]): Promise<void> {
    const n = ++sequence
    switch (op.kind) {
      case 'send': {
        const tag = `s${n}`
        const { from, sender } = fromFor(accounts[op.account]!, n)
        senderOf.set(tag, sender)
        const to = recipient(sender)
        const request: Request = {
          kind: 'send',
          account: op.account,
          idempotencyKey: op.idempotent ? `key-${tag}` : undefined,
          payload: { to: '', body: `[${tag}] your order has shipped`, ...(from === undefined ? {} : { from }) },
          tags: [tag],
          recipients: [],
          issuedAt: Date.now(),
          answers: [],
        }
        request.payload.to = to
        request.recipients.push({ phone: to, sender })
        requests.push(request)
        return issue(request, accounts)
      }
      case 'bulk': {
        const tags: (string | null)[] = []
        const recipients: Request['recipients'] = []
        const messages = Array.from({ length: op.size }, (_, i) => {
          if (i % op.invalidEvery === op.invalidEvery - 1) {
            tags.push(null)
            recipients.push(null)
            return i % 2 ? { to: '12', body: `[x${n}-${i}] not a number` } : { to: phone(), body: '' }
          }
          tags.push(`b${n}-${i}`)
          const { from, sender } = fromFor(accounts[op.account]!, n, i)
          senderOf.set(`b${n}-${i}`, sender)
          const to = recipient(sender)
          recipients.push({ phone: to, sender })
          return { to, body: `[b${n}-${i}] invoice ready`, ...(from === undefined ? {} : { from }) }
        })
        const request: Request = {
          kind: 'bulk',
          account: op.account,
          idempotencyKey: op.idempotent ? `key-b${n}` : undefined,
          payload: { messages },
          tags,
          recipients,
          issuedAt: Date.now(),
          answers: [],
        }
        requests.push(request)
        return issue(request, accounts)
      }
      case 'repeat': {
        const idempotent = requests.filter((r) => r.idempotencyKey)
        if (idempotent.length === 0) return
        return issue(idempotent[Math.floor(op.pick * idempotent.length)]!, accounts)
      }
      case 'campaign':
        return campaign(n, op.account, op.contacts, accounts)
      case 'resume':
        for (const c of campaigns) {
          const detail = await call('GET', `/admin/v1/campaigns/${c.id}`)
          if (detail?.body?.data?.campaign?.status === 'paused') await call('POST', `/admin/v1/campaigns/${c.id}/resume`)
        }
        return
      case 'topup':
        await call('POST', `/admin/v1/accounts/${accounts[op.account]!.id}/topups`, { amount: op.amount, note: `chaos ${n}` })
        return
      case 'inbound':
        return customer(op, accounts[op.account]!)
      case 'price':
        // The dearest price also keeps late failures charged (no draw of its own: the seed's plan stays).
        await call('PUT', '/admin/v1/price', {
          cost_per_message: op.cost,
          account_id: accounts[op.account]!.id,
          refund_late_failures: op.cost !== 5,
        })
        return
    }
  }

  /** A customer of one of the account's senders writes: see CustomerAction. */
  async function customer(op: Extract<Op, { kind: 'inbound' }>, account: Account): Promise<void> {
    const sender = account.senders[Math.floor(op.pick * account.senders.length)]!.id
    const known = writers.get(sender) ?? []
    const pick = <T>(list: T[]) => list[Math.floor(op.pick * list.length)]
    if (op.action === 'stop' && known.length === 0) {
      // Nobody wrote to this sender yet: a new customer writes, then STOP.
      const from = phone()
      if ((await write(sender, from, `hello [i${++sequence}]`)) && (await write(sender, from, 'STOP'))) stopped.add(from)
      return
    }
    if (op.action === 'new' || known.length === 0) {
      await write(sender, phone(), `hello, is my order ready? [i${++sequence}]`, op.repeat)
      return
    }
    if (op.action === 'again') {
      await write(sender, pick(known)!, `thanks! [i${++sequence}]`, op.repeat)
      return
    }
    if (op.action === 'stop') {
      const from = pick(known.filter((p) => !stopped.has(p))) ?? pick(known)!
      if (await write(sender, from, 'STOP', op.repeat)) stopped.add(from)
      return
    }
    const from = pick([...stopped].filter((p) => known.includes(p)))
    if (from === undefined) return
    if (await write(sender, from, 'START', op.repeat)) stopped.delete(from)
  }

  /**
   * Contacts, a template, a segment and a campaign, then run. A step whose answer is lost abandons
   * the campaign before it runs: repeating a create could make a second contact with the same tag.
   */
  async function campaign(n: number, account: number, contacts: number, accounts: Account[]): Promise<void> {
    const { id, key } = accounts[account]!
    const { from, sender } = fromFor(accounts[account]!, n)
    const tags = Array.from({ length: contacts }, (_, i) => `c${n}-${i}`)
    const phones = tags.map(() => phone())
    for (const [i, tag] of tags.entries()) {
      const made = await call('POST', '/api/v1/contacts', { name: tag, phone: phones[i], tags: `k${n}` }, key)
      if (made?.status !== 201) return
    }
    // Most of its contacts write to the campaign's sender first (their windows open); the others are skipped.
    for (const [i, p] of phones.entries()) if (i % 4 !== 3) await write(sender, p, `I'd like the catalogue [w${n}-${i}]`)
    const template = await call('POST', `/admin/v1/accounts/${id}/templates`, {
      name: `t${n}`,
      body: '[{{name}}] our new collection is out',
    })
    const segment = await call('POST', `/admin/v1/accounts/${id}/segments`, { name: `s${n}`, tag: `k${n}` })
    if (template?.status !== 201 || segment?.status !== 201) return
    const draft = await call(
      'POST',
      '/api/v1/campaigns',
      {
        name: `campaign ${n}`,
        template_id: template.body.data.id,
        segment_id: segment.body.data.id,
        ...(from === undefined ? {} : { from }),
      },
      key,
    )
    if (draft?.status !== 201) return
    const campaignId = draft.body.data.campaign.id as number
    campaigns.push({ id: campaignId, account, tags, sender, phones, ranAt: Date.now() })
    for (const tag of tags) senderOf.set(tag, sender)
    // Running is safe to repeat: a campaign already running answers 409.
    for (let i = 0; i < 20; i++) {
      const ran = await call('POST', `/admin/v1/campaigns/${campaignId}/run`)
      if (ran && ran.body?.code !== 'CHAOS_FRONT') return
      await Bun.sleep(250)
    }
  }

  return { call, run, issue, requests, campaigns, senderOf }
}

export type Client = ReturnType<typeof createClient>
