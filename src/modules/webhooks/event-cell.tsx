// What a delivery is about, in the dashboard's delivery tables: its event type and the gist of its data.

import { h, Fragment } from '../../dashboard/jsx'

type Shown = { event: string; message_sid: string | null; payload: { data?: Record<string, unknown> } | null }

export function EventCell({ e }: { e: Shown }) {
  const data = e.payload?.data ?? {}
  if (data.test === true) return <>test event</>
  const gist =
    e.event === 'message.status' ? (
      <code>{e.message_sid ?? ''}</code>
    ) : e.event === 'balance.low' ? (
      `balance ${String(data.balance ?? '')} below ${String(data.threshold ?? '')}`
    ) : e.event === 'template.status_changed' ? (
      `${String(data.name ?? '')} (${String(data.language ?? '')}) ${String(data.field ?? '')} ${String(data.old ?? '')} → ${String(data.new ?? '')}`
    ) : e.event === 'sender.status_changed' ? (
      `sender ${String(data.sender_id ?? '')} ${String(data.field ?? '')} ${String(data.old ?? '')} → ${String(data.new ?? '')}`
    ) : e.event === 'verification.approved' ? (
      `verification ${String(data.verification_id ?? '')} ${String(data.to ?? '')}`
    ) : (
      String(data.phone ?? '')
    )
  return (
    <>
      <span class="event">{e.event}</span> {gist}
    </>
  )
}
