// WhatsApp templates in the dashboard (issue 30). The operator: a sender's templates on its page (name,
// language, category, status with its reason, quality) with a "Sync templates" button, a page for each
// template (its parameters, its components, a WhatsApp-like preview at phone width, the history of its
// status, category, quality and definition) and a "New template" form taking the Cloud API's template
// JSON as Meta documents it (submission.ts checks it, submits it and stores it; a 422 is shown at the
// field). A member: the templates its account may use (catalog.usableTemplates), read-only, with the
// parameters a send must fill, and each one's page; another account's template is 404.

import { h, Fragment, type Child } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, counted, field, notFound, respond, pageRoutes } from '../../dashboard/context'
import { FormError, PagedTable, fieldProps, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { AccountLink, idParam, titleOf, viewScope } from '../accounts/scope'
import { formatTimestamp } from '../../lib/time'
import { getTemplateRow, templateHistory, templatesOfSender, usableTemplates, usableTemplate, type WaTemplate } from './catalog'
import { componentOf, parametersOf, type TemplateParameters } from './parameters'
import { createSenderTemplate, syncTemplates } from './submission'
import { audit } from '../users/service'

const OPERATOR = 'operator' as const
/** The longest template JSON the form takes (Meta's own limits keep a real one far below it). */
const MAX_DEFINITION_CHARS = 20_000
const LIST = { limit: 200, offset: 0 }

/** The example the "New template" form starts with: a positional utility template. */
const EXAMPLE_DEFINITION = JSON.stringify(
  {
    name: 'invoice_due',
    language: 'en_US',
    category: 'UTILITY',
    parameter_format: 'POSITIONAL',
    components: [
      { type: 'HEADER', format: 'TEXT', text: 'Invoice {{1}}', example: { header_text: ['INV-1001'] } },
      {
        type: 'BODY',
        text: 'Hello {{1}}, invoice {{2}} of {{3}} is due on {{4}}. Thank you.',
        example: { body_text: [['Budi', 'INV-1001', 'Rp 1.250.000', '5 December']] },
      },
      { type: 'FOOTER', text: 'Reply STOP to opt out' },
      {
        type: 'BUTTONS',
        buttons: [
          { type: 'URL', text: 'Pay now', url: 'https://pay.example.com/i/{{1}}', example: ['https://pay.example.com/i/INV-1001'] },
        ],
      },
    ],
  },
  null,
  2,
)

const asText = (v: unknown) => (typeof v === 'string' ? v : '')
const asList = (v: unknown): Record<string, unknown>[] => (Array.isArray(v) ? v.filter((x) => x !== null && typeof x === 'object') : [])

/** A status as a word, with Meta's reason when there is one; not approved in the warning colour. */
export function TemplateStatus(props: { template: Pick<WaTemplate, 'status' | 'reason'> }) {
  const { status, reason } = props.template
  return (
    <>
      <span class={status === 'approved' ? 'status' : status === 'pending' ? undefined : 'status status-failed'}>{status}</span>
      {reason ? <span class="muted"> ({reason})</span> : null}
    </>
  )
}

/** A text with its `{{n}}` / `{{name}}` parameters marked, as a send fills them. */
function Marked(props: { text: string }) {
  const parts = props.text.split(/(\{\{\s*[A-Za-z0-9_]+\s*\}\})/g)
  return <>{parts.map((part, i) => (i % 2 === 1 ? <mark class="wa-param">{part}</mark> : part))}</>
}

/** What a send must fill, as a short list; "nothing" for a template without parameters. */
export function ParameterList(props: { parameters: TemplateParameters }) {
  const { body, header, buttons } = props.parameters
  const example = (e: string | undefined) => (e === undefined ? null : <span class="muted"> (e.g. {e})</span>)
  const items: Child[] = [
    ...body.map((p) => (
      <li>
        <code>variables.{p.key}</code>
        {example(p.example)}
      </li>
    )),
    header ? (
      <li>
        <code>header</code>: {header.type === 'text' ? `text {{${header.key}}}` : `${header.type} link`}
        {header.type === 'text' ? example(header.example) : null}
      </li>
    ) : null,
    ...buttons.map((b) => (
      <li>
        <code>buttons[{b.index}]</code>:{' '}
        {b.otp_type ? `one-time code (${b.otp_type})` : b.sub_type === 'url' ? 'URL suffix' : 'code to copy'}
        {example(b.example)}
      </li>
    )),
  ].filter((x) => x !== null)
  return items.length === 0 ? <span class="muted">nothing</span> : <ul class="plain">{items}</ul>
}

/** A WhatsApp-like preview of the template: header, body with its parameters marked, footer, buttons. */
export function TemplatePreview(props: { template: Pick<WaTemplate, 'components' | 'name'> }) {
  const components = Array.isArray(props.template.components) ? props.template.components : []
  const header = componentOf(components, 'HEADER')
  const body = componentOf(components, 'BODY')
  const footer = componentOf(components, 'FOOTER')
  const buttons = asList(componentOf(components, 'BUTTONS')?.buttons)
  const format = asText(header?.format).toUpperCase()
  return (
    <figure class="wa-phone" aria-label={`Preview of ${props.template.name}`}>
      <div class="wa-bubble">
        {header ? (
          format === 'TEXT' || format === '' ? (
            <p class="wa-header">
              <Marked text={asText(header.text)} />
            </p>
          ) : (
            <p class="wa-media">{format.toLowerCase()}</p>
          )
        ) : null}
        {body ? (
          <p class="wa-body">
            <Marked text={asText(body.text)} />
          </p>
        ) : null}
        {footer ? <p class="wa-footer">{asText(footer.text)}</p> : null}
      </div>
      {buttons.length > 0 ? (
        <ul class="wa-buttons">
          {buttons.map((b) => (
            <li>
              {asText(b.text) || asText(b.type).toLowerCase().replace(/_/g, ' ')}
              {asText(b.url) ? (
                <span class="muted small">
                  {' '}
                  <Marked text={asText(b.url)} />
                </span>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      <figcaption class="small">Parameters are marked: a send fills them.</figcaption>
    </figure>
  )
}

/** The operator's part of a sender's page: its templates, the sync button and the way to a new one. */
export function SenderTemplates(props: { session: Session; senderId: number; templates: WaTemplate[] }) {
  const { session, senderId, templates } = props
  const base = `/dashboard/senders/${senderId}/templates`
  return (
    <section aria-labelledby="templates-title">
      <h2 id="templates-title">WhatsApp templates</h2>
      <p class="muted">
        The approved templates this sender may start a conversation with: only <code>approved</code> sends. Sync reads them from the
        provider (status, category and quality as it says now).
      </p>
      <PagedTable
        columns={[
          { header: 'Template', cell: (t) => <a href={`${base}/${t.id}`}>{t.name}</a> },
          { header: 'Language', cell: (t) => t.language },
          { header: 'Category', cell: (t) => t.category },
          { header: 'Status', cell: (t) => <TemplateStatus template={t} /> },
          { header: 'Quality', cell: (t) => t.quality },
        ]}
        rows={templates}
        empty="No WhatsApp templates yet: sync them from the provider, or create one."
      />
      <div class="actions">
        <form method="post" action={`${base}/sync`}>
          <Csrf session={session} />
          <button type="submit">Sync templates</button>
        </form>
        <a href={`${base}/new`}>New template</a>
      </div>
    </section>
  )
}

export function waTemplatePages(d: Dashboard) {
  const tz = d.tz
  const when = (date: Date) => formatTimestamp(date, tz)!

  /** One template's page: facts, parameters, preview, components, history. */
  async function templatePage(
    session: Session,
    template: WaTemplate,
    frame: { title: string; back: Child; history: boolean; before?: Child },
  ) {
    const history = frame.history ? await templateHistory(d.sql, template.id) : []
    return respond(
      <Layout title={frame.title} session={session}>
        {frame.before}
        <p>{frame.back}</p>
        <div class="wa-template">
          <dl class="facts card">
            <dt>Id</dt>
            <dd>
              <code>{template.id}</code> <span class="muted">(a send's template_id)</span>
            </dd>
            <dt>Language</dt>
            <dd>{template.language}</dd>
            <dt>Category</dt>
            <dd>{template.category}</dd>
            <dt>Status</dt>
            <dd id="template-status">
              <TemplateStatus template={template} />
            </dd>
            <dt>Quality</dt>
            <dd>{template.quality}</dd>
            <dt>Parameters</dt>
            <dd>
              {template.parameter_format}: <ParameterList parameters={parametersOf(template)} />
            </dd>
            <dt>Provider</dt>
            <dd>
              {template.provider}
              {template.provider_ref ? (
                <>
                  {' '}
                  <code>{template.provider_ref}</code>
                </>
              ) : null}
            </dd>
            <dt>Updated</dt>
            <dd>{when(template.updated_at)}</dd>
          </dl>
          <section aria-labelledby="preview-title">
            <h2 id="preview-title">Preview</h2>
            <TemplatePreview template={template} />
          </section>
        </div>
        {frame.history ? (
          <section aria-labelledby="history-title">
            <h2 id="history-title">History</h2>
            <PagedTable
              columns={[
                { header: 'When', cell: (r) => when(r.happened_at), class: 'nowrap' },
                { header: 'What', cell: (r) => r.field },
                { header: 'From', cell: (r) => r.old_value ?? '-' },
                { header: 'To', cell: (r) => r.new_value ?? '-' },
                { header: 'Reason', cell: (r) => r.reason ?? '' },
                { header: 'Said by', cell: (r) => r.source },
              ]}
              rows={history}
              empty="No changes recorded."
            />
          </section>
        ) : null}
        <details>
          <summary>Components (the Cloud API's JSON)</summary>
          <pre class="pre wrap">{JSON.stringify(template.components, null, 2)}</pre>
        </details>
      </Layout>,
    )
  }

  /** The "New template" page of a sender; `state`: the form sent back with its problem. */
  function newTemplatePage(session: Session, senderId: number, state?: FormState, status = 200) {
    const form = 'template'
    const { typed, attributes } = fieldProps(state, form, 'definition')
    return respond(
      <Layout title="New WhatsApp template" session={session}>
        <p>
          <a href={`/dashboard/senders/${senderId}`}>Back to the sender</a>
        </p>
        <p class="muted">
          The template in the Cloud API's own JSON, as Meta documents it: <code>name</code> (lowercase letters, digits, underscores),{' '}
          <code>language</code>, <code>category</code> (MARKETING, UTILITY or AUTHENTICATION), <code>parameter_format</code> (POSITIONAL:{' '}
          <code>{'{{1}}'}</code>, <code>{'{{2}}'}</code>…; NAMED: <code>{'{{order_id}}'}</code>) and <code>components</code> (HEADER, BODY,
          FOOTER, BUTTONS, each with its example). It is checked, then submitted to the provider for approval; it sends once approved.
        </p>
        <form class="stack card wa-definition" method="post" action={`/dashboard/senders/${senderId}/templates`}>
          <Csrf session={session} />
          <div class="field">
            <label>
              Template JSON
              <textarea {...attributes} rows={22} required maxlength={MAX_DEFINITION_CHARS} spellcheck="false" class="code">
                {typed ?? EXAMPLE_DEFINITION}
              </textarea>
            </label>
            <FormError state={state} form={form} name="definition" />
          </div>
          <button type="submit">Create and submit template</button>
        </form>
      </Layout>,
      status,
    )
  }

  /** A sender id of the path (0: the deployment's default sender), or null (404). */
  const senderParam = (param: string) => idParam(param)
  const belongs = (template: WaTemplate | null, senderId: number) => template !== null && (template.sender_id ?? 0) === senderId

  const app = pageRoutes()
    .post('/senders/:sender/templates/sync', ({ request, body, params }) =>
      d.formAction(
        request,
        body,
        OPERATOR,
        async (session) => {
          const id = senderParam(params.sender)
          if (id === null) return notFound(session)
          const r = await syncTemplates(d.deps, id)
          const { sender_id, listed, created, changed, unchanged, gone } = r
          await audit(d.sql, {
            user: session.user,
            address: d.addressOf(request),
            accountId: null,
            action: 'templates synced',
            detail: { sender_id, listed, created, changed, unchanged, gone, skipped: r.skipped.length },
          })
          const skipped = r.skipped.length
            ? `; ${counted(r.skipped.length, 'skipped')} (${r.skipped.map((s) => `${s.name}: ${s.why}`).join('; ')})`
            : ''
          return d.finish(session, {
            to: id === 0 ? '/dashboard/senders' : `/dashboard/senders/${id}`,
            notice:
              `Templates synced: ${counted(r.listed, 'template')} listed by ${r.provider}, ${r.created} new, ${r.changed} changed, ` +
              `${r.unchanged} unchanged, ${r.gone} gone${skipped}.`,
          })
        },
        (message, status, session) => {
          const id = senderParam(params.sender)
          if (status === 404 || id === null) return notFound(session)
          return d.finish(session, {
            to: id === 0 ? '/dashboard/senders' : `/dashboard/senders/${id}`,
            error: `Templates not synced: ${message}`,
          })
        },
      ),
    )
    .get('/senders/:sender/templates/new', async ({ request, params }) => {
      const session = await d.view(request, OPERATOR)
      if (session instanceof Response) return session
      const id = senderParam(params.sender)
      return id === null || id === 0 ? notFound(session) : newTemplatePage(session, id)
    })
    .post('/senders/:sender/templates', ({ request, body, params }) =>
      d.formAction(
        request,
        body,
        OPERATOR,
        async (session) => {
          const id = senderParam(params.sender)
          if (id === null || id === 0) return notFound(session)
          const text = field(body, 'definition')
          let definition: unknown
          try {
            definition = JSON.parse(text)
          } catch {
            return newTemplatePage(session, id, stateOf(text, 'definition: not JSON: paste the template as the Cloud API takes it'), 422)
          }
          if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) {
            return newTemplatePage(
              session,
              id,
              stateOf(text, 'definition: a JSON object with name, language, category and components'),
              422,
            )
          }
          const created = await createSenderTemplate(d.deps, id, definition as Record<string, unknown>)
          await audit(d.sql, {
            user: session.user,
            address: d.addressOf(request),
            accountId: null,
            action: 'template created',
            detail: { sender_id: id, template_id: created.id, name: created.name, language: created.language, status: created.status },
          })
          return d.finish(session, {
            to: `/dashboard/senders/${id}/templates/${created.id}`,
            notice: `Template ${created.name} (${created.language}) created: ${created.status}.`,
          })
        },
        (message, status, session) => {
          const id = senderParam(params.sender)
          if (status === 404 || id === null) return notFound(session)
          return newTemplatePage(session, id, stateOf(field(body, 'definition'), message), status)
        },
      ),
    )
    .get('/senders/:sender/templates/:template', async ({ request, params }) => {
      const session = await d.view(request, OPERATOR)
      if (session instanceof Response) return session
      const senderId = senderParam(params.sender)
      const templateId = idParam(params.template)
      if (senderId === null || templateId === null) return notFound(session)
      const template = await getTemplateRow(d.sql, templateId)
      if (!belongs(template, senderId)) return notFound(session)
      return templatePage(session, template!, {
        title: `WhatsApp template ${template!.name}`,
        back:
          senderId === 0 ? <a href="/dashboard/senders">All senders</a> : <a href={`/dashboard/senders/${senderId}`}>Back to the sender</a>,
        history: true,
      })
    })
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    app
      .get(`${prefix}/whatsapp-templates`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const list = await usableTemplates(await scope.read(), scope.accountId, {}, LIST)
        return respond(
          <Layout title={titleOf(scope, 'WhatsApp templates')} session={scope.session}>
            <AccountLink scope={scope} />
            <p class="muted">
              The WhatsApp templates this account may send (its senders', or the service's own number's): a send names one by its id (
              <code>template_id</code>) and fills its parameters (<code>variables</code>, <code>header</code>, <code>buttons</code>). Only{' '}
              <code>approved</code> ones send.
            </p>
            <PagedTable
              columns={[
                { header: 'Template', cell: (t) => <a href={`${scope.base}/whatsapp-templates/${t.id}`}>{t.name}</a> },
                { header: 'Id', cell: (t) => <code>{t.id}</code> },
                { header: 'Language', cell: (t) => t.language },
                { header: 'Category', cell: (t) => t.category },
                { header: 'Status', cell: (t) => <TemplateStatus template={t} /> },
                { header: 'Parameters', cell: (t) => <ParameterList parameters={parametersOf(t)} /> },
              ]}
              rows={list.items}
              empty="No WhatsApp templates yet: the service's operator syncs or creates them for this account's senders."
            />
          </Layout>,
        )
      })
      .get(`${prefix}/whatsapp-templates/:template`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const id = idParam(params.template)
        const template = id === null ? null : await usableTemplate(d.sql, scope.accountId, id)
        if (!template) return notFound(scope.session)
        return templatePage(scope.session, template, {
          title: titleOf(scope, `WhatsApp template ${template.name}`),
          back: <a href={`${scope.base}/whatsapp-templates`}>All WhatsApp templates</a>,
          history: false,
          before: <AccountLink scope={scope} />,
        })
      })
  }
  return app
}

/** The "New template" form sent back: what was typed and the problem, shown at the JSON field. */
function stateOf(text: string, message: string): FormState {
  return { form: 'template', values: { definition: text }, problem: { field: 'definition', message } }
}

/** The templates of a sender for its page (the sender page reads them through this). */
export const senderTemplatesOf = (d: Dashboard, senderId: number) => templatesOfSender(d.sql, senderId)
