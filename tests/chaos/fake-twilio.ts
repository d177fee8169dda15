// A fake Twilio for the chaos runner: a real local server that answers the Messages resource with
// a fault chosen per message (fixed by the seed and the message's tag, not by arrival order), and
// then posts signed status callbacks to the service, retrying while no instance answers. It knows
// several Twilio accounts, one per stored sender (an account SID, its auth token, its WhatsApp
// number): a request must come with one of them (Basic auth of the account its path names, From
// whatsapp:<that account's number>), else it is refused (401 or 400) and the run fails. Like the real
// one it enforces a rate per sender (From number), which drops now and then (busy spells, placed by
// the seed, each sender's its own): past its sender's rate of the moment in the last second it answers
// 429 with 20429 or 63018, with a Retry-After or without. Each message's status callbacks name its
// account (AccountSid) and are signed with that account's token; a few forged ones (naming the
// account, signed with another's token) must be refused (403).
//
// Tenants' own credentials (issue 28): whoever holds one sender's account SID and token can sign
// callbacks that verify. So the fake also forges, with a forger's OWN credentials (another sender's
// account, or the deployment's), status reports for some accepted messages of a victim sender (`failed`
// or `undelivered` with FORGED_ERROR_CODE, or `read`), which must be answered 200 `changed: false` and
// change nothing; and, after some customers' messages, a STOP or a text in the customer's name
// addressed to the victim sender's number (or the deployment's), which must be refused (403) and store
// nothing. Every forgery is recorded, so the final checks can show that none changed a message, a
// refund, a window or an opt-out (invariants.ts).
//
// Customers write too (issue 19): `customerWrites` posts a message from a customer's phone to a
// sender's number to the service's incoming-message webhook, as Twilio does, signed with that
// account's token, until an instance answers 200; some are posted again after that (Twilio's retry
// after a lost answer), which must store nothing new. Each opens the customer's 24-hour window with
// that number here, at the moment the customer wrote: a free-form message outside it is refused with
// 63016, as WhatsApp does, and is a problem of the run (the service must refuse it before charging).
//
// Every message body carries a unique tag in brackets ("[s12]", "[b3-7]", "[c2-5]"): it is how the
// fake, the client and the final checks name one message.

import { createHmac } from 'node:crypto'
import { hashed } from '../helpers/random'

/** The deployment's own Twilio account (TWILIO_*): every account of the run has senders, so none may use it. */
export const AUTH_TOKEN = 'chaos-auth-token'
export const ACCOUNT_SID = `AC${'c'.repeat(32)}`
/** The deployment's number (TWILIO_FROM): nobody writes to it, and no message goes from it. */
export const DEPLOYMENT_NUMBER = '+14155238886'

/** A Twilio account the fake serves: a stored sender's credentials and number, and its rate. */
export type TwilioAccount = { sid: string; token: string; number: string; rate: FakeRate }

/** The stored senders' accounts (their rates come from the seed). */
export const SENDER_ACCOUNTS = [
  { sid: `AC${'a'.repeat(32)}`, token: 'chaos-token-sender-a', number: '+14155550101' },
  { sid: `AC${'b'.repeat(32)}`, token: 'chaos-token-sender-b', number: '+14155550202' },
] as const

export type Fault =
  | 'accept'
  | 'slow' // accepts after a few hundred ms
  | 'slow-past-lease' // accepts after longer than the hand-off lease (within the service's timeout): the heartbeat must keep it
  | 'refuse' // 400 with Twilio's error object
  | 'unavailable' // 503
  | 'timeout' // answers (accepted) only after the service's timeout: the service must count it failed
  | 'refuse-first' // refuses the message's first attempt past the rate, accepts any repeat of it
  | 'report-first' // posts the "delivered" report before answering with the SID

/** Twilio's throttling codes: the REST API's concurrency, and the WhatsApp sender's rate. */
export const THROTTLE_CODES = [20429, 63018]

export type Receipt = {
  tag: string
  to: string
  /** The request's From field. */
  from: string
  /** The account SID its path named, and the Basic credentials it came with. */
  pathSid: string
  authSid: string
  authToken: string
  at: number
  attempt: number
  fault: Fault
  answer: 'accepted' | 'refused' | 'late' | 'throttled' | 'unauthorized'
  /** When the answer went (ms since the epoch); unset while it has not. */
  answeredAt?: number
  sid?: string
}

