// The dashboard's link to an inbound message's medium (dashboardMediaPath): the same bytes and headers
// as GET /api/v1/inbound/{id}/media/{n}, for a signed-in user: operators any account's, members their
// own account's (another's is the dashboard's 404). For the inbox's pages to show an inbound image.

import { h } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { type Dashboard, notFound, pageRoutes, respond } from '../../dashboard/context'
import { ApiError } from '../../http/errors'
import { serveMedium } from './media-view'

export function inboundMediaPages(d: Dashboard) {
  return pageRoutes().get('/inbound/:id/media/:n', async ({ request, params }) => {
    const session = await d.view(request)
    if (session instanceof Response) return session
    if (!/^[1-9]\d{0,14}$/.test(params.id) || !/^\d$/.test(params.n)) return notFound(session)
    const accountId = session.user.role === 'operator' ? null : session.user.account_id
    if (session.user.role !== 'operator' && accountId === null) return notFound(session)
    try {
      return await serveMedium(d.sql, accountId, Number(params.id), Number(params.n), request.headers.get('if-none-match'))
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
      if (error.status === 404) return notFound(session)
      return respond(<Layout title="Medium not available" session={session} error={error.message} />, error.status, error.headers)
    }
  })
}
