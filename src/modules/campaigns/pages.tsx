// Campaigns: the list with status and counts, create (now or at a time, from one of the account's
// senders: its default unless another is chosen), and a campaign's page:
// run (now, or at its schedule), resume, cancel, and its progress, a bar and the counts that a small
// script (assets/campaign.js) refreshes every second from GET .../campaigns/:campaign/progress.
// The engine and the campaign service decide every rule; ids of another account are 404.

import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, orError, respond, counted, pageRoutes } from '../../dashboard/context'
import { Field, FormError, FormProblem, FormToken, PagedTable, fieldProps, formState, type FormState } from '../../dashboard/components'
import { MAX_NAME_CHARS } from '../../lib/validate'
import { AccountLink, changeScope, idParam, titleOf, viewScope, type Scope } from '../accounts/scope'
import { PAGE_HEADERS } from '../../dashboard/session'
import { audit } from '../users/service'
import type { CampaignDetail } from './model'
import { cancelCampaign, resumeCampaign, runCampaign } from './engine'
import { createCampaign, getCampaign, listCampaigns, templateSenderOf } from './service'
import { formatTimes } from '../../lib/time'
import { requireTimestamp } from '../../http/values'
import { listTemplates } from '../templates/service'
import { listSegments } from '../templates/segments'
import { listAccountSenders, senderNames } from '../senders/service'
import { senderChoice, senderLabel } from '../senders/account-pages'
import { getTemplateRow, usableTemplate, usableTemplates, type WaTemplate } from '../templates/catalog'
import { parametersFromForm, slotFields, slotsOf, SOURCE_KINDS, type Slot, type SourceInput } from './wa'
import { quoteCampaign, type CampaignQuote } from './quote'
import { linkStart } from '../media/signing'

/** Why recipients would be skipped, in words. */
const SKIPPED: Record<string, string> = {
  RECIPIENT_OPTED_OUT: 'opted out',
  WINDOW_CLOSED: '24-hour window closed (free-form)',
  TEMPLATE_NOT_APPROVED: 'template not approved',
  PRICE_ABOVE_MAX: 'price above its max_price',
  MESSAGING_LIMIT: "past the sender's messaging limit",
  SPEND_CAP_REACHED: "past the key's daily spend cap",
  VALIDATION_ERROR: 'not a valid number',
}

