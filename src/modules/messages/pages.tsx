// An account's messages: the API's list (status, sent_at dates, and the sender when the account has
// senders) plus a phone search, 50 a page; and one message: its sender, status timeline, cost and
// refund (its ledger rows), and its webhook deliveries with every attempt. Members at /dashboard/messages, operators at /dashboard/accounts/:id/messages.

import { h, Fragment } from '../../dashboard/jsx'
import { Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, csvDownload, notFound, orError, respond, counted, pageRoutes } from '../../dashboard/context'
import { AccountLink, accountScope, listHref, pageNumber, queryText, type Scope } from '../accounts/scope'
import { ApiError } from '../../http/errors'
import { MAX_EXPORT_ROWS, MAX_SEARCH_CHARS, STATUSES, exportAccountMessages, getAccountMessage, listAccountMessages } from './queries'
import { ErrorText } from './error-code-pages'
import { csvText } from '../../lib/csv'
import { listAttempts, listMessageDeliveries } from '../webhooks/deliveries'
import { messageLedger } from '../ledger/listing'
import { getTemplate } from '../templates/service'
import { usableTemplate } from '../templates/catalog'
import type { StoredTemplate } from '../../providers/provider'
import { getCampaign } from '../campaigns/service'
import { listAccountSenders, senderNames } from '../senders/service'
import { senderLabel } from '../senders/account-pages'
import { formatTimes } from '../../lib/time'

const PER_PAGE = 50
const MAX_ATTEMPTS_SHOWN = 200

const preview = (body: string) => (body.length > 80 ? `${body.slice(0, 80)}…` : body)

/** The list's filter from the query (text, blank left out), as the page, its links and its CSV share it. */
const filterOf = (query: Record<string, unknown>) => ({
  status: queryText(query, 'status'),
  date_from: queryText(query, 'date_from'),
  date_to: queryText(query, 'date_to'),
  q: queryText(query, 'q'),
  phone: queryText(query, 'phone'),
  sender_id: queryText(query, 'sender_id'),
})
const listQuery = (filter: ReturnType<typeof filterOf>) => ({
  ...filter,
  sender_id: filter.sender_id === undefined ? undefined : Number(filter.sender_id),
})

/**
 * The values a template was filled with, as the provider got them: Twilio's ContentVariables (body,
 * header and buttons, by key), or Meta's body values and each button's.
 */
function filledValues(t: StoredTemplate): string {
  if (t.contentVariables && Object.keys(t.contentVariables).length > 0) {
    return `, ContentVariables: ${Object.entries(t.contentVariables)
      .map(([key, value]) => `${key} = ${value}`)
      .join(' | ')}`
  }
  const buttons = (t.components ?? [])
    .filter((c) => String(c.type).toLowerCase() === 'button' && Array.isArray(c.parameters))
    .map((c) => {
      const [p] = c.parameters as Record<string, unknown>[]
      return `button ${Number(c.index) + 1} = ${String(p?.text ?? p?.payload ?? p?.coupon_code ?? '')}`
    })
  return (t.variables.length ? `, variables: ${t.variables.join(' | ')}` : '') + (buttons.length ? `; ${buttons.join('; ')}` : '')
}

