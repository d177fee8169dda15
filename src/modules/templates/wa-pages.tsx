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
import { FormError, FormProblem, PagedTable, fieldProps, type FormState } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { AccountLink, idParam, titleOf, viewScope } from '../accounts/scope'
import { formatTimestamp } from '../../lib/time'
import { getTemplateRow, templateHistory, templatesOfSender, usableTemplates, usableTemplate, type WaTemplate } from './catalog'
import { componentOf, parametersOf, type TemplateParameters } from './parameters'
import { createSenderTemplate, syncTemplates } from './submission'
import { checkDefinition } from './components'
import {
  BUTTON_TYPES,
  HEADER_FORMATS,
  MAX_BUTTONS,
  OTP_TYPES,
  buttonCount,
  buttonFields,
  definitionFromFields,
  editorNames,
  fieldOfProblem,
} from './editor'
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

const EDITOR = 'editor'
const EDITOR_SCRIPT = '/dashboard/assets/template-editor.js'

/** What the editor starts with: the example's parts (a utility template with a text header, a body, a footer and a URL button). */
const EDITOR_START: Record<string, string> = {
  name: 'invoice_due',
  language: 'en_US',
  category: 'UTILITY',
  parameter_format: 'POSITIONAL',
  header_format: 'TEXT',
  header_text: 'Invoice {{1}}',
  header_example: 'INV-1001',
  body_text: 'Hello {{1}}, invoice {{2}} of {{3}} is due on {{4}}. Thank you.',
  body_examples: 'Budi\nINV-1001\nRp 1.250.000\n5 December',
  footer_text: 'Reply STOP to opt out',
  buttons: '1',
  button_type_0: 'URL',
  button_text_0: 'Pay now',
  button_url_0: 'https://pay.example.com/i/{{1}}',
  button_example_0: 'https://pay.example.com/i/INV-1001',
}

const BUTTON_LABELS: Record<(typeof BUTTON_TYPES)[number], string> = {
  QUICK_REPLY: 'Quick reply',
  URL: 'Visit a URL',
  PHONE_NUMBER: 'Call a phone number',
  COPY_CODE: 'Copy a code',
  OTP: 'One-time password (authentication)',
}

/** A labelled input or textarea of the editor, with what was typed and its problem (aria-describedby), as Field does. */
function EditorField(props: {
  state: FormState | undefined
  name: string
  label: string
  value: string
  rows?: number
  [a: string]: unknown
}) {
  const { state, name, label, value, rows, children: _, ...rest } = props
  const { attributes } = fieldProps(state, EDITOR, name)
  return (
    <div class="field" data-field={name}>
      <label>
        {label}
        {rows === undefined ? (
          <input {...rest} {...attributes} value={value} />
        ) : (
          <textarea {...rest} {...attributes} rows={rows}>
            {value}
          </textarea>
        )}
      </label>
      <FormError state={state} form={EDITOR} name={name} />
    </div>
  )
}

