// A member's API keys: create with a label (the key shown once), list, activate and deactivate.

import { h } from '../../dashboard/jsx'
import { CopyButton, Csrf, Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, field, notFound, redirect, respond, pageRoutes } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { ApiError } from '../../http/errors'
import { audit } from '../users/service'
import { createKey, listKeys, setKeyActive } from './keys'

export function keyPages(d: Dashboard) {
  async function keysPage(session: Session, options: { created?: { key: string; label: string }; error?: string; status?: number } = {}) {
    const keys = await listKeys(d.sql, d.tz, session.user.account_id!)
    return respond(
      <Layout title="API keys" session={session} error={options.error}>
        {options.created ? (
          <div class="card" role="status">
            <p>
              The new key <strong>{options.created.label}</strong>. Copy it now: it is shown only this once.
            </p>
            <code class="secret" id="new-key">
              {options.created.key}
            </code>
            <CopyButton target="new-key" what="key" />
          </div>
        ) : null}
        <form class="inline card" method="post" action="/dashboard/keys">
          <Csrf session={session} />
          <label>
            Label
            <input name="label" required maxlength={200} />
          </label>
          <button type="submit">Create key</button>
        </form>
        <PagedTable
          columns={[
            { header: 'Label', cell: (k) => k.label },
            { header: 'Prefix', cell: (k) => <code>{k.prefix}…</code> },
            { header: 'Created', cell: (k) => k.created_at, class: 'nowrap', phone: false },
            { header: 'Last used', cell: (k) => k.last_used_at ?? 'never', class: 'nowrap' },
            {
              header: 'State',
              cell: (k) => (
                <form method="post" action={`/dashboard/keys/${k.id}/active`}>
                  <Csrf session={session} />
                  <input type="hidden" name="active" value={k.active ? 'false' : 'true'} />
                  {k.active ? 'active ' : 'inactive '}
                  <button class="secondary" type="submit" aria-label={`${k.active ? 'Deactivate' : 'Activate'} key ${k.label}`}>
                    {k.active ? 'Deactivate' : 'Activate'}
                  </button>
                </form>
              ),
            },
          ]}
          rows={keys.items}
        />
      </Layout>,
      options.status ?? 200,
    )
  }

  return pageRoutes()
    .get('/keys', async ({ request }) => {
      const session = await d.sessionOf(request)
      if (!session) return redirect('/dashboard/sign-in')
      if (session.user.role !== 'member') return notFound(session)
      return keysPage(session)
    })
    .post('/keys', async ({ request, body, server }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'member') return notFound(session)
      try {
        const key = await createKey(d.sql, d.tz, session.user.account_id!, { label: field(body, 'label') })
        await audit(d.sql, {
          user: session.user,
          address: d.addressOf(request, server),
          accountId: key.account_id,
          action: 'key created',
          detail: { key_id: key.id, label: key.label },
        })
        return keysPage(session, { created: key })
      } catch (error) {
        if (error instanceof ApiError) return keysPage(session, { error: error.message, status: error.status })
        throw error
      }
    })
    .post('/keys/:id/active', async ({ request, body, params, server }) => {
      const session = await d.change(request, body)
      if (session instanceof Response) return session
      if (session.user.role !== 'member') return notFound(session)
      const id = Number(params.id)
      const keys = await listKeys(d.sql, d.tz, session.user.account_id!)
      if (!Number.isSafeInteger(id) || !keys.items.some((k) => k.id === id)) return notFound(session)
      const active = field(body, 'active') === 'true'
      await setKeyActive(d.sql, d.tz, id, active)
      await audit(d.sql, {
        user: session.user,
        address: d.addressOf(request, server),
        accountId: session.user.account_id,
        action: active ? 'key activated' : 'key deactivated',
        detail: { key_id: id },
      })
      return redirect('/dashboard/keys')
    })
}
