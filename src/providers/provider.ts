// The messaging provider behind the API. `send` hands one message over and never throws: every
// failure (refusal, error answer, network error, timeout) comes back as `{ ok: false }`.

export type OutgoingMessage = { id: number; to: string; body: string; mediaUrl: string | null }

/** `pending`: not this caller's outcome to give: another process holds the message's hand-off. */
export type HandoffResult = { ok: true; sid: string } | { ok: false; errorCode: number | null; errorMessage: string; pending?: boolean }

/** A status report the provider will make later, recorded with the hand-off (the simulator's). */
export type ScheduledReport = {
  status: 'delivered' | 'read' | 'failed'
  afterMs: number
  errorCode?: number
  errorMessage?: string
}

export interface Provider {
  readonly name: 'simulator' | 'twilio'
  send(message: OutgoingMessage): Promise<HandoffResult>
  /** Reports to schedule for an accepted message; providers that call back (Twilio) have none. */
  scheduledReports?(to: string): ScheduledReport[]
}

/** How long a hand-off may take before it counts as failed (the contract's 10 s). */
export const HANDOFF_TIMEOUT_MS = 10_000