/** Where the status callbacks of each SID went, as the service answered them, and the account they named. */
export type Callback = { sid: string; status: string; answered: number; accountSid: string }

/** A status report forged with another account's own credentials: its target and what the service answered. */
export type ForgedStatus = {
  sid: string
  tag: string
  status: string
  /** The forger's AccountSid (whose own token signed it) and the victim's (whose message it names). */
  signer: string
  victim: string
  /** The HTTP status of the answer, 0 while none came; refused: answered 200 `changed: false`, as it must be. */
  answer: number
  refused: boolean
}

/** A message forged in a customer's name, signed with an account's own credentials, addressed to another's number. */
export type ForgedInbound = {
  sid: string
  /** The customer's number (E.164): one who wrote to the victim, or a stranger nobody ever writes from. */
  phone: string
  /** The index of the victim account (sender) whose customer it names. */
  victim: number
  /** The number it was addressed to (E.164): the victim's, or the deployment's. */
  to: string
  body: string
  signer: string
  /** The HTTP status of the answer, 0 while none came; refused: answered 403, as it must be. */
  answer: number
  refused: boolean
}

/** A message a customer wrote, as the fake posted it: `startedAt` when the customer wrote, `ackAt` when an instance answered 200. */
export type Inbound = {
  sid: string
  /** The customer's number, E.164. */
  phone: string
  /** The index of the account (sender) written to. */
  sender: number
  body: string
  startedAt: number
  ackAt: number | null
  /** Posts after the first 200 (repeat deliveries). */
  repeats: number
}

export const tagOf = (body: string) => /\[([a-z0-9-]+)\]/.exec(body)?.[1] ?? ''

function faultOf(seed: number, tag: string): Fault {
  const r = hashed(seed, tag, 'fault')
  if (r < 0.47) return 'accept'
  if (r < 0.55) return 'slow'
  if (r < 0.6) return 'slow-past-lease'
  if (r < 0.66) return 'refuse'
  if (r < 0.71) return 'unavailable'
  if (r < 0.74) return 'timeout'
  if (r < 0.82) return 'refuse-first'
  return 'report-first'
}

/** The reports a provider sends for an accepted message, in the order it sends them. */
function reportsOf(seed: number, tag: string): { status: string; errorCode?: string }[] {
  const r = hashed(seed, tag, 'reports')
  if (r < 0.5) return [{ status: 'delivered' }, { status: 'read' }]
  if (r < 0.7) return [{ status: 'delivered' }]
  if (r < 0.8) return [{ status: 'undelivered', errorCode: '30008' }]
  if (r < 0.9) return [{ status: 'read' }, { status: 'delivered' }] // out of order: the late one changes nothing
  return [{ status: 'delivered' }, { status: 'delivered' }, { status: 'read' }] // a repeat
}

function sign(token: string, url: string, params: Record<string, string>): string {
  let data = url
  for (const key of Object.keys(params).sort()) data += key + params[key]
  return createHmac('sha1', token).update(data, 'utf8').digest('base64')
}

/** The Basic credentials of a request, or empty strings. */
function basicAuth(header: string | null): { sid: string; token: string } {
  const match = /^Basic\s+(\S+)$/i.exec(header ?? '')
  if (!match) return { sid: '', token: '' }
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  return colon < 0 ? { sid: decoded, token: '' } : { sid: decoded.slice(0, colon), token: decoded.slice(colon + 1) }
}

/**
 * A throttling answer as Twilio gives it: 429 with its error object, 20429 or 63018, and a
 * Retry-After (one second) or none (the service then backs off by itself).
 */
function throttleAnswer(seed: number, tag: string, attempt: number): Response {
  const code = THROTTLE_CODES[Math.floor(hashed(seed, tag, attempt, 'code') * THROTTLE_CODES.length)]!
  const headers: Record<string, string> = hashed(seed, tag, attempt, 'retry-after') < 0.7 ? { 'retry-after': '1' } : {}
  return Response.json({ code, message: 'Too Many Requests', status: 429 }, { status: 429, headers })
}

/** A sender's rate: `busyPerSecond` in the first BUSY_SPELL_MS of some SPELL_EVERY_MS windows (the seed picks which, per sender), else `perSecond`. */
export type FakeRate = { perSecond: number; busyPerSecond: number }
const SPELL_EVERY_MS = 8_000
const BUSY_SPELL_MS = 4_000
/** The share of accepted messages that also get a forged status callback (another account's token), which must be refused. */
const FORGED_SHARE = 0.06
/**
 * The share of accepted messages that also get a status report forged with another account's own
 * credentials (its AccountSid, signed with its token): answered 200 `changed: false`, applied to nothing.
 */
