// A fake Twilio for the chaos runner: a real local server that answers the Messages resource with
// a fault chosen per message (fixed by the seed and the message's tag, not by arrival order), and
// then posts signed status callbacks to the service, retrying while no instance answers. Like the
// real one it enforces a rate, which drops now and then (busy spells, placed by the seed): past the
// rate of the moment in the last second it answers 429 with 20429 or 63018, with a Retry-After or without.
//
// Every message body carries a unique tag in brackets ("[s12]", "[b3-7]", "[c2-5]"): it is how the
// fake, the client and the final checks name one message.

import { createHmac } from 'node:crypto'
import { hashed } from '../helpers/random'

export const AUTH_TOKEN = 'chaos-auth-token'
export const ACCOUNT_SID = `AC${'c'.repeat(32)}`

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
  at: number
  attempt: number
  fault: Fault
  answer: 'accepted' | 'refused' | 'late' | 'throttled'
  /** When the answer went (ms since the epoch); unset while it has not. */
  answeredAt?: number
  sid?: string
}

/** Where the status callbacks of each SID went, as the service answered them. */
export type Callback = { sid: string; status: string; answered: number }

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

function sign(url: string, params: Record<string, string>): string {
  let data = url
  for (const key of Object.keys(params).sort()) data += key + params[key]
  return createHmac('sha1', AUTH_TOKEN).update(data, 'utf8').digest('base64')
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

/** The fake's rate: `busyPerSecond` in the first BUSY_SPELL_MS of some SPELL_EVERY_MS windows (the seed picks which), else `perSecond`. */
export type FakeRate = { perSecond: number; busyPerSecond: number }
const SPELL_EVERY_MS = 8_000
const BUSY_SPELL_MS = 4_000

export function startFakeTwilio(seed: number, options: { serviceTimeoutMs: number; leaseMs: number; rate: FakeRate }) {
  const { serviceTimeoutMs, leaseMs, rate } = options
  const startedAt = Date.now()
  const rateAt = (at: number) => {
    const window = Math.floor((at - startedAt) / SPELL_EVERY_MS)
    const busy = (at - startedAt) % SPELL_EVERY_MS < BUSY_SPELL_MS && hashed(seed, window, 'busy') < 0.75
    return busy ? rate.busyPerSecond : rate.perSecond
  }
  const receipts: Receipt[] = []
  /** When each of the last second's requests came, for the rate. */
  let recent: number[] = []
  const callbacks: Callback[] = []
  const problems: string[] = []
  let pending = 0
  let stopped = false

  /** Posts one report until an instance answers it (any instance: they share the public URL). */
  async function report(url: string, sid: string, status: string, errorCode?: string): Promise<void> {
    const params: Record<string, string> = { MessageSid: sid, MessageStatus: status, AccountSid: ACCOUNT_SID }
    if (errorCode) params.ErrorCode = errorCode
    const deadline = Date.now() + 120_000
    while (!stopped && Date.now() < deadline) {
      const answer = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': sign(url, params) },
        body: new URLSearchParams(params).toString(),
      }).then(
        (r) => r.status,
        () => 0,
      )
      if (answer === 200) {
        callbacks.push({ sid, status, answered: Date.now() })
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
      const receipt: Receipt = { tag, to: form.get('To') ?? '', at: Date.now(), attempt, fault, answer: 'refused' }
      receipts.push(receipt)
      const answer = await answerOf(receipt, callbackUrl)
      receipt.answeredAt = Date.now()
      return answer
    },
  })

  async function answerOf(receipt: Receipt, callbackUrl: string): Promise<Response> {
    const { tag, attempt, fault } = receipt
    // The rate first, whatever the message's fault: a request past it was never processed.
    recent = recent.filter((at) => at > receipt.at - 1_000)
    if (recent.length >= rateAt(receipt.at)) {
      receipt.answer = 'throttled'
      return throttleAnswer(seed, tag, attempt)
    }
    recent.push(receipt.at)
    // The message's attempts that got past the throttles, this one included.
    const processed = receipts.filter((r) => r.tag === tag && r.answer !== 'throttled' && r.at <= receipt.at).length
    const sid = `SM${crypto.randomUUID().replaceAll('-', '')}`
    const accept = () => {
      receipt.answer = 'accepted'
      receipt.sid = sid
      track(
        (async () => {
          for (const r of reportsOf(seed, tag)) {
            await Bun.sleep(20 + Math.floor(hashed(seed, tag, r.status) * 300))
            await report(callbackUrl, sid, r.status, r.errorCode)
          }
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
        const early = report(callbackUrl, sid, 'delivered')
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
    /** Callbacks still being posted or waiting to be. */
    pending: () => pending,
    stop() {
      stopped = true
      server.stop(true)
    },
  }
}

export type FakeTwilio = ReturnType<typeof startFakeTwilio>
