// Customers known only by a WhatsApp user id in the fault test (issue 32; rule 9 of invariants.ts). Two
// Meta senders of the fake Graph API (shared with templates.ts), each a phone number of a WhatsApp Business
// Account of its own (two business portfolios), each given to one account of its own: portfolio A and
// portfolio B. Their customers hide their phones: the seed draws their business-scoped user ids
// (`ID.9…`), and they write in (opening the window), again, STOP and START at random moments, through
// Meta's signed `messages[]` webhooks as the Cloud API shapes them (`contacts[].user_id` and
// `messages[].from_user_id`, no `wa_id` / `from`), posted until an instance answers 200 (Meta retries),
// some twice (a repeat delivery). Some of A's customers are later named with a phone too (`wa_id` with
// `user_id`: the link; from then on they write with both). Meanwhile the integrators send to them by user
// id, single sends and bulks (some with an Idempotency-Key, repeated by the drain like every other), mostly
// to customers who wrote, some to user ids that never did (the window is closed).
//
// User ids are per business portfolio: the same string in another portfolio is another person. The
// harness models that with twins: some of B's customers carry the user id of one of A's. A twin's STOP
// opts it out of B only; A's customer with the same string is still sent to.
//
// One customer's webhooks are posted one after the other (each waits until the one before it was taken),
// so the order the service took them in is the order they were written in; different customers race.
// Every draw is made when the action is planned, never from an answer, so a seed replays its plan.

import type { FakeGraph } from '../helpers/fake-graph'
import { seeded } from '../helpers/random'
import { postMetaWebhook } from './templates'
import type { Account, Client, Request } from './workload'

/** The two portfolios' Meta senders: A (index 0) and B (index 1). */
export const USER_ID_SENDERS = [0, 1].map((i) => ({
  number: `+62811000000${41 + i}`,
  credentials: {
    access_token: `EAAchaosUserIdToken${i}5ecretDDDDDDDDDDDD`,
    phone_number_id: `1000000000000${41 + i}`,
    app_secret: `chaos-user-id-app-${i}-5ecret-0123456`,
    business_account_id: `2000000000000${41 + i}`,
  },
}))

/** A customer of one portfolio: its user id, and the phone Meta named with it (A's only), once planned. */
type Customer = { side: 0 | 1; userId: string; phone: string | null; stopped: boolean; wrote: boolean; chain: Promise<void> }

/** A webhook Meta posted for a customer: what it said, and when it was first posted and first taken (200). */
export type UserIdPost = {
  side: 0 | 1
  userId: string
  /** The phone it named beside the user id (`wa_id`, `from`: the link), as digits; null: the user id alone. */
  phone: string | null
  body: string
  wamid: string
  startedAt: number
  ackAt: number | null
  repeats: number
}

/** A request the fake Graph API got from a portfolio's sender for one of the tags. */
export type UserIdHandoff = {
  at: number
  phoneNumberId: string
  tag: string
  to: unknown
  recipient: unknown
  status: number
  code: number | null
}

export type UserIdEvidence = {
  /** Per side (A, B): its sender's id, its phone number id, and its account's index in `accounts`. */
  sides: { senderId: number; phoneNumberId: string; account: number }[]
  posts: UserIdPost[]
  handoffs: UserIdHandoff[]
}

const TEXTS = ['hello, where is my parcel?', 'thanks!', 'is it shipped yet?', 'ok']