/** A draft campaign's quote: how many would go, how many skipped and why, the cost by category. */
function QuoteCard({ quote, mapped }: { quote: CampaignQuote; mapped: boolean }) {
  const skipped = new Map<string, number>()
  for (const r of quote.results) if (!r.would_send) skipped.set(r.code ?? 'other', (skipped.get(r.code ?? 'other') ?? 0) + 1)
  const categories = Object.entries(quote.cost_by_category)
  return (
    <section class="card" id="campaign-quote" aria-labelledby="campaign-quote-title">
      <h2 id="campaign-quote-title">If it ran now</h2>
      <p>
        {`${quote.would_send.toLocaleString('en')} would be sent, ${quote.skipped.toLocaleString('en')} skipped, of ` +
          (quote.quoted < quote.recipients
            ? `the first ${quote.quoted.toLocaleString('en')} of ${quote.recipients.toLocaleString('en')} recipients.`
            : `${quote.recipients.toLocaleString('en')} recipients.`)}
      </p>
      {skipped.size > 0 ? (
        <table id="quote-skipped">
          <caption>Skipped, and why</caption>
          <thead>
            <tr>
              <th scope="col">Reason</th>
              <th scope="col">Recipients</th>
            </tr>
          </thead>
          <tbody>
            {[...skipped].map(([code, n]) => (
              <tr>
                <td>{`${SKIPPED[code] ?? code} (${code})`}</td>
                <td>{n.toLocaleString('en')}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <table id="quote-cost">
        <caption>Cost by category</caption>
        <thead>
          <tr>
            <th scope="col">Category</th>
            <th scope="col">Cost</th>
          </tr>
        </thead>
        <tbody>
          {categories.map(([category, cost]) => (
            <tr>
              <td>{category}</td>
              <td>{cost.toLocaleString('en')}</td>
            </tr>
          ))}
          <tr>
            <th scope="row">Total</th>
            <td id="quote-total">{quote.total_cost.toLocaleString('en')}</td>
          </tr>
        </tbody>
      </table>
      <p>
        {quote.balance_covers
          ? `The balance (${quote.wa_balance.toLocaleString('en')}) covers it.`
          : `The balance (${quote.wa_balance.toLocaleString('en')}) does not cover it: the campaign would pause when it runs out.`}{' '}
        Nothing is charged or reserved by this preview; a campaign sends what its budget, cap and balance allow, then pauses.
        {mapped
          ? " A recipient without a value for one of the template's parameters (an attribute it lacks) is counted here as sent: it is skipped, uncharged, when the campaign runs."
          : null}
      </p>
    </section>
  )
}

const CAMPAIGN_SCRIPT = '/dashboard/assets/campaign.js'
const PAGE_SIZE = 50
const LIST = { limit: 200, offset: 0 }

/** What the progress route answers: the campaign API's stats, plus what is still to go. */
export const progressOf = (detail: CampaignDetail) => ({
  status: detail.campaign.status,
  pause_reason: detail.campaign.pause_reason,
  stats: detail.stats,
  pending: Math.max(
    0,
    detail.stats.total -
      detail.stats.sent -
      detail.stats.failed -
      detail.stats.window_closed -
      detail.stats.opted_out -
      detail.stats.missing_values -
      detail.stats.user_id_only,
  ),
})

const COUNTS = ['total', 'sent', 'delivered', 'read', 'failed', 'window_closed', 'opted_out', 'missing_values', 'pending'] as const

const SOURCE_LABELS: Record<(typeof SOURCE_KINDS)[number], string> = {
  name: "Contact's name",
  phone: "Contact's phone",
  email: "Contact's e-mail",
  city: "Contact's city",
  attribute: 'Contact attribute (type its key)',
  constant: 'Constant (type the text)',
}

/** Where one parameter comes from, in words (the campaign's page). */
function sourceText(source: SourceInput | { type: string; link?: string; media_id?: string } | undefined): string {
  if (!source) return ''
  if ('type' in source) return `${source.type} ${source.link ?? `uploaded file ${source.media_id}`}`
  if (source.field !== undefined) return `contact's ${source.field}`
  if (source.attribute !== undefined) return `attribute ${source.attribute}`
  return `constant "${source.constant}"`
}
const CAMPAIGN_FIELDS = ['name', 'template_id', 'segment_id', 'sender_id', 'schedule_at'] as const

/**
 * The form field of the parameter a refusal names (`parameters.variables.3.constant: …`): its text field
 * (the source's key or constant), or null when the message names no parameter of the template.
 */
function parameterField(wa: WaTemplate, message: string): string | null {
  const at = /^parameters\.(variables|header|buttons)(?:\.([^.:]+))?[.:]/.exec(message)
  const slot = at && slotsOf(wa).find((s) => s.group === at[1] && (s.group === 'header' || s.key === at[2]))
  return slot ? slotFields(slot).value : null
}

/** A mapping's entries in the template's order (`slots`), then any other (a stored mapping keeps no order of its own). */
function inOrder<T>(mapping: Record<string, T>, slots: Slot[]): [string, T][] {
  const order = slots.map((s) => s.key)
  const rank = (key: string) => (order.includes(key) ? order.indexOf(key) : order.length)
  return Object.entries(mapping).sort(([a], [b]) => rank(a) - rank(b))
}

export function campaignPages(d: Dashboard) {
  const principalOf = (scope: Scope) => ({ accountId: scope.accountId, keyId: 0 })
  /** The campaign of the scope's account, or null (404). */
  const ownCampaign = (scope: Scope, id: number | null) =>
    id === null
      ? Promise.resolve(null)
      : getCampaign(d.sql, principalOf(scope), id).then(
          (detail) => formatTimes(detail, d.tz),
          () => null,
        )

  async function campaignsPage(
    scope: Scope,
    pageParam: string | undefined,
    options: { state?: FormState; status?: number; wa?: WaTemplate | null } = {},
  ) {
    const { session, base } = scope
    const pageNumber = /^\d{1,6}$/.test(pageParam ?? '') ? Math.max(1, Number(pageParam)) : 1
    const [list, templates, segments, senders, waTemplates] = await Promise.all([
      listCampaigns(await scope.read(), principalOf(scope), { limit: PAGE_SIZE, offset: (pageNumber - 1) * PAGE_SIZE }),
      listTemplates(d.sql, scope.accountId, LIST),
      listSegments(d.sql, scope.accountId, LIST),
      listAccountSenders(d.sql, scope.accountId),
      usableTemplates(d.sql, scope.accountId, {}, LIST),
    ])
    // A WhatsApp template chosen (?wa_template=ID): the form maps each of its parameters.
    const wa = options.wa ?? null
    const details = formatTimes(await Promise.all(list.items.map((c) => getCampaign(d.sql, principalOf(scope), c.id))), d.tz)
    const pages = Math.max(1, Math.ceil(list.total / PAGE_SIZE))
    const { state } = options
    const template = fieldProps(state, 'campaign', 'template_id')
    const segment = fieldProps(state, 'campaign', 'segment_id')
    const sender = fieldProps(state, 'campaign', 'sender_id')
    const chosenSender = sender.typed || String((wa ? wa.sender_id : null) ?? senders.find((s) => s.default)?.id ?? '')
    return respond(
      <Layout title={titleOf(scope, 'Campaigns')} session={session}>
        <AccountLink scope={scope} />
        <PagedTable
          columns={[
            { header: 'Campaign', cell: ({ campaign: c }) => <a href={`${base}/campaigns/${c.id}`}>{c.name}</a> },
            { header: 'Status', cell: ({ campaign: c }) => c.status },
            { header: 'Scheduled', cell: ({ campaign: c }) => c.schedule_at ?? '', class: 'nowrap' },
            { header: 'Total', cell: ({ stats }) => stats.total.toLocaleString('en'), class: 'num' },
            { header: 'Sent', cell: ({ stats }) => stats.sent.toLocaleString('en'), class: 'num' },
            { header: 'Delivered', cell: ({ stats }) => stats.delivered.toLocaleString('en'), class: 'num', phone: false },
            { header: 'Read', cell: ({ stats }) => stats.read.toLocaleString('en'), class: 'num', phone: false },
            { header: 'Failed', cell: ({ stats }) => stats.failed.toLocaleString('en'), class: 'num' },
            { header: 'Created', cell: ({ campaign: c }) => c.created_at, class: 'nowrap', phone: false },
          ]}
          rows={details}
          empty="No campaigns yet."
          pager={{ label: 'Pages of campaigns', page: pageNumber, pages, href: (n) => `${base}/campaigns?page=${n}` }}
        />
        <h2>New campaign</h2>
        {waTemplates.items.length > 0 && segments.items.length > 0 ? (
          <form class="stack card" method="get" action={`${base}/campaigns`}>
            <div class="field">
              <label>
                WhatsApp template (its parameters filled per contact)
                <select id="campaign-wa-template" name="wa_template">
                  <option value="">None: an account template</option>
                  {waTemplates.items.map((t) => (
                    <option value={String(t.id)} selected={wa?.id === t.id}>
                      {`${t.name} (${t.language}, ${t.status})`}
                    </option>
                  ))}
                </select>
              </label>
            </div>
            <button class="secondary" type="submit">
              Choose template
            </button>
          </form>
        ) : null}
        {(templates.items.length === 0 && !wa) || segments.items.length === 0 ? (
          <p>
            A campaign needs a template and a segment: <a href={`${base}/templates`}>create them first</a>.
          </p>
        ) : (
          <form class="stack card" method="post" action={`${base}/campaigns`}>
            <Csrf session={session} />
            <FormToken session={session} />
            <FormProblem state={state} form="campaign" />
            <Field state={state} form="campaign" name="name" label="Name" required maxlength={MAX_NAME_CHARS} />
            {wa ? (
              <fieldset>
                <legend>{`WhatsApp template ${wa.name} (${wa.language}): where each parameter comes from`}</legend>
                <input type="hidden" name="template_id" value={String(wa.id)} />
                {slotsOf(wa).length === 0 ? <p>It has no parameters.</p> : null}
                {slotsOf(wa).map((slot) => {
                  const names = slotFields(slot)
                  const from = fieldProps(state, 'campaign', names.from)
                  const value = fieldProps(state, 'campaign', names.value)
                  if (slot.media) {
                    // A media header: one link or uploaded file for the whole campaign, no source to choose.
                    return (
                      <div class="field">
                        <label>
                          {slot.label}
                          <input
                            {...value.attributes}
                            type="text"
                            inputmode="url"
                            required
                            value={value.typed ?? ''}
                            maxlength={2000}
                            placeholder="https://… or med_…"
                          />
                        </label>
                        <FormError state={state} form="campaign" name={names.value} />
                      </div>
                    )
                  }
                  return (
                    <div class="field parameter">
                      <label>
                        {slot.label + (slot.example ? ` (e.g. ${slot.example})` : '')}
                        <select {...from.attributes}>
                          {SOURCE_KINDS.map((k) => (
                            <option value={k} selected={from.typed === k}>
                              {SOURCE_LABELS[k]}
                            </option>
                          ))}
                        </select>
                      </label>
                      <label>
                        {`${slot.label}: attribute key or constant text`}
                        <input {...value.attributes} value={value.typed ?? ''} maxlength={1024} />
                      </label>
                      <FormError state={state} form="campaign" name={names.value} />
                    </div>
                  )
                })}
              </fieldset>
            ) : (
              <div class="field">
                <label>
                  Template
                  <select {...template.attributes} required>
                    {templates.items.map((t) => (
                      <option value={String(t.id)} selected={template.typed === String(t.id)}>
                        {t.name}
                      </option>
                    ))}
                  </select>
                </label>
                <FormError state={state} form="campaign" name="template_id" />
              </div>
            )}
            <div class="field">
              <label>
                Segment
                <select {...segment.attributes} required>
                  {segments.items.map((s) => (
                    <option value={String(s.id)} selected={segment.typed === String(s.id)}>
                      {s.name} ({counted(s.contact_count, 'contact')})
                    </option>
                  ))}
                </select>
              </label>
              <FormError state={state} form="campaign" name="segment_id" />
            </div>
            {senders.length > 0 ? (
              <div class="field">
                <label>
                  Sender
                  <select {...sender.attributes} required>
                    {senders.map((s) => (
                      <option value={String(s.id)} selected={chosenSender === String(s.id)}>
                        {senderChoice(s)}
                      </option>
                    ))}
                  </select>
                </label>
                <FormError state={state} form="campaign" name="sender_id" />
              </div>
            ) : null}
            <Field
              state={state}
              form="campaign"
              name="schedule_at"
              label={`Send at (optional, YYYY-MM-DD HH:MM:SS, ${d.tz})`}
              placeholder="2025-03-01 09:00:00"
              maxlength={19}
            />
            <button type="submit">Create campaign</button>
          </form>
        )}
      </Layout>,
      options.status ?? 200,
    )
  }

  async function campaignPage(scope: Scope, detail: CampaignDetail, options: { error?: string; status?: number } = {}) {
    const { session, base } = scope
    const c = detail.campaign
    const progress = progressOf(detail)
    const [templates, segments] = await Promise.all([
      listTemplates(d.sql, scope.accountId, LIST),
      listSegments(d.sql, scope.accountId, LIST),
    ])
    const template = templates.items.find((t) => t.id === c.template_id)
    // A WhatsApp template's campaign (its parameters mapped): the template, its parameters in its own order.
    const wa = c.parameters && !template ? await getTemplateRow(d.sql, c.template_id) : null
    const segment = segments.items.find((s) => s.id === c.segment_id)
    const [sender] = c.sender_id === null ? [] : await senderNames(d.sql, [c.sender_id])
    // Before Run: what it would do now (messages/admission.ts's rules), nothing taken.
    const quote = c.status === 'draft' ? await quoteCampaign(d.deps, scope.accountId, c.id) : null
    const action = (path: string, label: string, secondary = false) => (
      <form method="post" action={`${base}/campaigns/${c.id}/${path}`}>
        <Csrf session={session} />
        <button class={secondary ? 'secondary' : undefined} type="submit">
          {label}
        </button>
      </form>
    )
    const future = c.schedule_at !== null && c.status === 'draft'
    return respond(
      <Layout title={titleOf(scope, `Campaign ${c.name}`)} session={session} error={options.error}>
        <AccountLink scope={scope} />
        <dl class="facts card">
          <dt>Status</dt>
          <dd id="campaign-status">{c.status}</dd>
          <dt>Template</dt>
          <dd>
            {template ? (
              <a href={`${base}/templates/${template.id}`}>{template.name}</a>
            ) : wa ? (
              <a href={`${base}/whatsapp-templates/${wa.id}`}>{`${wa.name} (${wa.language}, WhatsApp)`}</a>
            ) : (
              `#${c.template_id}`
            )}
          </dd>
          {c.parameters ? (
            <>
              <dt>Parameters</dt>
              <dd>
                <ul id="campaign-parameters">
                  {c.parameters.header ? <li>{`header: ${sourceText(c.parameters.header)}`}</li> : null}
                  {inOrder(c.parameters.variables ?? {}, wa ? slotsOf(wa).filter((s) => s.group === 'variables') : []).map(([k, v]) => (
                    <li>{`{{${k}}}: ${sourceText(v)}`}</li>
                  ))}
                  {Object.entries(c.parameters.buttons ?? {}).map(([k, v]) => (
                    <li>{`button ${Number(k) + 1}: ${sourceText(v)}`}</li>
                  ))}
                </ul>
              </dd>
            </>
          ) : null}
          <dt>Segment</dt>
          <dd>{segment ? `${segment.name} (tag ${segment.tag})` : `#${c.segment_id}`}</dd>
          <dt>Sender</dt>
          <dd id="campaign-sender">{senderLabel(sender, c.sender_id)}</dd>
          <dt>Scheduled</dt>
          <dd>{c.schedule_at ?? 'not scheduled'}</dd>
          <dt>Created</dt>
          <dd>{c.created_at}</dd>
          <dt>Started</dt>
          <dd>{c.started_at ?? 'not yet'}</dd>
          <dt>Finished</dt>
          <dd>{c.finished_at ?? 'not yet'}</dd>
          {c.pause_reason ? (
            <>
              <dt>Paused because</dt>
              <dd>{c.pause_reason}</dd>
            </>
          ) : null}
        </dl>
        {quote ? <QuoteCard quote={quote} mapped={c.parameters !== null} /> : null}
        <div class="actions">
          {c.status === 'draft' ? action('run', future ? 'Run at its schedule' : 'Run now') : null}
          {c.status === 'paused' ? action('resume', 'Resume') : null}
          {c.status !== 'sent' && c.status !== 'cancelled' ? action('cancel', 'Cancel campaign', true) : null}
        </div>
        <h2>Progress</h2>
        <div id="campaign-progress" class="card" data-progress-url={`${base}/campaigns/${c.id}/progress`}>
          <label>
            Handled (sent, failed or opted out) of all recipients
            <progress id="progress-bar" max={Math.max(progress.stats.total, 1)} value={progress.stats.total - progress.pending}>
              {`${progress.stats.total - progress.pending} of ${progress.stats.total}`}
            </progress>
          </label>
          <div class="stats counts">
            {COUNTS.map((name) => (
              <div class="card stat">
                <div class="value" id={`count-${name}`}>
                  {(name === 'pending' ? progress.pending : progress.stats[name]).toLocaleString('en')}
                </div>
                <div class="label">
                  {name === 'window_closed'
                    ? 'Skipped: window closed'
                    : name === 'missing_values'
                      ? 'Skipped: value missing'
                      : name === 'opted_out'
                        ? 'Opted out'
                        : name[0]!.toUpperCase() + name.slice(1)}
                </div>
              </div>
            ))}
          </div>
        </div>
        <p>
          <a href={`${base}/campaigns`}>Back to the campaigns</a>
        </p>
        <script src={CAMPAIGN_SCRIPT} defer></script>
      </Layout>,
      options.status ?? 200,
    )
  }

  const app = pageRoutes()
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    // Each action on a campaign, its audit entry, and what the page says after it.
    const changes = [
      [
        'run',
        runCampaign,
        'campaign run',
        (c: CampaignDetail['campaign']) =>
          c.status === 'scheduled' ? `Campaign ${c.name} will run at ${c.schedule_at}.` : `Campaign ${c.name} started sending.`,
      ],
      ['resume', resumeCampaign, 'campaign resumed', (c: CampaignDetail['campaign']) => `Campaign ${c.name} resumed.`],
      [
        'cancel',
        cancelCampaign,
        'campaign cancelled',
        (c: CampaignDetail['campaign']) => `Campaign ${c.name} cancelled: no more of its messages are sent.`,
      ],
    ] as const

    app
      .get(`${prefix}/campaigns`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const q = query as { page?: string; wa_template?: string }
        // A WhatsApp template the account may not use is as unknown as none (the form falls back to account templates).
        const waId = idParam(q.wa_template ?? '')
        const wa = waId === null ? null : await usableTemplate(d.sql, scope.accountId, waId)
        return campaignsPage(scope, q.page, { wa })
      })
      .post(`${prefix}/campaigns`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const scheduleAt = field(body, 'schedule_at').trim()
        const chosen = field(body, 'sender_id').trim()
        return orError(
          async () => {
            // Read before the form's transaction: the sender chosen among the account's (a disabled or
            // foreign one is refused at its field), or the account's default without a choice.
            const templateId = Number(idParam(field(body, 'template_id')) ?? 0)
            const wa = await usableTemplate(d.deps.sql, scope.accountId, templateId)
            const sender = await d.deps.senders.forSend(
              scope.accountId,
              chosen === '' ? await templateSenderOf(d.deps.sql, scope.accountId, templateId) : chosen,
              'sender_id',
            )
            return d.once(scope.session, body, `${scope.base}/campaigns`, async (tx) => {
              const created = await createCampaign(
                tx,
                d.deps.clock,
                { accountId: scope.accountId, keyId: null },
                {
                  name: field(body, 'name'),
                  template_id: templateId,
                  ...(wa ? { parameters: parametersFromForm(wa, (name) => field(body, name)) } : {}),
                  segment_id: Number(idParam(field(body, 'segment_id')) ?? 0),
                  schedule_at: scheduleAt === '' ? undefined : requireTimestamp(scheduleAt, 'schedule_at', d.tz),
                },
                sender.id,
                { uploadedLink: (id) => linkStart(d.deps.config.publicBaseUrl, id) },
              )
              const campaign = formatTimes(created, d.tz)
              await audit(tx, {
                user: scope.session.user,
                address: d.addressOf(request, server),
                accountId: scope.accountId,
                action: 'campaign created',
                detail: { campaign_id: campaign.id, name: campaign.name, schedule_at: campaign.schedule_at, sender_id: sender.id },
              })
              return {
                to: `${scope.base}/campaigns/${campaign.id}`,
                notice: `Campaign ${campaign.name} created as a draft: nothing is sent until you run it.`,
              }
            })
          },
          async (message, status) => {
            const wa = await usableTemplate(d.sql, scope.accountId, Number(idParam(field(body, 'template_id')) ?? 0))
            const names = wa ? slotsOf(wa).flatMap((s) => Object.values(slotFields(s))) : []
            const state = formState('campaign', body, [...CAMPAIGN_FIELDS, ...names], message)
            // A parameter's problem is shown at its field, which takes the focus.
            const at = wa ? parameterField(wa, message) : null
            if (at) state.problem = { field: at, message }
            return campaignsPage(scope, undefined, {
              state,
              status,
              wa,
            })
          },
        )
      })
      .get(`${prefix}/campaigns/:campaign`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const detail = await ownCampaign(scope, idParam(params.campaign))
        return detail ? campaignPage(scope, detail) : notFound(scope.session)
      })
      .get(`${prefix}/campaigns/:campaign/progress`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const detail = await ownCampaign(scope, idParam(params.campaign))
        const headers = { ...PAGE_HEADERS, 'content-type': 'application/json' }
        if (!detail) return new Response(JSON.stringify({ error: 'not found' }), { status: 404, headers })
        return new Response(JSON.stringify(progressOf(detail)), { headers })
      })
    for (const [path, change, auditAction, noticeOf] of changes) {
      app.post(`${prefix}/campaigns/:campaign/${path}`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const detail = await ownCampaign(scope, idParam(params.campaign))
        if (!detail) return notFound(scope.session)
        const id = detail.campaign.id
        return orError(
          async () => {
            await change(d.deps, id)
            await audit(d.sql, {
              user: scope.session.user,
              address: d.addressOf(request, server),
              accountId: scope.accountId,
              action: auditAction,
              detail: { campaign_id: id },
            })
            const now = (await ownCampaign(scope, id))?.campaign ?? detail.campaign
            return d.finish(scope.session, { to: `${scope.base}/campaigns/${id}`, notice: noticeOf(now) })
          },
          async (error, status) => campaignPage(scope, (await ownCampaign(scope, id)) ?? detail, { error, status }),
        )
      })
    }
  }
  return app
}