export function messagePages(d: Dashboard) {
  async function listPage(scope: Scope, query: Record<string, unknown>) {
    const { session, accountId, base } = scope
    const filter = filterOf(query)
    const pageNo = pageNumber(query)
    const path = `${base}/messages`
    // The sender filter and column only for an account with senders of its own (0: the service's own number).
    const senders = await listAccountSenders(d.sql, accountId)
    const render = async (list: Awaited<ReturnType<typeof listAccountMessages>> | null, error?: string, status = 200) => {
      const pages = list ? Math.max(1, Math.ceil(list.total / PER_PAGE)) : 1
      const current = typeof pageNo === 'number' ? pageNo : 1
      const used = list ? [...new Set(list.items.map((m) => m.sender_id).filter((id) => id !== null))] : []
      const names = new Map((senders.length > 0 ? await senderNames(d.sql, used) : []).map((s) => [s.id, s]))
      return respond(
        <Layout title="Messages" session={session} error={error}>
          <AccountLink scope={scope} />
          <form class="inline card" method="get" action={path} role="search">
            <label>
              Status
              <select name="status">
                <option value="">any</option>
                {STATUSES.map((s) => (
                  <option value={s} selected={filter.status === s}>
                    {s}
                  </option>
                ))}
              </select>
            </label>
            {senders.length > 0 ? (
              <label>
                Sender
                <select name="sender_id">
                  <option value="">any</option>
                  {senders.map((s) => (
                    <option value={String(s.id)} selected={filter.sender_id === String(s.id)}>
                      {senderLabel(s, s.id)}
                    </option>
                  ))}
                  <option value="0" selected={filter.sender_id === '0'}>
                    {senderLabel(undefined, null)}
                  </option>
                </select>
              </label>
            ) : null}
            <label>
              Name or text contains
              <input type="search" name="q" value={filter.q ?? ''} maxlength={MAX_SEARCH_CHARS} />
            </label>
            <label>
              Phone contains
              <input type="search" name="phone" value={filter.phone ?? ''} inputmode="tel" maxlength={40} />
            </label>
            <label>
              Sent from
              <input name="date_from" value={filter.date_from ?? ''} placeholder="YYYY-MM-DD HH:MM:SS" maxlength={19} />
            </label>
            <label>
              Sent to
              <input name="date_to" value={filter.date_to ?? ''} placeholder="YYYY-MM-DD HH:MM:SS" maxlength={19} />
            </label>
            <button type="submit">Filter</button>
            <a
              class="button-link"
              href={listHref(`${path}.csv`, filter)}
              title={`The newest ${MAX_EXPORT_ROWS.toLocaleString('en')} that match`}
            >
              Export CSV
            </a>
          </form>
          {list ? (
            <>
              <p>
                {list.total.toLocaleString('en')} {list.total === 1 ? 'message' : 'messages'}
              </p>
              <PagedTable
                columns={[
                  { header: 'Created', cell: (m) => m.created_at, class: 'nowrap' },
                  { header: 'To', cell: (m) => <a href={`${path}/${m.id}`}>{m.phone}</a>, class: 'nowrap' },
                  { header: 'Status', cell: (m) => <span class={`status status-${m.status}`}>{m.status}</span> },
                  { header: 'Message', cell: (m) => preview(m.body), phone: false },
                  ...(senders.length > 0
                    ? [
                        {
                          header: 'From',
                          cell: (m: { sender_id: number | null }) => senderLabel(names.get(m.sender_id!), m.sender_id),
                          phone: false,
                        },
                      ]
                    : []),
                  { header: 'Cost', cell: (m) => m.cost.toLocaleString('en'), class: 'num' },
                  {
                    header: 'Error',
                    cell: (m) => (m.status === 'failed' ? <ErrorText code={m.error_code} message={m.error_message} /> : ''),
                  },
                ]}
                rows={list.items}
                pager={{ label: 'Pages of messages', page: current, pages, href: (n) => listHref(path, { ...filter, page: n }) }}
              />
            </>
          ) : null}
        </Layout>,
        status,
      )
    }
    if (typeof pageNo === 'string') return render(null, pageNo, 422)
    return orError(
      async () =>
        render(
          await listAccountMessages({ ...d.deps, sql: await scope.read() }, accountId, {
            ...listQuery(filter),
            limit: PER_PAGE,
            offset: (pageNo - 1) * PER_PAGE,
          }),
        ),
      (message, status) => render(null, message, status),
    )
  }

  /** The list's filter as CSV: the newest MAX_EXPORT_ROWS messages that match (a bad filter: the list page says why, 422). */
  async function listCsv(scope: Scope, query: Record<string, unknown>) {
    const filter = filterOf(query)
    return orError(
      async () => {
        const { items } = await exportAccountMessages({ ...d.deps, sql: await scope.read() }, scope.accountId, listQuery(filter))
        const header = ['id', 'created_at', 'phone', 'status', 'type', 'body', 'cost', 'category', 'error_code', 'error_message']
        const times = ['sent_at', 'delivered_at', 'read_at', 'message_sid'] as const
        const rows = items.map((m) => [
          m.id,
          m.created_at,
          m.phone,
          m.status,
          m.type,
          m.body,
          m.cost,
          m.category,
          m.error_code ?? '',
          m.error_message ?? '',
          ...times.map((k) => m[k] ?? ''),
        ])
        return csvDownload(csvText([...header, ...times], rows), `messages-account-${scope.accountId}.csv`)
      },
      () => listPage(scope, query),
    )
  }

  async function messagePage(scope: Scope, idParam: string) {
    const { session, accountId, base } = scope
    if (!/^\d{1,15}$/.test(idParam)) return notFound(session)
    const message = await getAccountMessage(d.sql, accountId, Number(idParam)).then(
      (found) => formatTimes(found, d.tz),
      (error) => {
        if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
        throw error
      },
    )
    if (!message) return notFound(session)
    const ledger = formatTimes(await messageLedger(d.sql, accountId, message.id), d.tz)
    const deliveries = formatTimes(await listMessageDeliveries(d.sql, message.id), d.tz)
    const attempts = formatTimes(
      await Promise.all(deliveries.map((e) => listAttempts(d.sql, e.id, { limit: MAX_ATTEMPTS_SHOWN, offset: 0 }))),
      d.tz,
    )
    // What the message came from, by name (null: gone since, e.g. a deleted template). A WhatsApp template's
    // message names it in provider_template.templateId too (the two kinds share one id sequence): it is
    // one of wa_templates, shown while the account may still use it.
    const waTemplateId = message.provider_template?.templateId
    const waTemplate = waTemplateId === undefined ? null : await usableTemplate(d.sql, accountId, waTemplateId)
    const template =
      message.template_id === null || waTemplateId !== undefined
        ? null
        : await getTemplate(d.sql, message.template_id, accountId).catch(() => null)
    const campaign =
      message.campaign_id === null ? null : await getCampaign(d.sql, { accountId, keyId: 0 }, message.campaign_id).catch(() => null)
    const [sender] = message.sender_id === null ? [] : await senderNames(d.sql, [message.sender_id])
    const charged = -ledger.filter((r) => r.kind === 'charge').reduce((sum, r) => sum + r.amount, 0)
    const refunded = ledger.filter((r) => r.kind === 'refund').reduce((sum, r) => sum + r.amount, 0)
    const steps: [string, string | null, string?][] = [
      ['Created', message.created_at],
      ['Sent', message.sent_at],
      ['Delivered', message.delivered_at],
      ['Read', message.read_at],
    ]
    if (message.status === 'failed') {
      const error = [message.error_code, message.error_message].filter((x) => x !== null && x !== '').join(' ')
      steps.push(['Failed', message.failed_at, error || 'no error given'])
    }
    if (message.refunded_at) steps.push(['Refunded', message.refunded_at])
    return respond(
      <Layout title={`Message to ${message.phone}`} session={session}>
        <AccountLink scope={scope} />
        <p>
          <a href={`${base}/messages`}>All messages</a>
        </p>
        <div class="card">
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <span class={`status status-${message.status}`}>{message.status}</span>
            </dd>
            <dt>Message SID</dt>
            <dd>
              <code>{message.message_sid ?? '—'}</code>
            </dd>
            <dt>To</dt>
            <dd>{message.phone}</dd>
            <dt>From</dt>
            <dd id="message-sender">{senderLabel(sender, message.sender_id)}</dd>
            {message.campaign_id !== null ? (
              <>
                <dt>Campaign</dt>
                <dd>
                  <a href={`${base}/campaigns/${message.campaign_id}`}>{campaign?.campaign.name ?? `#${message.campaign_id}`}</a>
                </dd>
              </>
            ) : null}
            {message.template_id !== null ? (
              <>
                <dt>Template</dt>
                <dd>
                  {waTemplate ? (
                    <a href={`${base}/whatsapp-templates/${waTemplate.id}`}>{waTemplate.name}</a>
                  ) : waTemplateId !== undefined ? (
                    `${message.provider_template!.ref} (WhatsApp template #${waTemplateId}, no longer available to this account)`
                  ) : template ? (
                    <a href={`${base}/templates/${template.id}`}>{template.name}</a>
                  ) : (
                    `#${message.template_id} (deleted)`
                  )}
                </dd>
              </>
            ) : null}
            {message.provider_template ? (
              <>
                <dt>Sent as approved template</dt>
                <dd class="wrap" id="provider-template">
                  {`${message.provider_template.provider}: ${message.provider_template.ref}`}
                  {message.provider_template.language ? ` (${message.provider_template.language})` : ''}
                  {filledValues(message.provider_template)}
                </dd>
              </>
            ) : null}
            {message.content ? (
              <>
                <dt>Sent as</dt>
                <dd class="wrap" id="rich-content">
                  {`${message.type}: `}
                  <code>{JSON.stringify(message.content)}</code>
                </dd>
              </>
            ) : null}
            {message.media_url ? (
              <>
                <dt>Media URL</dt>
                <dd class="wrap">{message.media_url}</dd>
              </>
            ) : null}
            <dt>Cost</dt>
            <dd>
              {message.cost.toLocaleString('en')} {d.config.currency}
              {charged !== message.cost ? ` (charged ${charged.toLocaleString('en')})` : ''}
            </dd>
            <dt>Refund</dt>
            <dd>
              {refunded > 0
                ? `${refunded.toLocaleString('en')} ${d.config.currency}`
                : message.status === 'failed' && !message.refund_late_failure
                  ? 'none: its price keeps failures after acceptance charged'
                  : 'none'}
            </dd>
          </dl>
          <p class="message-body">{message.body}</p>
        </div>
        <h2>Status timeline</h2>
        <ol class="timeline">
          {steps.map(([label, at, detail]) => (
            <li class={at ? 'done' : 'pending'}>
              <strong>{label}</strong> <span class="nowrap">{at ?? 'not yet'}</span>
              {detail ? <div class="error-text">{detail}</div> : null}
            </li>
          ))}
        </ol>
        {message.status === 'failed' && message.error_code !== null ? (
          <p id="error-meaning">
            What error <ErrorText code={message.error_code} message={null} /> means, and what to do about it.
          </p>
        ) : null}
        <h2>Ledger</h2>
        <PagedTable
          columns={[
            { header: 'When', cell: (r) => r.created_at, class: 'nowrap' },
            { header: 'Kind', cell: (r) => r.kind },
            { header: 'Amount', cell: (r) => r.amount.toLocaleString('en'), class: 'num' },
            { header: 'Balance after', cell: (r) => r.balance_after.toLocaleString('en'), class: 'num' },
            { header: 'Note', cell: (r) => r.note ?? '' },
          ]}
          rows={ledger}
          empty="No ledger rows for this message."
        />
        <h2>Webhook deliveries</h2>
        {deliveries.length === 0 ? <p class="muted">No webhook deliveries for this message.</p> : null}
        {deliveries.map((e, i) => {
          const list = attempts[i]!
          return (
            <section class="card" aria-label={`Delivery ${e.id}`}>
              <h3>
                {String(e.payload?.data?.status ?? 'event')} event · <span class={`status status-${e.status}`}>{e.status}</span>
              </h3>
              <p class="muted wrap">
                {e.webhook_id} · created {e.created_at}
                {e.delivered_at ? ` · delivered ${e.delivered_at}` : ''}
                {e.next_attempt_at ? ` · next attempt ${e.next_attempt_at}` : ''}
                {` · ${e.attempts} ${e.attempts === 1 ? 'attempt' : 'attempts'}`}
              </p>
              {e.last_error ? <p class="error-text">Last error: {e.last_error}</p> : null}
              <PagedTable
                columns={[
                  { header: 'Attempt', cell: (a) => a.attempt },
                  { header: 'Time', cell: (a) => a.created_at, class: 'nowrap' },
                  { header: 'Status code', cell: (a) => a.status_code ?? '—' },
                  { header: 'Latency', cell: (a) => `${a.latency_ms.toLocaleString('en')} ms`, class: 'nowrap' },
                  { header: 'Error', cell: (a) => a.error ?? '' },
                  { header: 'URL', cell: (a) => a.url, class: 'wrap' },
                ]}
                rows={[...list.items].reverse()}
                empty="Not attempted yet."
              />
              {list.total > list.items.length ? (
                <p class="muted">
                  The latest {list.items.length} of {counted(list.total, 'attempt')}.
                </p>
              ) : null}
            </section>
          )
        })}
      </Layout>,
    )
  }

  return pageRoutes()
    .get('/messages', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : listPage(scope, query)
    })
    .get('/messages.csv', async ({ request, query }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : listCsv(scope, query)
    })
    .get('/accounts/:id/messages.csv', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : listCsv(scope, query)
    })
    .get('/messages/:messageId', async ({ request, params }) => {
      const scope = await accountScope(d, request)
      return scope instanceof Response ? scope : messagePage(scope, params.messageId)
    })
    .get('/accounts/:id/messages', async ({ request, params, query }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : listPage(scope, query)
    })
    .get('/accounts/:id/messages/:messageId', async ({ request, params }) => {
      const scope = await accountScope(d, request, params.id)
      return scope instanceof Response ? scope : messagePage(scope, params.messageId)
    })
}
