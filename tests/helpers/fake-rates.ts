// What the fake providers (fake-graph.ts, fake-twilio.ts) share: the limits a real provider enforces
// on each sender (at most `perSecond` messages accepted in any second; at least `recipientGapMs`
// between two messages to one recipient), a record of every request with its time and answer, and a
// count of how many times each message was accepted (a message is named by its text). Their time is
// a test clock's when the test gives them one (the one its app runs on): a rate's second and a
// recipient's gap then pass only when the test moves the clock.

import type { Clock } from '../../src/lib/clock'

/** A fake's time (ms) for its limits and records: the test clock's monotonic() when given one, else performance.now(). */
export const fakeTime = (clock?: Pick<Clock, 'monotonic'>): (() => number) => (clock ? () => clock.monotonic() : () => performance.now())

export type FakeRequest = {
  /** When it arrived, by the fake's time (fakeTime). */
  at: number
  method: string
  path: string
  /** The query string, without its `?`. */
  query?: string
  headers: Headers
  body: string
  /** The recipient as the provider was given it (Meta: digits; Twilio: whatsapp:+62…), null if absent. */
  to: string | null
  /** The message's text (its body, caption, or template and variables), by which it is counted. */
  text: string | null
  /**
   * Whose credentials it came with, once they were accepted: Twilio's account SID (of its Basic auth),
   * Meta's phone number id (whose token it bore); null when refused or when the fake checks none.
   */
  account: string | null
  /** The sender it went from, whose limits it counts against: Twilio's From (or MessagingServiceSid), Meta's phone number id. */
  sender: string | null
  /** The answer: HTTP status, and the provider's error code when it refused. */
  status: number
  code: number | null
}

/** Which limit a message would break, and how long until it would not. */
export type Breach = { rule: 'rate' | 'gap'; waitMs: number }

/**
 * The limits a real provider enforces, each sender on its own (Twilio's throughput is per sender
 * number, Meta's per business phone number): the same `perSecond` and `recipientGapMs` for every
 * sender, counted separately, so one sender's traffic never takes another's share.
 */
export class FakeLimits {
  /** Messages per second accepted from one sender; 0: no limit. */
  perSecond = 0
  /** Least time between two accepted messages from one sender to one recipient; 0: no limit. */
  recipientGapMs = 0
  private senders = new Map<string, { acceptedAt: number[]; lastTo: Map<string, number> }>()

  /** null when `sender` may send `to` a message now (and it is counted as sent), else the limit it breaks. */
  admit(to: string, now: number, sender = ''): Breach | null {
    let state = this.senders.get(sender)
    if (!state) this.senders.set(sender, (state = { acceptedAt: [], lastTo: new Map() }))
    if (this.perSecond > 0) {
      state.acceptedAt = state.acceptedAt.filter((t) => t > now - 1000)
      if (state.acceptedAt.length >= this.perSecond) return { rule: 'rate', waitMs: state.acceptedAt[0]! + 1000 - now }
    }
    const last = state.lastTo.get(to)
    if (this.recipientGapMs > 0 && last !== undefined && now - last < this.recipientGapMs) {
      return { rule: 'gap', waitMs: last + this.recipientGapMs - now }
    }
    if (this.perSecond > 0) state.acceptedAt.push(now)
    state.lastTo.set(to, now)
    return null
  }

  reset() {
    this.perSecond = 0
    this.recipientGapMs = 0
    this.senders.clear()
  }
}

/** A Retry-After header worth `waitMs` (whole seconds, at least 1), or none. */
export const retryAfter = (waitMs: number, send: boolean): Record<string, string> =>
  send ? { 'retry-after': String(Math.max(1, Math.ceil(waitMs / 1000))) } : {}

/** Counts acceptances per message text: `times(text)`, and the texts accepted more than once. */
export class Acceptances {
  private counts = new Map<string, number>()
  add(text: string | null) {
    if (text !== null) this.counts.set(text, (this.counts.get(text) ?? 0) + 1)
  }
  times(text: string): number {
    return this.counts.get(text) ?? 0
  }
  duplicates(): string[] {
    return [...this.counts].filter(([, n]) => n > 1).map(([text]) => text)
  }
  get total(): number {
    let sum = 0
    for (const n of this.counts.values()) sum += n
    return sum
  }
  clear() {
    this.counts.clear()
  }
}

/** A loopback port with nothing listening on it. */
export function closedPort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') })
  const port = server.port!
  server.stop(true)
  return port
}

/**
 * WhatsApp's 24-hour customer-service window as a fake provider keeps it: per (sender, customer), opened
 * by the customer's message (the fakes' `customerWrites`). With `enforce` on, the fake refuses a
 * free-form message outside it, as Meta (131047) and Twilio (63016) do; templates always go.
 */
export class FakeWindows {
  enforce = false
  /** When each (sender, customer) last wrote, Date.now() milliseconds; a test may move one back. */
  readonly written = new Map<string, number>()
  static readonly HOURS = 24

  private key(sender: string, customer: string): string {
    return `${sender.replace(/^whatsapp:/, '')}|${customer.replace(/\D/g, '')}`
  }
  wrote(sender: string, customer: string, at = Date.now()): void {
    this.written.set(this.key(sender, customer), at)
  }
  isOpen(sender: string, customer: string): boolean {
    const at = this.written.get(this.key(sender, customer))
    return at !== undefined && Date.now() - at < FakeWindows.HOURS * 3_600_000
  }
  /** Whether a free-form message from `sender` to `customer` is refused now. */
  refuses(sender: string, customer: string): boolean {
    return this.enforce && !this.isOpen(sender, customer)
  }
  reset(): void {
    this.enforce = false
    this.written.clear()
  }
}

/** Where a fake posts what customers write: the service's public root (signatures are over it) and how to reach it. */
export type FakeCallbackTarget = { publicBaseUrl: string; deliver: (request: Request) => Promise<Response> }
