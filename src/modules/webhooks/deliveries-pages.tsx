// The operator's failed webhook deliveries across accounts, newest first, each with a replay button.

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, notFound, orError, respond, pageRoutes } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { audit } from '../users/service'
import { offsetOf, offsetPager, PagedTable, PAGE_SIZE } from '../../dashboard/components'
import { accountOfKey, getDelivery, listFailedDeliveries, replayDelivery } from './deliveries'
import { EventCell } from './event-cell'
import { formatTimes } from '../../lib/time'

type Server = Parameters<Dashboard['addressOf']>[1]

export function failedDeliveryPages(d: Dashboard) {
  const auditOf = (
    session: Session,
    request: Request,
    server: Server,
    entry: { accountId: number | null; action: string; detail: Record<string, unknown> },
  ) => audit(d.sql, { user: session.user, address: d.addressOf(request, server), ...entry })
  const OPERATOR = 'operator' as const

  async function deliveriesPage(session: Session, offset: number, options: { error?: string; status?: number } = {}) {
    const list = formatTimes(await listFailedDeliveries(d.sql, { limit: PAGE_SIZE, offset }), d.tz)
    return respond(
      <Layout title="Failed deliveries" session={session} error={options.error}>
        <p class="muted">
          {list.total.toLocaleString('en')} webhook deliveries gave up after every retry, newest first. Times in {d.tz}.
        </p>
        <PagedTable
          columns={[
            { header: 'Created', cell: (e) => e.created_at, class: 'nowrap' },
            {
              header: 'Account',
              cell: (e) => <a href={`/dashboard/accounts/${e.account_id}/webhook?key=${e.api_key_id}`}>{e.account_name}</a>,
            },
            { header: 'Key', cell: (e) => e.key_label },
            { header: 'Event', cell: (e) => <EventCell e={e} />, class: 'wrap' },
            { header: 'Attempts', cell: (e) => e.attempts, phone: false },
            { header: 'Last error', cell: (e) => e.last_error ?? '' },
            {
              header: 'Replay',
              cell: (e) => (
                <form method="post" action={`/dashboard/deliveries/${e.id}/replay`}>
                  <Csrf session={session} />
                  <button class="secondary" type="submit" aria-label={`Replay delivery ${e.id}`}>
                    Replay
                  </button>
                </form>
              ),
            },
          ]}
          rows={list.items}
          pager={offsetPager('Pages of failed deliveries', offset, list.total, (at) => `/dashboard/deliveries?offset=${at}`)}
        />
      </Layout>,
      options.status ?? 200,
    )
  }

  return pageRoutes()
    .get('/deliveries', async ({ request, query }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : deliveriesPage(session, offsetOf(query.offset))
    })
    .post('/deliveries/:id/replay', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      if (!/^\d{1,15}$/.test(params.id)) return notFound(session)
      const id = Number(params.id)
      return orError(
        async () => {
          const delivery = await getDelivery(d.sql, id)
          await replayDelivery(d.sql, d.deps.clock, id)
          await auditOf(session, request, server, {
            accountId: await accountOfKey(d.sql, delivery.api_key_id),
            action: 'webhook delivery replayed',
            detail: { key_id: delivery.api_key_id, delivery_id: id },
          })
          return d.finish(session, {
            to: '/dashboard/deliveries',
            notice: `Delivery ${id} will be sent again: it is off this list until it fails again.`,
          })
        },
        (error, status) => (status === 404 ? notFound(session) : deliveriesPage(session, 0, { error, status })),
      )
    })
}
