// What the fake providers (fake-graph.ts, fake-twilio.ts) share: the limits a real provider enforces
// on one sender (at most `perSecond` messages accepted in any second; at least `recipientGapMs`
// between two messages to one recipient), a record of every request with its time and answer, and a
// count of how many times each message was accepted (a message is named by its text).

export type FakeRequest = {
  /** performance.now() when it arrived. */
  at: number
  method: string
  path: string
  headers: Headers
  body: string
  /** The recipient as the provider was given it (Meta: digits; Twilio: whatsapp:+62…), null if absent. */
  to: string | null
  /** The message's text (its body, caption, or template and variables), by which it is counted. */
  text: string | null
  /** The answer: HTTP status, and the provider's error code when it refused. */
  status: number
  code: number | null
}

/** Which limit a message would break, and how long until it would not. */
export type Breach = { rule: 'rate' | 'gap'; waitMs: number }

export class FakeLimits {
  /** Messages per second accepted from the sender; 0: no limit. */
  perSecond = 0
  /** Least time between two accepted messages to one recipient; 0: no limit. */
  recipientGapMs = 0
  private acceptedAt: number[] = []
  private lastTo = new Map<string, number>()

  /** null when `to` may have a message now (and it is counted as sent), else the limit it breaks. */
  admit(to: string, now: number): Breach | null {
    if (this.perSecond > 0) {
      this.acceptedAt = this.acceptedAt.filter((t) => t > now - 1000)
      if (this.acceptedAt.length >= this.perSecond) return { rule: 'rate', waitMs: this.acceptedAt[0]! + 1000 - now }
    }
    const last = this.lastTo.get(to)
    if (this.recipientGapMs > 0 && last !== undefined && now - last < this.recipientGapMs) {
      return { rule: 'gap', waitMs: last + this.recipientGapMs - now }
    }
    if (this.perSecond > 0) this.acceptedAt.push(now)
    this.lastTo.set(to, now)
    return null
  }

  reset() {
    this.perSecond = 0
    this.recipientGapMs = 0
    this.acceptedAt = []
    this.lastTo.clear()
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