const OWN_FORGED_SHARE = 0.15
/** The error code of the forged failures: no legit report uses it, so a message carrying it was changed by a forgery. */
export const FORGED_ERROR_CODE = 30099
/** The share of customers' messages followed by one forged in the customer's name with another account's credentials. */
const FORGED_INBOUND_SHARE = 0.25

const MESSAGES_PATH = /^\/2010-04-01\/Accounts\/([^/]+)\/Messages\.json$/

export function startFakeTwilio(
  seed: number,
  options: {
    serviceTimeoutMs: number
    leaseMs: number
    /** The stored senders' accounts: requests must come with one of them. */
    accounts: TwilioAccount[]
    /** Other tokens (the deployment's), which must not verify any account's callbacks either. */
    strangers: string[]
    /** The deployment's own account (TWILIO_*, its number TWILIO_FROM): a forger of its own, for what the senders own. */
    deployment: { sid: string; token: string; number: string }
  },
) {
  const { serviceTimeoutMs, leaseMs, accounts } = options
  const startedAt = Date.now()
  const rateAt = (account: number, at: number) => {
    const window = Math.floor((at - startedAt) / SPELL_EVERY_MS)
    const busy = (at - startedAt) % SPELL_EVERY_MS < BUSY_SPELL_MS && hashed(seed, account, window, 'busy') < 0.75
    return busy ? accounts[account]!.rate.busyPerSecond : accounts[account]!.rate.perSecond
  }
  const receipts: Receipt[] = []
  /** When each sender's requests of the last second came (by From number), for its rate. */
  const recent = new Map<string, number[]>()
  const callbacks: Callback[] = []
  const problems: string[] = []
  let forgedRefused = 0
  const forgedStatuses: ForgedStatus[] = []
  const forgedInbound: ForgedInbound[] = []
  let pending = 0
  let stopped = false
  const inbound: Inbound[] = []
  /** When each customer last wrote to each sender's number: `whatsapp:<number> whatsapp:<phone>` → ms. */
  const windows = new Map<string, number>()
  const windowKey = (from: string, to: string) => `${from} ${to}`

  /**
   * Posts signed form fields to the service's URL until an instance answers; the status (0 when none
   * ever did) and the answer's text.
   */
  async function postSigned(url: string, token: string, params: Record<string, string>): Promise<{ status: number; text: string }> {
    const deadline = Date.now() + 120_000
    while (!stopped && Date.now() < deadline) {
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sign(token, url, params) },
        body: new URLSearchParams(params).toString(),
      }).then(
        async (r) => ({ status: r.status, text: await r.text().catch(() => '') }),
        () => ({ status: 0, text: '' }),
      )
      if (answer.status !== 0 && answer.status < 500) return answer
      await Bun.sleep(200) // no instance up right now (a kill), or one going down
    }
    return { status: 0, text: '' }
  }

  /** The accounts that may forge for `victim` with credentials of their own: the other senders' and the deployment's. */
  const forgersOf = (victim: TwilioAccount) => [...accounts.filter((a) => a !== victim), options.deployment]

  /**
   * A status report for `sid` (a message of `victim`), forged with another account's own credentials:
   * its AccountSid and signed with its token, so the signature verifies. A failure with
   * FORGED_ERROR_CODE, or `read`; the service must answer 200 `changed: false` (or park it, the same
   * answer, and later refuse it): the signer's senders did not send the message.
   */
  async function forgeStatus(url: string, sid: string, tag: string, victim: TwilioAccount): Promise<void> {
    const forgers = forgersOf(victim)
    const forger = forgers[Math.floor(hashed(seed, tag, 'own-forger') * forgers.length)]!
    const r = hashed(seed, tag, 'own-forged-status')
    const status = r < 0.45 ? 'undelivered' : r < 0.7 ? 'failed' : 'read'
    const params: Record<string, string> = { MessageSid: sid, MessageStatus: status, AccountSid: forger.sid }
    if (status !== 'read') params.ErrorCode = String(FORGED_ERROR_CODE)
    const forged: ForgedStatus = { sid, tag, status, signer: forger.sid, victim: victim.sid, answer: 0, refused: false }
    forgedStatuses.push(forged)
    const answer = await postSigned(url, forger.token, params)
    forged.answer = answer.status
    if (answer.status === 0) {
      if (!stopped) problems.push(`a status report for ${sid} [${tag}], forged with the own credentials of ${forger.sid}, never answered`)
      return
    }
    let changed: unknown
    try {
      changed = JSON.parse(answer.text)?.data?.changed
    } catch {}
    forged.refused = answer.status === 200 && changed === false
    if (!forged.refused)
      problems.push(
        `a status report for ${sid} [${tag}] of ${victim.sid} (${status}), forged with the own credentials of ${forger.sid}, ` +
          `answered ${answer.status} ${answer.text.slice(0, 200)}, not 200 changed: false`,
      )
  }

  /**
   * A message in the name of `phone` (a customer who wrote `written` to account `index`), forged with
   * another account's own credentials (its AccountSid, signed with its token) and addressed to the
   * victim's number, or to the deployment's number: a STOP (which would opt the customer out of the
   * victim's account) or a text (which would open a window), sometimes from a stranger who never wrote.
   * The service must refuse it (403): the number is not the signer's.
   */
  async function forgeInbound(base: string, index: number, phone: string, written: string): Promise<void> {
    const victim = accounts[index]!
    const key = [phone, written, index]
    const forgers = forgersOf(victim)
    const forger = forgers[Math.floor(hashed(seed, ...key, 'inbound-forger') * forgers.length)]!
    // The deployment's own number is the deployment's to sign for: it forges only for the victim's number.
    const to = forger !== options.deployment && hashed(seed, ...key, 'inbound-forged-to') < 0.3 ? options.deployment.number : victim.number
    const stop = hashed(seed, ...key, 'inbound-forged-body') < 0.65
    // A stranger: +62899… with the customer's last digits, a number no customer of the run writes from.
    const from = !stop && hashed(seed, ...key, 'inbound-forged-from') < 0.5 ? `+62899${phone.slice(-8)}` : phone
    const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
    const body = stop ? 'STOP' : 'please cancel my order'
    const forged: ForgedInbound = { sid, phone: from, victim: index, to, body, signer: forger.sid, answer: 0, refused: false }
    forgedInbound.push(forged)
    const params: Record<string, string> = {
      MessageSid: sid,
      SmsMessageSid: sid,
      AccountSid: forger.sid,
      From: `whatsapp:${from}`,
      To: `whatsapp:${to}`,
      Body: body,
      ProfileName: `customer ${from.slice(-4)}`,
      NumMedia: '0',
    }
    const answer = await postSigned(`${base}/provider/twilio/inbound`, forger.token, params)
    forged.answer = answer.status
    forged.refused = answer.status === 403
    if (answer.status === 0 && !stopped)
      problems.push(`a message from ${from} to ${to}, forged with the own credentials of ${forger.sid}, never answered`)
    else if (answer.status !== 0 && !forged.refused)
      problems.push(
        `a message from ${from} (${JSON.stringify(body)}) to ${to}, forged with the own credentials of ${forger.sid}, ` +
          `answered ${answer.status}, not 403`,
      )
  }

  /**
   * A customer (`phone`, E.164) writes `body` to sender `index`'s number: the message is posted to
   * `base` + /provider/twilio/inbound until an instance takes it, and `repeat` more times after that.
   */
  async function customerWrites(base: string, index: number, phone: string, body: string, repeat = 0): Promise<Inbound> {
    const account = accounts[index]!
    const entry: Inbound = {
      sid: `SM${crypto.randomUUID().replaceAll('-', '')}`,
      phone,
      sender: index,
      body,
      startedAt: Date.now(),
      ackAt: null,
      repeats: 0,
    }
    inbound.push(entry)
    windows.set(windowKey(`whatsapp:${account.number}`, `whatsapp:${phone}`), entry.startedAt)
    const params: Record<string, string> = {
      MessageSid: entry.sid,
      SmsMessageSid: entry.sid,
      AccountSid: account.sid,
      From: `whatsapp:${phone}`,
      To: `whatsapp:${account.number}`,
      Body: body,
      ProfileName: `customer ${phone.slice(-4)}`,
      NumMedia: '0',
    }
    const url = `${base}/provider/twilio/inbound`
    for (let i = 0; i <= repeat; i++) {
      const answer = await postSigned(url, account.token, params)
      if (answer.status !== 200) {
        if (!stopped) problems.push(`inbound ${entry.sid} from ${phone} (${JSON.stringify(body)}) answered ${answer.status}, not 200`)
        return entry
      }
      if (i === 0) entry.ackAt = Date.now()
      else entry.repeats++
    }
    // Some customers' messages are followed by one forged in their name with another account's credentials.
    if (hashed(seed, phone, body, index, 'forge-inbound') < FORGED_INBOUND_SHARE) track(forgeInbound(base, index, phone, body))
    return entry
  }

  /**
   * Posts one report until an instance answers it (any instance: they share the public URL), naming
   * `account` and signed with `token` (its own, or another's for a forgery, which must be refused).
   */
  async function report(
    url: string,
    sid: string,
    account: TwilioAccount,
    status: string,
    errorCode?: string,
    forgedWith?: string,
  ): Promise<void> {
    const params: Record<string, string> = { MessageSid: sid, MessageStatus: status, AccountSid: account.sid }
    if (errorCode) params.ErrorCode = errorCode
    const deadline = Date.now() + 120_000
    while (!stopped && Date.now() < deadline) {
      const answer = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-twilio-signature': sign(forgedWith ?? account.token, url, params),
        },
        body: new URLSearchParams(params).toString(),
      }).then(
        (r) => r.status,
        () => 0,
      )
      if (forgedWith !== undefined && answer !== 0 && answer < 500) {
        if (answer === 403) forgedRefused++
        else problems.push(`a forged status callback for ${sid} (${status}, another account's token) answered ${answer}, not 403`)
        return
      }
      if (answer === 200) {
        callbacks.push({ sid, status, answered: Date.now(), accountSid: account.sid })
        return
      }
      if (answer !== 0 && answer < 500) {
        problems.push(`status callback for ${sid} (${status}) refused with ${answer}`)
        return
      }
      await Bun.sleep(200) // no instance up right now (a kill), or one going down
    }
    if (!stopped) problems.push(`status callback for ${sid} (${status}) never answered`)
  }

  function track(work: Promise<void>) {
    pending++
    void work.finally(() => pending--)
  }

  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 60,
    async fetch(request) {
      const form = new URLSearchParams(await request.text())
      const body = form.get('Body') ?? ''
      const tag = tagOf(body)
      const callbackUrl = form.get('StatusCallback') ?? ''
      const attempt = receipts.filter((r) => r.tag === tag).length + 1
      const fault = faultOf(seed, tag)
      const auth = basicAuth(request.headers.get('authorization'))
      const pathSid = MESSAGES_PATH.exec(new URL(request.url).pathname)?.[1] ?? ''
      const from = form.get('From') ?? ''
      const receipt: Receipt = {
        tag,
        to: form.get('To') ?? '',
        from,
        pathSid,
        authSid: auth.sid,
        authToken: auth.token,
        at: Date.now(),
        attempt,
        fault,
        answer: 'refused',
      }
      receipts.push(receipt)
      // The credentials first: the account the path names, its own token, and its own number as From.
      const index = accounts.findIndex((a) => a.sid === pathSid)
      const account = accounts[index]
      if (!account || auth.sid !== account.sid || auth.token !== account.token) {
        receipt.answer = 'unauthorized'
        receipt.answeredAt = Date.now()
        problems.push(
          `[${tag}] came for account ${pathSid || '(none)'} with the credentials of ${auth.sid || '(none)'}, not a sender's own`,
        )
        return Response.json({ code: 20003, message: 'Authenticate', status: 401 }, { status: 401 })
      }
      if (from !== `whatsapp:${account.number}`) {
        receipt.answer = 'unauthorized'
        receipt.answeredAt = Date.now()
        problems.push(`[${tag}] came for account ${account.sid} From ${from || '(none)'}, not its number ${account.number}`)
        return Response.json(
          { code: 63007, message: 'Twilio could not find a Channel with the specified From address', status: 400 },
          { status: 400 },
        )
      }
      const answer = await answerOf(receipt, index, callbackUrl)
      receipt.answeredAt = Date.now()
      return answer
    },
  })

  async function answerOf(receipt: Receipt, index: number, callbackUrl: string): Promise<Response> {
    const { tag, attempt, fault } = receipt
    const account = accounts[index]!
    // The rate first, whatever the message's fault: a request past it was never processed. Each sender
    // (From number) has its own.
    const last = (recent.get(receipt.from) ?? []).filter((at) => at > receipt.at - 1_000)
    recent.set(receipt.from, last)
    if (last.length >= rateAt(index, receipt.at)) {
      receipt.answer = 'throttled'
      return throttleAnswer(seed, tag, attempt)
    }
    last.push(receipt.at)
    // WhatsApp's window: every message of the run is free-form, so the customer must have written to this number within 24 hours.
    if (!windows.has(windowKey(receipt.from, receipt.to))) {
      receipt.answer = 'refused'
      problems.push(`[${tag}] was handed over to ${receipt.to} from ${receipt.from}, whose window is closed (the service must refuse it)`)
      return Response.json(
        { code: 63016, message: 'Failed to send freeform message because you are outside the allowed window', status: 400 },
        { status: 400 },
      )
    }
    // The message's attempts that got past the throttles, this one included.
    const processed = receipts.filter((r) => r.tag === tag && r.answer !== 'throttled' && r.at <= receipt.at).length
    const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
    const accept = () => {
      receipt.answer = 'accepted'
      receipt.sid = sid
      track(
        (async () => {
          if (hashed(seed, tag, 'forge') < FORGED_SHARE) {
            // Naming this account, signed with another account's (or the deployment's) token: refused.
            const others = [...accounts.filter((a) => a !== account).map((a) => a.token), ...options.strangers]
            const token = others[Math.floor(hashed(seed, tag, 'forger') * others.length)]!
            await report(callbackUrl, sid, account, 'undelivered', '30008', token)
          }
          // Some get a report forged with another account's own credentials, before, among or after the legit ones.
          const reports = reportsOf(seed, tag)
          const forgeAt =
            hashed(seed, tag, 'own-forge') < OWN_FORGED_SHARE ? Math.floor(hashed(seed, tag, 'own-forge-at') * (reports.length + 1)) : -1
          for (const [k, r] of reports.entries()) {
            if (k === forgeAt) await forgeStatus(callbackUrl, sid, tag, account)
            await Bun.sleep(20 + Math.floor(hashed(seed, tag, r.status) * 300))
            await report(callbackUrl, sid, account, r.status, r.errorCode)
          }
          if (forgeAt === reports.length) await forgeStatus(callbackUrl, sid, tag, account)
        })(),
      )
      return Response.json({ sid, status: 'queued' }, { status: 201 })
    }
    switch (fault) {
      case 'accept':
        return accept()
      case 'slow':
        await Bun.sleep(200 + Math.floor(hashed(seed, tag, 'slow') * 500))
        return accept()
      case 'slow-past-lease':
        // Past the lease, within the service's timeout: the holder is alive and its heartbeat renews the lease.
        await Bun.sleep(leaseMs + 500 + Math.floor(hashed(seed, tag, 'slow') * Math.max(0, serviceTimeoutMs - leaseMs - 1_500)))
        return accept()
      case 'refuse':
        return Response.json({ code: 21211, message: "The 'To' number is not a valid phone number.", status: 400 }, { status: 400 })
      case 'unavailable':
        return new Response('upstream unavailable', { status: 503 })
      case 'timeout':
        await Bun.sleep(serviceTimeoutMs + 500)
        receipt.answer = 'late' // the service stopped waiting: it counts the message failed and refunds it
        receipt.sid = sid
        return Response.json({ sid, status: 'queued' }, { status: 201 })
      case 'refuse-first':
        if (processed === 1) return Response.json({ code: 63016, message: 'outside the allowed window', status: 400 }, { status: 400 })
        return accept()
      case 'report-first': {
        // The report beats the answer: the service must keep it until the SID is recorded.
        const early = report(callbackUrl, sid, account, 'delivered')
        track(early)
        await Promise.race([early, Bun.sleep(2_000)])
        return accept()
      }
    }
  }

  return {
    port: server.port!,
    receipts,
    callbacks,
    problems,
    inbound,
    customerWrites,
    /** Forged status callbacks the service refused (403), as it must. */
    forgedRefused: () => forgedRefused,
    /** Status reports forged with another account's own credentials, and what they were answered. */
    forgedStatuses,
    /** Messages forged in customers' names with another account's own credentials, and what they were answered. */
    forgedInbound,
    /** Callbacks still being posted or waiting to be. */
    pending: () => pending,
    stop() {
      stopped = true
      server.stop(true)
    },
  }
}

export type FakeTwilio = ReturnType<typeof startFakeTwilio>
