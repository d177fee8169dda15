// An account's API keys: create with a label (the key shown once, after the redirect, from a flash),
// list, activate and deactivate. Members at /dashboard/keys, operators at /dashboard/accounts/:id/keys:
// one implementation, the account from the scope. Both see each key's limits (its request rate, its
// daily spend cap and what it was charged today); operators change them on a key's limits page.

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import { MAX_NAME_CHARS, checkAmount } from '../../lib/validate'
import { valueOf } from '../../http/values'
import { audit } from '../users/service'
import { AccountLink, idParam, inScope, titleOf, viewScope, type Scope } from './scope'
import { createKey, listKeys, setKeyActive, updateKey, type KeyView } from './keys'

type Server = Parameters<Dashboard['addressOf']>[1]

/** A whole number typed in a limits form (1200, 1,200 or 1.200); blank is null (the default, or no cap). */
const optionalNumber = (form: unknown, name: string, unit: string): number | null =>
  field(form, name).trim() === '' ? null : valueOf(checkAmount(field(form, name), name, unit))

export function keyPages(d: Dashboard) {
  const rateOf = (k: KeyView) =>
    k.rate_limit_per_minute === null
      ? `${d.config.keyRateLimitPerMinute.toLocaleString('en')} a minute (default)`
      : `${k.rate_limit_per_minute.toLocaleString('en')} a minute`
  const capOf = (k: KeyView) => (k.daily_spend_cap === null ? 'none' : `${d.money(k.daily_spend_cap)} a day`)

  async function keysPage(scope: Scope, options: { state?: FormState; status?: number } = {}) {
    const { session, base } = scope
    const keys = await listKeys(d.sql, d.tz, scope.accountId, d.deps.clock)
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
            { header: 'Rate', cell: rateOf, phone: false },
            { header: 'Spend cap', cell: capOf },
            { header: 'Spent today', cell: (k) => d.money(k.spent_today), class: 'num nowrap' },
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
            // Only operators change a key's limits.
            ...(scope.accountName === null
              ? []
              : [
                  {
                    header: 'Limits',
                    cell: (k: KeyView) => (
                      <a href={`${base}/keys/${k.id}/limits`} aria-label={`Limits of key ${k.label}`}>
                        Limits
                      </a>
                    ),
                  },
                ]),
          ]}
          rows={keys.items}
          empty="No API keys yet."
        />
      </Layout>,
      options.status ?? 200,
    )
  }

  async function limitsPage(scope: Scope, key: KeyView, options: { state?: FormState; status?: number } = {}) {
    const { session, base } = scope
    const { state } = options
    return respond(
      <Layout title={titleOf(scope, `Limits of key ${key.label}`)} session={session}>
        <AccountLink scope={scope} />
        <p>
          <a href={`${base}/keys`}>API keys</a>
        </p>
        <div class="stats">
          <div class="card stat">
            <div class="value">{rateOf(key)}</div>
            <div class="label">Requests (beyond it: 429)</div>
          </div>
          <div class="card stat">
            <div class="value">{capOf(key)}</div>
            <div class="label">Daily spend cap ({d.tz})</div>
          </div>
          <div class="card stat">
            <div class="value">{d.money(key.spent_today)}</div>
            <div class="label">Charged today, refunds included</div>
          </div>
        </div>
        <form class="card" method="post" action={`${base}/keys/${key.id}/limits`}>
          <Csrf session={session} />
          <FormProblem state={state} form="limits" />
          <Field
            state={state}
            form="limits"
            name="rate_limit_per_minute"
            label={`Requests a minute (blank: the default, ${d.config.keyRateLimitPerMinute.toLocaleString('en')})`}
            inputmode="numeric"
            value={key.rate_limit_per_minute?.toString() ?? ''}
          />
          <Field
            state={state}
            form="limits"
            name="daily_spend_cap"
            label={`Daily spend cap (${d.config.currency}; blank: no cap)`}
            inputmode="numeric"
            value={key.daily_spend_cap?.toString() ?? ''}
          />
          <button type="submit">Set limits</button>
        </form>
        <p class="muted">
          Beyond its rate a request with this key is refused (429). A send that would take what the key was charged today past its cap is
          refused (402) and charges nothing; refunds do not give room back. The day ends at midnight in {d.tz}.
        </p>
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
      .post(`${prefix}/keys`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/keys`
            return d.once(scope.session, body, to, async (tx) => {
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
            })
          },
          (message, status, scope) => keysPage(scope, { state: formState('key', body, ['label'], message), status }),
        ),
      )
      .post(`${prefix}/keys/:key/active`, ({ request, body, params, server }) =>
        d.formAction(request, body, inScope(d, request, accountOf(params)), async (scope) => {
          const id = idParam(params.key)
          const key = (await listKeys(d.sql, d.tz, scope.accountId, d.deps.clock)).items.find((k) => k.id === id)
          if (!key) return notFound(scope.session)
          const active = field(body, 'active') === 'true'
          await setKeyActive(d.sql, d.tz, key.id, active, d.deps.clock)
          await record(d.sql, scope, request, server, active ? 'key activated' : 'key deactivated', { key_id: key.id })
          return d.finish(scope.session, {
            to: `${scope.base}/keys`,
            notice: active
              ? `Key ${key.label} activated: requests with it are accepted again.`
              : `Key ${key.label} deactivated: requests with it are refused from now on.`,
          })
        }),
      )
  }
  // A key's limits: operators only (the member's path does not exist; scopeOf answers 404 to a member here).
  const keyOf = async (scope: Scope, param: string | undefined) =>
    (await listKeys(d.sql, d.tz, scope.accountId, d.deps.clock)).items.find((k) => k.id === idParam(param))
  app
    .get('/accounts/:id/keys/:key/limits', async ({ request, params }) => {
      const scope = await viewScope(d, request, params.id)
      if (scope instanceof Response) return scope
      const key = await keyOf(scope, params.key)
      return key ? limitsPage(scope, key) : notFound(scope.session)
    })
    .post('/accounts/:id/keys/:key/limits', ({ request, body, params, server }) =>
      d.formAction(
        request,
        body,
        async (session) => {
          const scope = await inScope(d, request, params.id)(session)
          if (scope instanceof Response) return scope
          const key = await keyOf(scope, params.key)
          return key ? { scope, key } : notFound(session)
        },
        async ({ scope, key }) => {
          const changed = await updateKey(
            d.sql,
            d.tz,
            key.id,
            {
              rate_limit_per_minute: optionalNumber(body, 'rate_limit_per_minute', 'requests a minute'),
              daily_spend_cap: optionalNumber(body, 'daily_spend_cap', d.config.currency),
            },
            d.deps.clock,
          )
          await record(d.sql, scope, request, server, 'key limits set', {
            key_id: key.id,
            rate_limit_per_minute: changed.rate_limit_per_minute,
            daily_spend_cap: changed.daily_spend_cap,
            previous: { rate_limit_per_minute: key.rate_limit_per_minute, daily_spend_cap: key.daily_spend_cap },
          })
          return d.finish(scope.session, {
            to: `${scope.base}/keys`,
            notice: `Key ${key.label}: ${rateOf(changed)}, spend cap ${capOf(changed)}.`,
          })
        },
        (message, status, { scope, key }) =>
          limitsPage(scope, key, {
            state: formState('limits', body, ['rate_limit_per_minute', 'daily_spend_cap'], message),
            status,
          }),
      ),
    )
  return app
}