export function createUserIdWorld(seed: number, graph: FakeGraph) {
  const random = seeded(seed ^ 0x05e1d)
  for (const [i, s] of USER_ID_SENDERS.entries()) {
    graph.phone(s.credentials.phone_number_id, s.credentials.access_token, {
      display_phone_number: s.number.slice(1),
      verified_name: `Chaos portfolio ${i === 0 ? 'A' : 'B'}`,
      appSecret: s.credentials.app_secret,
    })
    graph.accountOf.set(s.credentials.phone_number_id, s.credentials.business_account_id)
  }
  // The fake refuses a free-form message outside the customer's window (131047), as Meta does: the
  // service must refuse such a send before charging, never hand it over (templates are exempt).
  graph.windows.enforce = true
  const epochOf = (at: number) => performance.timeOrigin + at

  const customers: Customer[] = []
  const posts: UserIdPost[] = []
  const sides: UserIdEvidence['sides'] = []
  const work: Promise<unknown>[] = []
  let base = ''
  let sequence = 0
  let wamids = 0
  let phones = 0
  /** A fresh user id drawn from the seed (a 9 first, so its digits never read as one of the run's phones). */
  const userId = () => `ID.9${String(random.int(0, 99_999_999)).padStart(8, '0')}${String(++sequence).padStart(6, '0')}`

  /** Posts `body` as Meta does until the service answers 200 or `deadline`; when it was taken. */
  const post = (body: string, secret: string, deadline: number) => postMetaWebhook(base, body, secret, deadline)

  /**
   * Customer `c` writes `text` (after the customer's earlier webhooks were taken): Meta's `messages[]`
   * notification naming the user id, and the phone too once linked (`wa_id` with `user_id`, and `from`).
   */
  function write(c: Customer, text: string, deadline: number, repeat: number) {
    const side = USER_ID_SENDERS[c.side]!
    const wamid = `wamid.chaosUID${c.side}${String(++wamids).padStart(8, '0')}=`
    const phone = c.phone
    const body = JSON.stringify({
      object: 'whatsapp_business_account',
      entry: [
        {
          id: side.credentials.business_account_id,
          changes: [
            {
              field: 'messages',
              value: {
                messaging_product: 'whatsapp',
                metadata: { display_phone_number: side.number.slice(1), phone_number_id: side.credentials.phone_number_id },
                contacts: [{ profile: { name: `customer ${c.userId.slice(-4)}` }, ...(phone ? { wa_id: phone } : {}), user_id: c.userId }],
                messages: [
                  {
                    ...(phone ? { from: phone } : {}),
                    from_user_id: c.userId,
                    id: wamid,
                    timestamp: String(Math.floor(Date.now() / 1000)),
                    type: 'text',
                    text: { body: text },
                  },
                ],
              },
            },
          ],
        },
      ],
    })
    const entry: UserIdPost = { side: c.side, userId: c.userId, phone, body: text, wamid, startedAt: 0, ackAt: null, repeats: repeat }
    const after = c.chain.then(async () => {
      entry.startedAt = Date.now()
      posts.push(entry)
      // Meta's own window opens as the customer writes (the fake keeps it by both ids).
      graph.windows.wrote(side.credentials.phone_number_id, c.userId)
      if (phone) graph.windows.wrote(side.credentials.phone_number_id, phone)
      entry.ackAt = await post(body, side.credentials.app_secret, deadline)
      for (let i = 0; i < repeat; i++) await post(body, side.credentials.app_secret, deadline)
    })
    c.chain = after
    work.push(after)
    return after
  }

  function newCustomer(side: 0 | 1, id = userId()): Customer {
    const c: Customer = { side, userId: id, phone: null, stopped: false, wrote: false, chain: Promise.resolve() }
    customers.push(c)
    return c
  }

  /** A send or a bulk by user id from side `side`'s account, to `targets`; recorded in the client's requests. */
  function send(client: Client, accounts: Account[], side: 0 | 1, targets: string[], idempotent: boolean) {
    const n = ++sequence
    const bulk = targets.length > 1
    const { senderId, account } = sides[side]!
    const tags = targets.map((_, i) => (bulk ? `ub${n}-${i}` : `u${n}`))
    const entries = targets.map((to, i) => {
      client.senderOf.set(tags[i]!, senderId)
      return { to, body: `[${tags[i]}] your parcel is ready` }
    })
    const request: Request = {
      kind: bulk ? 'bulk' : 'send',
      account,
      idempotencyKey: idempotent ? `key-${tags[0]}` : undefined,
      payload: bulk ? { messages: entries } : entries[0],
      tags,
      recipients: targets.map((to) => ({ phone: to, sender: senderId })),
      byUserId: true,
      issuedAt: Date.now(),
      answers: [],
    }
    client.requests.push(request)
    const issued = client.issue(request, accounts)
    work.push(issued)
    return issued
  }

  /**
   * A send of the script, repeated with its Idempotency-Key until it is answered (an instance killed
   * under it answers nothing), so that the script's next word is written after its answer: the checks
   * then know which words came before it, whatever the kills hit.
   */
  async function sendAnswered(client: Client, accounts: Account[], side: 0 | 1, targets: string[], deadline: number) {
    const issued = send(client, accounts, side, targets, true)
    const request = client.requests.at(-1)!
    await issued
    while (!request.reference && Date.now() < deadline) {
      await Bun.sleep(250)
      await client.issue(request, accounts)
    }
  }

  /** A recipient on `side`: mostly a customer who wrote (as planned), else a user id nobody wrote from. */
  function target(side: 0 | 1): string {
    const known = customers.filter((c) => c.side === side && c.wrote)
    return known.length > 0 && random.chance(0.9) ? random.pick(known).userId : userId()
  }

  return {
    /** The two Meta senders and their accounts (pushed onto `accounts`), before the faults. */
    async setup(client: Client, accounts: Account[], url: string): Promise<void> {
      base = url
      for (const [i, s] of USER_ID_SENDERS.entries()) {
        const made = await client.call('POST', '/admin/v1/senders', {
          provider: 'meta',
          name: `chaos user-id sender ${i}`,
          ...s,
          rate_per_second: 50,
          recipient_gap_ms: 0,
          late_failures: 'refund',
        })
        if (made?.status !== 201) throw new Error(`user-id sender creation failed: ${JSON.stringify(made)}`)
        const senderId = made.body.data.id as number
        const acc = await client.call('POST', '/admin/v1/accounts', { name: `chaos user ids ${i === 0 ? 'A' : 'B'}`, balance: 2_000 })
        const key = await client.call('POST', `/admin/v1/accounts/${acc!.body.data.id}/keys`, { label: 'chaos user ids' })
        const assigned = await client.call('PUT', `/admin/v1/accounts/${acc!.body.data.id}/senders/${senderId}`, { default: true })
        if (assigned?.status !== 200) throw new Error(`user-id sender assignment failed: ${JSON.stringify(assigned)}`)
        sides.push({ senderId, phoneNumberId: s.credentials.phone_number_id, account: accounts.length })
        accounts.push({
          id: acc!.body.data.id,
          key: key!.body.data.key,
          keyId: key!.body.data.id,
          webhook: false,
          senders: [{ id: senderId, number: s.number }],
        })
      }
    },

    /**
     * The fault phase's user-id work until `until`: first a script every run plays (a customer's STOP
     * then START with sends after each, a twin's STOP in B with a send to A's customer after it, a link),
     * then the seed's mix of customers writing and sends by user id.
     */
    async run(client: Client, accounts: Account[], until: number, deadline: number): Promise<void> {
      const stopper = newCustomer(0)
      const twinned = newCustomer(0)
      const twin = newCustomer(1, twinned.userId)
      const linked = newCustomer(0)
      for (const c of [stopper, twinned, twin, linked]) c.wrote = true
      const script = (async () => {
        await Promise.all([
          write(stopper, TEXTS[0]!, deadline, 0),
          write(twinned, TEXTS[0]!, deadline, 0),
          write(linked, TEXTS[0]!, deadline, 0),
        ])
        await sendAnswered(client, accounts, 0, [stopper.userId, twinned.userId, linked.userId], deadline)
        await Promise.all([
          write(stopper, 'STOP', deadline, 0),
          write(twin, TEXTS[0]!, deadline, 0).then(() => write(twin, 'STOP', deadline, 0)),
        ])
        await Promise.all([
          sendAnswered(client, accounts, 0, [stopper.userId], deadline),
          sendAnswered(client, accounts, 0, [twinned.userId], deadline),
        ])
        await sendAnswered(client, accounts, 1, [twin.userId], deadline)
        linked.phone = `62857${String(++phones).padStart(8, '0')}`
        await write(linked, 'this is my number', deadline, 0)
        await sendAnswered(client, accounts, 0, [linked.userId], deadline)
        await write(stopper, 'START', deadline, 0)
        await sendAnswered(client, accounts, 0, [stopper.userId], deadline)
      })()
      work.push(script)
      while (Date.now() < until) {
        const r = random.next()
        const side: 0 | 1 = random.chance(0.75) ? 0 : 1
        const mine = customers.filter((c) => c.side === side && c !== stopper)
        if (r < 0.12 || mine.length === 0) {
          // A new customer (in B, now and then a twin of one of A's: the same string, another person).
          const twins = new Set(customers.filter((c) => c.side === 1).map((c) => c.userId))
          const a = customers.filter((c) => c.side === 0 && c !== stopper && !twins.has(c.userId))
          const c = side === 1 && a.length > 0 && random.chance(0.4) ? newCustomer(1, random.pick(a).userId) : newCustomer(side)
          c.wrote = true
          void write(c, random.pick(TEXTS), deadline, random.chance(0.2) ? 1 : 0)
        } else if (r < 0.22) {
          const c = random.pick(mine.filter((x) => x.wrote).length > 0 ? mine.filter((x) => x.wrote) : mine)
          c.wrote = true
          void write(c, random.pick(TEXTS), deadline, random.chance(0.2) ? 1 : 0)
        } else if (r < 0.3) {
          // (Never the script's twinned customer: its send must find it not stopped, whenever the mix runs.)
          const open = mine.filter((x) => !x.stopped && x !== twinned)
          const pool = open.length > 0 ? open : mine.filter((x) => x !== twinned)
          if (pool.length > 0) {
            const c = random.pick(pool)
            c.stopped = true
            c.wrote = true
            void write(c, 'STOP', deadline, random.chance(0.2) ? 1 : 0)
          }
        } else if (r < 0.36) {
          const c = mine.filter((x) => x.stopped)
          if (c.length > 0) {
            const it = random.pick(c)
            it.stopped = false
            void write(it, 'START', deadline, random.chance(0.2) ? 1 : 0)
          }
        } else if (r < 0.4) {
          // Meta names one of A's customers with a phone too: the link (from then on it writes with both).
          // (Never the script's: a customer is named with one phone, once.)
          const c = customers.filter((x) => x.side === 0 && x.wrote && x.phone === null && x !== stopper && x !== linked)
          if (side === 0 && c.length > 0) {
            const it = random.pick(c)
            it.phone = `62857${String(++phones).padStart(8, '0')}`
            void write(it, 'my number is this one', deadline, 0)
          }
        } else if (r < 0.8) void send(client, accounts, side, [target(side)], random.chance(0.4))
        else {
          void send(
            client,
            accounts,
            side,
            Array.from({ length: random.int(2, 5) }, () => target(side)),
            random.chance(0.5),
          )
        }
        await Bun.sleep(random.int(150, 400))
      }
      await Promise.all(work)
    },

    evidence(): UserIdEvidence {
      const ids = new Set(sides.map((s) => s.phoneNumberId))
      const handoffs: UserIdHandoff[] = []
      for (const r of graph.requests) {
        if (r.method !== 'POST' || !r.sender || !ids.has(r.sender) || !r.path.endsWith('/messages')) continue
        let sent: any = null
        try {
          sent = JSON.parse(r.body)
        } catch {
          // not JSON: no tag
        }
        const tag = /\[([a-z0-9-]+)\]/.exec(String(sent?.text?.body ?? ''))?.[1] ?? ''
        handoffs.push({
          at: epochOf(r.at),
          phoneNumberId: r.sender,
          tag,
          to: sent?.to,
          recipient: sent?.recipient,
          status: r.status,
          code: r.code,
        })
      }
      return { sides, posts, handoffs }
    },
  }
}
