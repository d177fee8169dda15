// The operator's senders: the list with each sender's pace, accounts and last check; a new sender
// (its provider's credential fields, secret ones as password inputs that are never filled in again);
// and a sender's page: check it with its provider, disable or enable it, change its name, pace or
// credentials. A credential's value never reaches a page, a flash or the audit log: pages show which
// fields are set. Accounts get their senders on their own page (account-pages.tsx). 404 for members.

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, orError, respond, pageRoutes } from '../../dashboard/context'
import { Field, FormError, FormProblem, FormToken, PagedTable, fieldProps, type Column, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { ApiError } from '../../http/errors'
import { paceOf, type ProviderName } from '../../providers/registry'
import { accountName } from '../accounts/service'
import { idParam } from '../accounts/scope'
import { checkSender } from './check'
import { SENDER_PROVIDERS } from './directory'
import {
  Credentials,
  LastCheck,
  SENDER_FIELDS,
  credentialsOf,
  fieldsOf,
  gapOf,
  isProvider,
  LateFailuresChoice,
  lateFailuresOf,
  lateFailuresText,
  providerLabel,
  rateOf,
  senderFormState,
} from './forms'
import type { Sender, UpdateSenderBody } from './model'
import { BudgetText } from '../budgets/pages'
import { MESSAGING_TIERS } from '../../lib/validate'
import {
  createSender,
  getSender,
  listSenders,
  openFields,
  recordCheck,
  senderRow,
  setSenderDisabled,
  updateSender,
  type SenderRow,
} from './service'
import { ConnectSection } from './connect'
import type { Actor } from '../users/service'
import { SenderTemplates, senderTemplatesOf } from '../templates/wa-pages'
import { syncWhenReady } from '../templates/submission'
import { lastSync } from '../templates/syncs'

type Server = Parameters<Dashboard['addressOf']>[1]

/** A sender's health in one line: its quality, flag, restrictions and throughput. */
function HealthText({ health }: { health: Sender['health'] }) {
  const parts = [
    `quality ${health.quality ?? 'not read yet'}`,
    health.flagged ? 'flagged by Meta: its campaigns pause' : null,
    health.restricted === 'all'
      ? 'restricted by Meta: every send refused'
      : health.restricted === 'business'
        ? 'restricted by Meta: business-initiated sends refused'
        : null,
    health.throughput === 'high' ? 'high throughput' : null,
  ]
  return <>{parts.filter((p) => p !== null).join('; ')}</>
}

type HealthChange = Sender['health']['history'][number]

/**
 * A value of the history: a restriction's text is one long token (RESTRICTED_BIZ_INITIATED_MESSAGING),
 * so it may break after each underscore; words ("unlimited") never break inside.
 */
function HealthValue({ value }: { value: string | null }) {
  if (value === null) return <>—</>
  const parts = value.split('_')
  return (
    <>
      {parts.map((part, i) =>
        i < parts.length - 1 ? (
          <>
            {part}_<wbr />
          </>
        ) : (
          part
        ),
      )}
    </>
  )
}

const HEALTH_COLUMNS: Column<HealthChange>[] = [
  { header: 'When', cell: (c) => c.at, class: 'nowrap' },
  { header: 'What', cell: (c) => c.field.replace('_', ' ') },
  { header: 'Before', cell: (c) => <HealthValue value={c.old} /> },
  { header: 'Now', cell: (c) => <HealthValue value={c.new} /> },
  { header: 'Said by', cell: (c) => (c.source === 'meta' ? 'Meta' : `a ${c.source}`) },
]

/** The latest changes of a sender's health, newest first (nothing when none): cards on a phone, as every list. */
function HealthHistory({ health }: { health: Sender['health'] }) {
  if (health.history.length === 0) return null
  return (
    <section aria-labelledby="health-history">
      <h2 id="health-history">Health history</h2>
      <PagedTable columns={HEALTH_COLUMNS} rows={health.history} />
    </section>
  )
}

const tierText = (tier: number | null) => (tier === null ? 'unlimited' : tier.toLocaleString('en'))
/** The tier a form shows: what was typed (a form sent back), else the sender's. */
const tierValue = (state: FormState | undefined, tier: number | null) =>
  (state?.form === 'edit' ? state.values.messaging_limit : undefined) ?? (tier === null ? '' : String(tier))
type Options = { state?: FormState; error?: string; status?: number }

const SENDERS_SCRIPT = '/dashboard/assets/senders.js'

export function senderPages(d: Dashboard) {
  const OPERATOR = 'operator' as const
  const actorOf = (session: Session, request: Request, server: Server): Actor => ({
    user: session.user,
    address: d.addressOf(request, server),
  })
  /** A stored sender's provider default pace (what a blank rate or gap means). */
  const defaultPace = (provider: string) =>
    paceOf(provider as ProviderName, (d.config.providers as Record<string, unknown>)[provider] as never)
  const paceText = (s: Pick<Sender, 'rate_per_second' | 'recipient_gap_ms'>) =>
    `${s.rate_per_second.toLocaleString('en')}/s, gap ${s.recipient_gap_ms.toLocaleString('en')} ms`

  /** The accounts of the senders, by id, for their names. */
  async function accountNames(senders: Sender[]) {
    const ids = [...new Set(senders.flatMap((s) => s.accounts.map((a) => a.account_id)))]
    return new Map(await Promise.all(ids.map(async (id) => [id, (await accountName(d.sql, id)) ?? `#${id}`] as const)))
  }
  const Accounts = (props: { sender: Sender; names: Map<number, string> }) =>
    props.sender.accounts.length === 0 ? (
      <span class="muted">none</span>
    ) : (
      <ul class="plain">
        {props.sender.accounts.map((a) => (
          <li>
            <a href={`/dashboard/accounts/${a.account_id}`}>{props.names.get(a.account_id)}</a>
            {a.default ? ' (default)' : ''}
          </li>
        ))}
      </ul>
    )

  /** Check, and disable or enable; `back`: the page the answer returns to. */
  const Actions = (props: { session: Session; sender: Sender; back: 'list' | 'sender' }) => {
    const { session, sender, back } = props
    const action = (path: string, label: string, secondary = true) => (
      <form method="post" action={`/dashboard/senders/${sender.id}/${path}`}>
        <Csrf session={session} />
        <input type="hidden" name="back" value={back} />
        <button class={secondary ? 'secondary' : undefined} type="submit" aria-label={`${label} sender ${sender.name}`}>
          {label}
        </button>
      </form>
    )
    return (
      <div class="actions">
        {action('check', 'Check', back === 'list')}
        {sender.disabled ? action('enable', 'Enable') : action('disable', 'Disable')}
        {back === 'list' ? (
          <a href={`/dashboard/senders/${sender.id}`} aria-label={`Change sender ${sender.name}`}>
            Change
          </a>
        ) : null}
      </div>
    )
  }

  async function sendersPage(session: Session, options: Options = {}) {
    const senders = await listSenders(d.deps)
    const names = await accountNames(senders)
    const { state } = options
    const provider = fieldProps(state, 'sender', 'provider')
    const chosen = provider.typed && isProvider(provider.typed) ? provider.typed : d.config.provider
    return respond(
      <Layout title="Senders" session={session} error={options.error}>
        <p class="muted">
          A sender is a WhatsApp number with its provider's credentials. An account sends from the senders given to it on its account page:
          its default one, unless a send names another. An account without senders sends from the service's own number ({d.config.provider}
          ).
        </p>
        <p>
          <a href="/dashboard/senders/0/templates">The default sender's WhatsApp templates</a>{' '}
          <span class="muted">(the service's own number: sync them, create one)</span>
        </p>
        <PagedTable
          columns={[
            {
              header: 'Sender',
              cell: (s) => (
                <>
                  <a href={`/dashboard/senders/${s.id}`}>{s.name}</a> <span class="muted">#{s.id}</span>
                </>
              ),
            },
            { header: 'Provider', cell: (s) => s.provider },
            { header: 'Number', cell: (s) => s.number, class: 'nowrap' },
            { header: 'Pace', cell: (s) => paceText(s) },
            { header: 'Messaging limit', cell: (s) => <BudgetText use={s.budget} /> },
            { header: 'Accounts', cell: (s) => <Accounts sender={s} names={names} /> },
            { header: 'State', cell: (s) => (s.disabled ? <span class="status status-failed">disabled</span> : 'enabled') },
            { header: 'Last check', cell: (s) => <LastCheck check={s.last_check} /> },
            { header: 'Actions', cell: (s) => <Actions session={session} sender={s} back="list" /> },
          ]}
          rows={senders}
          empty="No senders yet."
        />
        <h2>New sender</h2>
        <form class="stack card" method="post" action="/dashboard/senders">
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="sender" />
          <div class="field">
            <label>
              Provider
              <select {...provider.attributes} required>
                {SENDER_PROVIDERS.map((p) => (
                  <option value={p} selected={p === chosen}>
                    {providerLabel(p)}
                  </option>
                ))}
              </select>
            </label>
            <FormError state={state} form="sender" name="provider" />
          </div>
          <Field state={state} form="sender" name="name" label="Display name (the business name customers see)" required maxlength={100} />
          <Field
            state={state}
            form="sender"
            name="number"
            label="WhatsApp number (E.164)"
            required
            inputmode="tel"
            placeholder="+6281234567890"
            maxlength={40}
          />
          {SENDER_PROVIDERS.map((p) => (
            <Credentials state={state} form="sender" provider={p} />
          ))}
          <Field
            state={state}
            form="sender"
            name="rate_per_second"
            label="Messages per second (optional; blank: the provider's)"
            inputmode="decimal"
            maxlength={10}
          />
          <Field
            state={state}
            form="sender"
            name="recipient_gap_ms"
            label="Least ms between two messages to one recipient (optional; blank: the provider's)"
            inputmode="numeric"
            maxlength={10}
          />
          <LateFailuresChoice value="" />
          <button type="submit">Create sender</button>
        </form>
        <script src={SENDERS_SCRIPT} defer></script>
      </Layout>,
      options.status ?? 200,
    )
  }

  /** A Meta sender's verify token for its "Connect" section: its own, else META_VERIFY_TOKEN; null for none (or another provider). */
  async function verifyTokenOf(row: SenderRow): Promise<{ value: string; from: string } | null> {
    if (row.provider !== 'meta') return null
    const own = (await openFields(d.deps.secrets, row).catch(() => ({}) as Record<string, string>)).verify_token
    if (own) return { value: own, from: "this sender's own" }
    const service = (d.config.providers as { meta?: { verifyToken?: string } }).meta?.verifyToken
    return service ? { value: service, from: "META_VERIFY_TOKEN, the service's" } : null
  }

  async function senderPage(session: Session, sender: Sender, row: SenderRow, options: Options = {}) {
    const names = await accountNames([sender])
    const templates = await senderTemplatesOf(d, sender.id)
    const synced = await lastSync(d.sql, sender.id)
    const { state } = options
    const own = defaultPace(sender.provider)
    return respond(
      <Layout title={`Sender ${sender.name}`} session={session} error={options.error}>
        <p>
          <a href="/dashboard/senders">All senders</a>
        </p>
        <dl class="facts card">
          <dt>Provider</dt>
          <dd>{sender.provider}</dd>
          <dt>Number</dt>
          <dd>{sender.number}</dd>
          {sender.identity ? (
            <>
              <dt>Identity</dt>
              <dd>
                <code>{sender.identity}</code> <span class="muted">(what its callbacks name it by)</span>
              </dd>
            </>
          ) : null}
          <dt>Credentials set</dt>
          <dd id="credentials-set">{sender.credentials_set.length ? sender.credentials_set.join(', ') : 'none'}</dd>
          <dt>Pace</dt>
          <dd>
            {paceText(sender)}
            {row.rate_per_second === null && row.recipient_gap_ms === null ? " (the provider's)" : ''}
          </dd>
          <dt>Messaging limit</dt>
          <dd id="sender-budget">
            <BudgetText use={sender.budget} />
            <br />
            <span class="muted">
              {sender.portfolio === null
                ? 'its own tier'
                : `the tier of portfolio ${sender.portfolio}, shared with its other senders (its own tier, ${tierText(sender.messaging_limit)}, is not used)`}
            </span>
          </dd>
          <dt>Health</dt>
          <dd id="sender-health">
            <HealthText health={sender.health} />
          </dd>
          <dt>Late failures</dt>
          <dd id="sender-late-failures">{lateFailuresText(sender.late_failures)}</dd>
          <dt>State</dt>
          <dd id="sender-state">{sender.disabled ? 'disabled: new sends through it are refused' : 'enabled'}</dd>
          <dt>Last check</dt>
          <dd id="last-check">
            <LastCheck check={sender.last_check} />
          </dd>
          <dt>Accounts</dt>
          <dd>
            <Accounts sender={sender} names={names} />
          </dd>
          <dt>Created</dt>
          <dd>{sender.created_at}</dd>
        </dl>
        <Actions session={session} sender={sender} back="sender" />
        <ConnectSection provider={sender.provider} publicBaseUrl={d.config.publicBaseUrl} verifyToken={await verifyTokenOf(row)} />
        <HealthHistory health={sender.health} />
        <SenderTemplates session={session} senderId={sender.id} templates={templates} lastSync={{ sync: synced, tz: d.config.timezone }} />
        <h2>Change</h2>
        <form class="stack card" method="post" action={`/dashboard/senders/${sender.id}`}>
          <Csrf session={session} />
          <FormProblem state={state} form="edit" />
          <Field state={state} form="edit" name="name" label="Display name" required maxlength={100} value={sender.name} />
          <Field
            state={state}
            form="edit"
            name="rate_per_second"
            label={`Messages per second (blank: the provider's, ${own.perSecond.toLocaleString('en')})`}
            inputmode="decimal"
            maxlength={10}
            value={row.rate_per_second === null ? '' : String(row.rate_per_second)}
          />
          <Field
            state={state}
            form="edit"
            name="recipient_gap_ms"
            label={`Least ms between two messages to one recipient (blank: the provider's, ${own.recipientGapMs.toLocaleString('en')})`}
            inputmode="numeric"
            maxlength={10}
            value={row.recipient_gap_ms === null ? '' : String(row.recipient_gap_ms)}
          />
          {sender.health.messaging_limit_source === 'meta' ? (
            <p class="muted" id="tier-by-meta">
              Messaging limit: {tierText(sender.messaging_limit)}, as Meta said it (it cannot be typed once Meta has said it).
            </p>
          ) : (
            <div class="field">
              <label>
                Messaging limit (Meta's tier for this number: unique people it may start conversations with per 24 hours; a new number
                starts at 250)
                <select name="messaging_limit" aria-describedby="tier-help">
                  {['', ...MESSAGING_TIERS.map(String)].map((v) => (
                    <option value={v} selected={v === tierValue(state, row.messaging_limit)}>
                      {v === '' ? 'unlimited' : Number(v).toLocaleString('en')}
                    </option>
                  ))}
                </select>
              </label>
            </div>
          )}
          <Field
            state={state}
            form="edit"
            name="portfolio"
            label="Portfolio (optional: senders with the same portfolio share its budget, under the portfolio's tier)"
            maxlength={100}
            value={sender.portfolio ?? ''}
          />
          <p class="muted" id="tier-help">
            Portfolios and their tiers: admin API <code>/admin/v1/portfolios</code> or <code>admin portfolios</code> on the command line.
          </p>
          <LateFailuresChoice value={sender.late_failures} />
          {fieldsOf(sender.provider).length > 0 ? (
            <Credentials state={state} form="edit" provider={sender.provider} sender={sender} />
          ) : null}
          <button type="submit">Save sender</button>
        </form>
        <p class="muted">The provider and the number of a sender never change: create another sender for another number.</p>
      </Layout>,
      options.status ?? 200,
    )
  }

  /** The sender of an id in the path with its row, or null (404). */
  async function senderOf(param: string) {
    const id = idParam(param)
    if (id === null) return null
    try {
      return { sender: await getSender(d.deps, id), row: await senderRow(d.sql, id) }
    } catch (error) {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    }
  }
  const backTo = (body: unknown, id: number) => (field(body, 'back') === 'list' ? '/dashboard/senders' : `/dashboard/senders/${id}`)

  const app = pageRoutes()
    .get('/senders', async ({ request }) => {
      const session = await d.view(request, OPERATOR)
      return session instanceof Response ? session : sendersPage(session)
    })
    .post('/senders', async ({ request, body, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      const provider = field(body, 'provider')
      let created: number | null = null
      const answer = await orError(
        () =>
          d.once(session, body, '/dashboard/senders', async (tx) => {
            const sender = await createSender({ ...d.deps, sql: tx }, actorOf(session, request, server), {
              provider,
              name: field(body, 'name'),
              number: field(body, 'number'),
              credentials: credentialsOf(body, provider, false),
              rate_per_second: rateOf(body) ?? undefined,
              recipient_gap_ms: gapOf(body) ?? undefined,
              late_failures: lateFailuresOf(body) ?? undefined,
            })
            created = sender.id
            return {
              to: `/dashboard/senders/${sender.id}`,
              notice:
                `Sender ${sender.name} (${sender.number}, ${sender.provider}) created. Its credentials are stored encrypted and are never ` +
                'shown again. Check asks the provider whether it takes them; give it to accounts on their account pages.',
            }
          }),
        (message, status) =>
          sendersPage(session, {
            state: senderFormState('sender', body, provider, ['provider', ...SENDER_FIELDS], message, status),
            status,
          }),
      )
      d.deps.senders.forget()
      // Its WhatsApp templates are synced once it exists (committed): the outcome is shown on its page, never a failed create.
      if (created !== null) await syncWhenReady(d.deps, created, 'created')
      return answer
    })
    .get('/senders/:sender', async ({ request, params }) => {
      const session = await d.view(request, OPERATOR)
      if (session instanceof Response) return session
      const found = await senderOf(params.sender)
      return found ? senderPage(session, found.sender, found.row) : notFound(session)
    })
    .post('/senders/:sender', async ({ request, body, params, server }) => {
      const session = await d.change(request, body, OPERATOR)
      if (session instanceof Response) return session
      const found = await senderOf(params.sender)
      if (!found) return notFound(session)
      const { sender, row } = found
      return orError(
        async () => {
          const change: UpdateSenderBody = {}
          const name = field(body, 'name').trim()
          if (name !== sender.name) change.name = name
          const rate = rateOf(body)
          if (rate !== row.rate_per_second) change.rate_per_second = rate
          const gap = gapOf(body)
          if (gap !== row.recipient_gap_ms) change.recipient_gap_ms = gap
          // A limit Meta said is not on the form (it cannot be typed).
          const tier = field(body, 'messaging_limit').trim()
          const messagingLimit = tier === '' ? null : Number(tier)
          if (row.messaging_limit_source !== 'meta' && messagingLimit !== row.messaging_limit) change.messaging_limit = messagingLimit
          const portfolio = field(body, 'portfolio').trim()
          if (portfolio !== (sender.portfolio ?? '')) change.portfolio = portfolio === '' ? null : portfolio
          const lateFailures = lateFailuresOf(body)
          if (lateFailures !== null && lateFailures !== sender.late_failures) change.late_failures = lateFailures
          const credentials = credentialsOf(body, sender.provider, true)
          if (Object.keys(credentials).length > 0) change.credentials = credentials
          const to = `/dashboard/senders/${sender.id}`
          if (Object.keys(change).length === 0) return d.finish(session, { to, notice: 'Nothing to change: the sender is as it was.' })
          const saved = await updateSender(d.deps, actorOf(session, request, server), sender.id, change)
          d.deps.senders.forget()
          const what = [
            change.name !== undefined ? 'its name' : null,
            change.rate_per_second !== undefined ? 'its rate' : null,
            change.recipient_gap_ms !== undefined ? 'its recipient gap' : null,
            change.messaging_limit !== undefined ? `its messaging limit (${tierText(change.messaging_limit)})` : null,
            change.portfolio !== undefined ? `its portfolio (${change.portfolio ?? 'none'})` : null,
            change.late_failures !== undefined ? `its late failures (${lateFailuresText(change.late_failures)})` : null,
            change.credentials ? `its ${Object.keys(credentials).join(', ')}` : null,
          ].filter(Boolean)
          return d.finish(session, { to, notice: `Sender ${saved.name} saved: ${what.join(', ')} changed.` })
        },
        (message, status) =>
          senderPage(session, sender, row, {
            state: senderFormState('edit', body, sender.provider, [...SENDER_FIELDS, 'messaging_limit', 'portfolio'], message, status),
            status,
          }),
      )
    })
    .post('/senders/:sender/check', ({ request, body, params, server }) =>
      d.formAction(request, body, OPERATOR, async (session) => {
        const found = await senderOf(params.sender)
        if (!found) return notFound(session)
        // The provider's call is made outside any transaction; its answer is recorded (and audited) after.
        const check = await checkSender(d.deps, found.row)
        const sender = await recordCheck(d.deps, actorOf(session, request, server), found.sender.id, check)
        const to = backTo(body, sender.id)
        const said = check.detail.replace(/\.$/, '')
        const synced = check.ok ? await syncWhenReady(d.deps, sender.id, 'checked') : null
        const templates =
          synced === null ? '' : synced.ok ? ` Templates synced: ${synced.detail}.` : ` Templates not synced: ${synced.detail}`
        return check.ok
          ? d.finish(session, { to, notice: `Sender ${sender.name} checked: ok. ${said}.${templates}` })
          : d.finish(session, { to, error: `Sender ${sender.name} checked: failed. ${said}.` })
      }),
    )
  for (const [path, disabled] of [
    ['disable', true],
    ['enable', false],
  ] as const) {
    app.post(`/senders/:sender/${path}`, ({ request, body, params, server }) =>
      d.formAction(request, body, OPERATOR, async (session) => {
        const found = await senderOf(params.sender)
        if (!found) return notFound(session)
        const sender = await setSenderDisabled(d.deps, actorOf(session, request, server), found.sender.id, disabled)
        d.deps.senders.forget()
        return d.finish(session, {
          to: backTo(body, sender.id),
          notice: disabled
            ? `Sender ${sender.name} disabled: new sends through it are refused, and its running campaigns pause.`
            : `Sender ${sender.name} enabled: it sends again.`,
        })
      }),
    )
  }
  return app
}
