// An account's API keys: create with a label (the key shown once, after the redirect, from a flash),
// list, activate and deactivate. Members at /dashboard/keys, operators at /dashboard/accounts/:id/keys:
// one implementation, the account from the scope.

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, orError, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import { MAX_NAME_CHARS } from '../../lib/validate'
import { audit } from '../users/service'
import { AccountLink, changeScope, idParam, titleOf, viewScope, type Scope } from './scope'
import { createKey, listKeys, setKeyActive } from './keys'

type Server = Parameters<Dashboard['addressOf']>[1]

export function keyPages(d: Dashboard) {
  async function keysPage(scope: Scope, options: { state?: FormState; status?: number } = {}) {
    const { session, base } = scope
    const keys = await listKeys(d.sql, d.tz, scope.accountId)
    const { state } = options
    return respond(
      <Layout title={titleOf(scope, 'API keys')} session={session}>
        <AccountLink scope={scope} />
        <form class="inline card" method="post" action={`${base}/keys`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="key" />
          <Field state={state} form="key" name="label" label="Label" required maxlength={MAX_NAME_CHARS} />
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
                <form method="post" action={`${base}/keys/${k.id}/active`}>
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
          empty="No API keys yet."
        />
      </Layout>,
      options.status ?? 200,
    )
  }

  const record = (db: Parameters<typeof audit>[0], scope: Scope, request: Request, server: Server, action: string, detail: object) =>
    audit(db, {
      user: scope.session.user,
      address: d.addressOf(request, server),
      accountId: scope.accountId,
      action,
      detail: { ...detail },
    })

  const app = pageRoutes()
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    app
      .get(`${prefix}/keys`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : keysPage(scope)
      })
      .post(`${prefix}/keys`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const to = `${scope.base}/keys`
        return orError(
          () =>
            d.once(scope.session, body, to, async (tx) => {
              const key = await createKey(tx, d.tz, scope.accountId, { label: field(body, 'label') })
              await record(tx, scope, request, server, 'key created', { key_id: key.id, label: key.label })
              return {
                to,
                shown: {
                  id: 'new-key',
                  text: `The new key ${key.label}. Copy it now: it is shown only this once.`,
                  value: key.key,
                  what: 'key',
                },
              }
            }),
          (message, status) => keysPage(scope, { state: formState('key', body, ['label'], message), status }),
        )
      })
      .post(`${prefix}/keys/:key/active`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const id = idParam(params.key)
        const key = (await listKeys(d.sql, d.tz, scope.accountId)).items.find((k) => k.id === id)
        if (!key) return notFound(scope.session)
        const active = field(body, 'active') === 'true'
        await setKeyActive(d.sql, d.tz, key.id, active)
        await record(d.sql, scope, request, server, active ? 'key activated' : 'key deactivated', { key_id: key.id })
        return d.finish(scope.session, {
          to: `${scope.base}/keys`,
          notice: active
            ? `Key ${key.label} activated: requests with it are accepted again.`
            : `Key ${key.label} deactivated: requests with it are refused from now on.`,
        })
      })
  }
  return app
}