/** A labelled select of the editor. */
function EditorSelect(props: {
  state: FormState | undefined
  name: string
  label: string
  value: string
  options: readonly (readonly [string, string])[]
}) {
  const { state, name, label, value, options } = props
  const { attributes } = fieldProps(state, EDITOR, name)
  return (
    <div class="field" data-field={name}>
      <label>
        {label}
        <select {...attributes}>
          {options.map(([v, text]) => (
            <option value={v} selected={v === value}>
              {text}
            </option>
          ))}
        </select>
      </label>
      <FormError state={state} form={EDITOR} name={name} />
    </div>
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

  /**
   * The "New template" page of a sender: the field-by-field editor with its preview (assets/
   * template-editor.js updates it as the operator types; without script, "Preview" shows it), and the
   * Cloud API's JSON as the advanced way. `editor`: the editor's form sent back (its values, its
   * problem at the field it names); `json`: the JSON form sent back.
   */
  function newTemplatePage(session: Session, senderId: number, forms: { editor?: FormState; json?: FormState } = {}, status = 200) {
    const { editor, json } = forms
    const form = 'template'
    const { typed, attributes } = fieldProps(json, form, 'definition')
    const action = `/dashboard/senders/${senderId}/templates`
    const values = editor?.values ?? { ...EDITOR_START }
    const read = (name: string) => values[name] ?? ''
    const count = buttonCount(read)
    const definition = definitionFromFields(read)
    return respond(
      <Layout title="New WhatsApp template" session={session}>
        <p>
          <a href={`/dashboard/senders/${senderId}`}>Back to the sender</a>
        </p>
        <p class="muted">
          Fill in its parts: they make the Cloud API's template JSON, checked with Meta's rules, then submitted to the provider for
          approval; it sends once approved. Parameters are <code>{'{{1}}'}</code>, <code>{'{{2}}'}</code>… (positional) or{' '}
          <code>{'{{order_id}}'}</code> (named), each with an example.
        </p>
        <div class="wa-template">
          <form class="stack card wa-editor" id="template-editor" method="post" action={action}>
            <Csrf session={session} />
            <input type="hidden" name="mode" value="fields" />
            <input type="hidden" name="buttons" value={String(count)} />
            <FormProblem state={editor} form={EDITOR} />
            <EditorField state={editor} name="name" label="Name (lowercase letters, digits, underscores)" value={read('name')} required />
            <EditorField state={editor} name="language" label="Language (en, en_US, id, pt_BR…)" value={read('language')} required />
            <EditorSelect
              state={editor}
              name="category"
              label="Category"
              value={read('category')}
              options={[
                ['UTILITY', 'Utility'],
                ['MARKETING', 'Marketing'],
                ['AUTHENTICATION', 'Authentication'],
              ]}
            />
            <EditorSelect
              state={editor}
              name="parameter_format"
              label="Parameters"
              value={read('parameter_format')}
              options={[
                ['POSITIONAL', 'Positional: {{1}}, {{2}}…'],
                ['NAMED', 'Named: {{order_id}}'],
              ]}
            />
            <fieldset>
              <legend>Header</legend>
              <EditorSelect
                state={editor}
                name="header_format"
                label="Header kind"
                value={read('header_format')}
                options={HEADER_FORMATS.map((f) => [f, f === '' ? 'None' : f.charAt(0) + f.slice(1).toLowerCase()])}
              />
              <EditorField
                state={editor}
                name="header_text"
                label="Header text (at most one parameter)"
                value={read('header_text')}
                maxlength={60}
              />
              <EditorField
                state={editor}
                name="header_example"
                label="Header example: its parameter's, or the media's upload handle"
                value={read('header_example')}
              />
            </fieldset>
            <fieldset>
              <legend>Body</legend>
              <EditorField state={editor} name="body_text" label="Body text" value={read('body_text')} rows={4} maxlength={1024} />
              <EditorField
                state={editor}
                name="body_examples"
                label="Examples, one a line, in the order the parameters first appear"
                value={read('body_examples')}
                rows={3}
              />
            </fieldset>
            <fieldset>
              <legend>Footer</legend>
              <EditorField
                state={editor}
                name="footer_text"
                label="Footer text (optional, no parameters)"
                value={read('footer_text')}
                maxlength={60}
              />
            </fieldset>
            <fieldset id="template-buttons">
              <legend>Buttons</legend>
              <FormError state={editor} form={EDITOR} name="buttons" />
              {count === 0 ? <p class="muted">No buttons.</p> : null}
              {Array.from({ length: count }, (_, i) => {
                const f = buttonFields(i)
                return (
                  <fieldset class="wa-button-row">
                    <legend>{`Button ${i + 1}`}</legend>
                    <EditorSelect
                      state={editor}
                      name={f.type}
                      label={`Button ${i + 1} kind`}
                      value={read(f.type)}
                      options={BUTTON_TYPES.map((b) => [b, BUTTON_LABELS[b]])}
                    />
                    <EditorField state={editor} name={f.text} label={`Button ${i + 1} text`} value={read(f.text)} maxlength={25} />
                    <EditorField
                      state={editor}
                      name={f.url}
                      label={`Button ${i + 1} URL (URL buttons; {{1}} may end it)`}
                      value={read(f.url)}
                      inputmode="url"
                    />
                    <EditorField
                      state={editor}
                      name={f.example}
                      label={`Button ${i + 1} example: the full URL with {{1}} filled`}
                      value={read(f.example)}
                    />
                    <EditorField
                      state={editor}
                      name={f.phone}
                      label={`Button ${i + 1} phone number (+ and digits)`}
                      value={read(f.phone)}
                      inputmode="tel"
                    />
                    <EditorField
                      state={editor}
                      name={f.code}
                      label={`Button ${i + 1} code to copy (example)`}
                      value={read(f.code)}
                      maxlength={15}
                    />
                    <EditorSelect
                      state={editor}
                      name={f.otp}
                      label={`Button ${i + 1} one-time password kind`}
                      value={read(f.otp)}
                      options={OTP_TYPES.map((o) => [o, o])}
                    />
                    <button class="secondary" type="submit" name="do" value={`remove:${i}`} formnovalidate>
                      {`Remove button ${i + 1}`}
                    </button>
                  </fieldset>
                )
              })}
              {count < MAX_BUTTONS ? (
                <button class="secondary" type="submit" name="do" value="add" formnovalidate>
                  Add a button
                </button>
              ) : null}
            </fieldset>
            <div class="actions">
              <button class="secondary" type="submit" name="do" value="preview" formnovalidate>
                Preview
              </button>
              <button type="submit" name="do" value="create">
                Create and submit template
              </button>
            </div>
          </form>
          <section aria-labelledby="preview-title">
            <h2 id="preview-title">Preview</h2>
            <div id="template-preview" aria-live="polite">
              <TemplatePreview
                template={{ name: asText(definition.name) || 'the new template', components: asList(definition.components) }}
              />
            </div>
          </section>
        </div>
        <details open={json !== undefined}>
          <summary>Advanced: the template as the Cloud API's JSON</summary>
          <p class="muted">
            The template in the Cloud API's own JSON, as Meta documents it: <code>name</code> (lowercase letters, digits, underscores),{' '}
            <code>language</code>, <code>category</code> (MARKETING, UTILITY or AUTHENTICATION), <code>parameter_format</code> (POSITIONAL:{' '}
            <code>{'{{1}}'}</code>, <code>{'{{2}}'}</code>…; NAMED: <code>{'{{order_id}}'}</code>) and <code>components</code> (HEADER,
            BODY, FOOTER, BUTTONS, each with its example). It is checked as the fields are.
          </p>
          <form class="stack card wa-definition" method="post" action={action}>
            <Csrf session={session} />
            <div class="field">
              <label>
                Template JSON
                <textarea {...attributes} rows={22} required maxlength={MAX_DEFINITION_CHARS} spellcheck="false" class="code">
                  {typed ?? EXAMPLE_DEFINITION}
                </textarea>
              </label>
              <FormError state={json} form={form} name="definition" />
            </div>
            <button type="submit">Create and submit from JSON</button>
          </form>
        </details>
        <script src={EDITOR_SCRIPT} defer></script>
      </Layout>,
      status,
    )
  }

  /** The editor's form sent back: its values (after an added or removed button) and the problem at the field it names. */
  function editorState(body: unknown, message: string | null): FormState {
    const typed = (body ?? {}) as Record<string, unknown>
    const read = (name: string) => (typeof typed[name] === 'string' ? (typed[name] as string) : '')
    const count = buttonCount(read)
    const values = Object.fromEntries(editorNames(count).map((n) => [n, read(n)]))
    values.buttons = String(count)
    const problem = message === null ? null : { field: fieldOfProblem(message, definitionFromFields(read)), message }
    return { form: EDITOR, values, problem }
  }

  /** The editor's "Add a button", "Remove button n" and "Preview": the form again, with no template made. */
  function editorStep(session: Session, senderId: number, body: unknown, step: string) {
    const state = editorState(body, null)
    const count = Number(state.values.buttons)
    if (step === 'add' && count < MAX_BUTTONS) {
      state.values.buttons = String(count + 1)
      state.values[buttonFields(count).type] = 'QUICK_REPLY'
    }
    const removed = /^remove:(\d+)$/.exec(step)
    if (removed && Number(removed[1]) < count) {
      // The rows after it move up one.
      for (let i = Number(removed[1]); i < count; i++) {
        const here = buttonFields(i)
        const next = buttonFields(i + 1)
        for (const key of Object.keys(here) as (keyof typeof here)[]) state.values[here[key]] = state.values[next[key]] ?? ''
      }
      for (const name of Object.values(buttonFields(count - 1))) delete state.values[name]
      state.values.buttons = String(count - 1)
    }
    if (step === 'preview') {
      const checked = checkDefinition(definitionFromFields((name) => state.values[name] ?? ''))
      if (!checked.ok) return newTemplatePage(session, senderId, { editor: editorState(body, checked.problem) }, 422)
    }
    return newTemplatePage(session, senderId, { editor: state })
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
          const fields = field(body, 'mode') === 'fields'
          let definition: unknown
          if (fields) {
            const step = field(body, 'do')
            if (step !== '' && step !== 'create') return editorStep(session, id, body, step)
            definition = definitionFromFields((name) => field(body, name))
          } else {
            const text = field(body, 'definition')
            try {
              definition = JSON.parse(text)
            } catch {
              return newTemplatePage(
                session,
                id,
                { json: stateOf(text, 'definition: not JSON: paste the template as the Cloud API takes it') },
                422,
              )
            }
            if (definition === null || typeof definition !== 'object' || Array.isArray(definition)) {
              return newTemplatePage(
                session,
                id,
                { json: stateOf(text, 'definition: a JSON object with name, language, category and components') },
                422,
              )
            }
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
          if (field(body, 'mode') === 'fields') return newTemplatePage(session, id, { editor: editorState(body, message) }, status)
          return newTemplatePage(session, id, { json: stateOf(field(body, 'definition'), message) }, status)
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
