// WhatsApp templates in the dashboard (issue 30). The operator: a sender's templates on its page (name,
// language, category, status with its reason, quality) with a "Sync templates" button, a page for each
// template (its parameters, its components, a WhatsApp-like preview at phone width, the history of its
// status, category, quality and definition) and a "New template" form taking the Cloud API's template
// JSON as Meta documents it (submission.ts checks it, submits it and stores it; a 422 is shown at the
// field). A member: the templates its account may use (catalog.usableTemplates), read-only, with the
// parameters a send must fill, and each one's page; another account's template is 404.

import { h, Fragment, type Child } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, counted, field, notFound, orError, redirect, respond, pageRoutes } from '../../dashboard/context'
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
import { deleteTemplate, editTemplate } from './edits'
import { membersMayChange, requireMayChange, setMembersMayChange, type TemplateActor } from './rights'
import type { LastSync } from './syncs'
import { audit } from '../users/service'
import { listAccountSenders } from '../senders/service'

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

/** A sender's last template sync, in words (ok with its counts, or its error). */
export function LastSyncText(props: { sync: LastSync | null; tz: string }) {
  const { sync } = props
  if (!sync) return <span class="muted">never synced</span>
  const when = formatTimestamp(sync.synced_at, props.tz)
  const why = { created: 'when it was created', checked: 'when it was checked', demand: 'on demand', periodic: 'periodic' }[sync.trigger]
  return (
    <span id="last-sync">
      {sync.ok ? <span class="status">ok</span> : <span class="status status-failed">failed</span>} {when} ({why}): {sync.detail}
    </span>
  )
}

/**
 * A sender's templates with the way to a new one: the operator's part of a sender's page (and the default
 * sender's page), with the sync button; a member's sender page (`sync` false), its links under `base`.
 */
export function SenderTemplates(props: {
  session: Session
  senderId: number
  templates: WaTemplate[]
  /** The sender's last sync, shown in the deployment's time zone (nothing when not given). */
  lastSync?: { sync: LastSync | null; tz: string }
  /** Where the sender's template pages are (default: the operator's). */
  base?: string
  /** The sync button (the operator's). */
  sync?: boolean
  /** The "New template" link (the operator's; a member's where allowed). */
  create?: boolean
}) {
  const { session, senderId, templates } = props
  const base = `${props.base ?? `/dashboard/senders/${senderId}`}/templates`
  const sync = props.sync ?? true
  return (
    <section aria-labelledby="templates-title">
      <h2 id="templates-title">WhatsApp templates</h2>
      <p class="muted">
        The approved templates this sender may start a conversation with: only <code>approved</code> sends.
        {sync ? ' Sync reads them from the provider (status, category and quality as it says now).' : ''}
      </p>
      {props.lastSync !== undefined ? (
        <p>
          Last sync: <LastSyncText sync={props.lastSync.sync} tz={props.lastSync.tz} />
        </p>
      ) : null}
      <PagedTable
        columns={[
          { header: 'Template', cell: (t) => <a href={`${base}/${t.id}`}>{t.name}</a> },
          { header: 'Language', cell: (t) => t.language },
          { header: 'Category', cell: (t) => t.category },
          { header: 'Status', cell: (t) => <TemplateStatus template={t} /> },
          { header: 'Quality', cell: (t) => t.quality },
        ]}
        rows={templates}
        empty={sync ? 'No WhatsApp templates yet: sync them from the provider, or create one.' : 'No WhatsApp templates yet.'}
      />
      <div class="actions">
        {sync ? (
          <form method="post" action={`${base}/sync`}>
            <Csrf session={session} />
            <button type="submit">Sync templates</button>
          </form>
        ) : null}
        {(props.create ?? true) ? <a href={`${base}/new`}>New template</a> : null}
      </div>
    </section>
  )
}

/** The operator's choice on an account's page: may its members create, edit and delete its own senders' templates? */
export function TemplateRights(props: { session: Session; accountId: number; allowed: boolean }) {
  const { session, accountId, allowed } = props
  return (
    <section aria-labelledby="template-rights-title">
      <h2 id="template-rights-title">WhatsApp templates by members</h2>
      <p id="template-rights">
        {allowed
          ? "This account's members may create, edit and delete WhatsApp templates for its own senders (from each sender's page on their overview)."
          : "This account's members see its senders' WhatsApp templates; only the operator creates, edits and deletes them."}
      </p>
      <form method="post" action={`/dashboard/accounts/${accountId}/template-rights`}>
        <Csrf session={session} />
        <input type="hidden" name="allowed" value={allowed ? 'no' : 'yes'} />
        <button class="secondary" type="submit">
          {allowed ? 'Take back from members' : 'Let members manage templates'}
        </button>
      </form>
    </section>
  )
}

/** Where a sender's template pages are and who acts there: the operator's (any sender, 0 the default one) or a member's own sender's. */
type Where = {
  session: Session
  actor: TemplateActor
  /** The sender's id in the path (0: the deployment's default sender). */
  senderId: number
  /** The sender's pages' root: `/dashboard/senders/{id}` (the operator's) or `/dashboard/my-senders/{id}` (a member's). */
  base: string
  /** The page listing the sender's templates. */
  list: string
  /** Whether this actor may create, edit and delete them here. */
  mayChange: boolean
}

export function waTemplatePages(d: Dashboard) {
  const tz = d.tz
  const when = (date: Date) => formatTimestamp(date, tz)!

  /** One template's page: facts, parameters, preview, components, history; `actions`: edit and delete. */
  async function templatePage(
    session: Session,
    template: WaTemplate,
    frame: { title: string; back: Child; history: boolean; before?: Child; actions?: Child },
    status = 200,
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
        {frame.actions}
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
      status,
    )
  }

  /** The edit form and the way to delete, on a template's page where the actor may change it. */
  function TemplateActions(props: { where: Where; template: WaTemplate; state?: FormState }) {
    const { where, template, state } = props
    if (!where.mayChange || template.status === 'deleted') return null
    const { typed, attributes } = fieldProps(state, 'edit', 'definition')
    const current = JSON.stringify({ category: template.category.toUpperCase(), components: template.components }, null, 2)
    const url = `${where.base}/templates/${template.id}`
    return (
      <section aria-labelledby="change-title">
        <h2 id="change-title">Edit or delete</h2>
        <details open={state?.form === 'edit'}>
          <summary>Edit this template</summary>
          <p class="muted">
            Its new <code>components</code> (and <code>category</code>, for a rejected or paused one) in the Cloud API's JSON; its name and
            language never change. Meta takes edits of approved, rejected and paused templates (an approved one at most once a day, ten
            times a month) and reviews it again: it is <code>pending</code> until then and does not send. Twilio edits none: create a new
            template instead.
          </p>
          <form class="stack card wa-definition" method="post" action={`${url}/edit`}>
            <Csrf session={where.session} />
            <div class="field">
              <label>
                Template JSON (category and components)
                <textarea {...attributes} rows={16} required maxlength={MAX_DEFINITION_CHARS} spellcheck="false" class="code">
                  {typed ?? current}
                </textarea>
              </label>
              <FormError state={state} form="edit" name="definition" />
            </div>
            <button type="submit">Save and submit the edit</button>
          </form>
        </details>
        <p>
          <a class="button danger secondary" href={`${url}/delete`} aria-label={`Delete template ${template.name} (${template.language})`}>
            Delete template
          </a>
        </p>
      </section>
    )
  }

  /** A template's page for `where` (its sender's), or 404. */
  async function senderTemplatePage(where: Where, templateId: number, state?: FormState, status = 200) {
    const template = await getTemplateRow(d.sql, templateId)
    if (!template || (template.sender_id ?? 0) !== where.senderId) return notFound(where.session)
    return templatePage(
      where.session,
      template,
      {
        title: `WhatsApp template ${template.name}`,
        back: <a href={where.list}>{where.senderId === 0 ? "The default sender's templates" : 'Back to the sender'}</a>,
        history: true,
        actions: <TemplateActions where={where} template={template} state={state} />,
      },
      status,
    )
  }

  /**
   * The "New template" page of a sender: the field-by-field editor with its preview (assets/
   * template-editor.js updates it as one types; without script, "Preview" shows it), and the
   * Cloud API's JSON as the advanced way. `editor`: the editor's form sent back (its values, its
   * problem at the field it names); `json`: the JSON form sent back.
   */
  function newTemplatePage(where: Where, forms: { editor?: FormState; json?: FormState } = {}, status = 200) {
    const { editor, json } = forms
    const { session } = where
    const form = 'template'
    const { typed, attributes } = fieldProps(json, form, 'definition')
    const action = `${where.base}/templates`
    const values = editor?.values ?? { ...EDITOR_START }
    const read = (name: string) => values[name] ?? ''
    const count = buttonCount(read)
    const definition = definitionFromFields(read)
    return respond(
      <Layout title="New WhatsApp template" session={session}>
        <p>
          <a href={where.list}>{where.senderId === 0 ? "The default sender's templates" : 'Back to the sender'}</a>
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
  function editorStep(where: Where, body: unknown, step: string) {
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
      if (!checked.ok) return newTemplatePage(where, { editor: editorState(body, checked.problem) }, 422)
    }
    return newTemplatePage(where, { editor: state })
  }

  /** The delete confirmation of a template. */
  async function deletePage(where: Where, templateId: number) {
    const template = await getTemplateRow(d.sql, templateId)
    if (!template || (template.sender_id ?? 0) !== where.senderId || template.status === 'deleted') return notFound(where.session)
    const url = `${where.base}/templates/${template.id}`
    return respond(
      <Layout title={`Delete WhatsApp template ${template.name}?`} session={where.session}>
        <p>
          <a href={url}>Back to the template</a>
        </p>
        <div class="card stack">
          <p>
            Template <strong>{template.name}</strong> ({template.language}, {template.status}) is deleted at {template.provider} first, then
            here. From then on a send of it is refused (<code>TEMPLATE_NOT_APPROVED</code>) and a running campaign of it pauses. This cannot
            be undone{template.provider === 'meta' ? ': Meta keeps its name and language from a new template for 30 days' : ''}.
          </p>
          <form class="actions" method="post" action={`${url}/delete`}>
            <Csrf session={where.session} />
            <button class="danger" type="submit">
              Delete template {template.name}
            </button>
            <a class="button secondary" href={url}>
              Keep it
            </a>
          </form>
        </div>
      </Layout>,
    )
  }

  /** The default sender's page: its templates, the sync button and the way to a new one. */
  async function defaultSenderPage(session: Session) {
    const templates = await templatesOfSender(d.sql, null)
    return respond(
      <Layout title="The default sender's WhatsApp templates" session={session}>
        <p>
          <a href="/dashboard/senders">All senders</a>
        </p>
        <p class="muted">
          The deployment's default sender ({d.config.provider}, the environment's <code>PROVIDER</code> settings) is the number every
          account without senders of its own sends from. Its templates sync from a Meta WhatsApp Business Account with{' '}
          <code>META_BUSINESS_ACCOUNT_ID</code> set, or from a Twilio account's Content API; a simulator's live here only.
        </p>
        <SenderTemplates session={session} senderId={0} templates={templates} sync={d.config.provider !== 'simulator'} />
      </Layout>,
    )
  }

  /** The operator's place: any sender (0: the default one); null (404) for an id that is not one. */
  const operatorWhere = (session: Session, request: Request, param: string): Where | null => {
    const id = idParam(param)
    if (id === null) return null
    return {
      session,
      actor: { kind: 'operator', user: session.user, address: d.addressOf(request) },
      senderId: id,
      base: `/dashboard/senders/${id}`,
      list: id === 0 ? '/dashboard/senders/0/templates' : `/dashboard/senders/${id}`,
      mayChange: true,
    }
  }

  /**
   * A member's place: to read, a sender of its own account only (another's, the default one: null, 404).
   * A change (`change`) is let through to the service, whose guard (rights.ts requireMayChange) is the
   * one that decides: the sender must be the member's account's own, and the operator must allow it.
   */
  const memberWhere = async (session: Session, request: Request, param: string, change = false): Promise<Where | null> => {
    const id = idParam(param)
    const accountId = session.user.account_id
    if (id === null || session.user.role !== 'member' || accountId === null) return null
    if (!change && !(await listAccountSenders(d.sql, accountId)).some((s) => s.id === id)) return null
    return {
      session,
      actor: { kind: 'member', accountId, user: session.user, address: d.addressOf(request) },
      senderId: id,
      base: `/dashboard/my-senders/${id}`,
      list: `/dashboard/my-senders/${id}`,
      mayChange: await membersMayChange(d.sql, accountId),
    }
  }

  const app = pageRoutes()
    .post('/accounts/:id/template-rights', ({ request, body, params }) =>
      d.formAction(request, body, OPERATOR, async (session) => {
        const accountId = idParam(params.id)
        if (accountId === null) return notFound(session)
        const allowed = field(body, 'allowed') === 'yes'
        const to = `/dashboard/accounts/${accountId}`
        return orError(
          async () => {
            if (await setMembersMayChange(d.sql, d.deps.clock, accountId, allowed)) {
              await audit(d.sql, {
                user: session.user,
                address: d.addressOf(request),
                accountId,
                action: allowed ? 'template rights granted' : 'template rights withdrawn',
              })
            }
            return d.finish(session, {
              to,
              notice: allowed
                ? "Members of this account may now create, edit and delete its own senders' WhatsApp templates."
                : 'Members of this account may no longer create, edit or delete WhatsApp templates.',
            })
          },
          () => notFound(session),
        )
      }),
    )
    .post('/senders/:sender/templates/sync', ({ request, body, params }) =>
      d.formAction(
        request,
        body,
        OPERATOR,
        async (session) => {
          const id = idParam(params.sender)
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
            to: id === 0 ? '/dashboard/senders/0/templates' : `/dashboard/senders/${id}`,
            notice:
              `Templates synced: ${counted(r.listed, 'template')} listed by ${r.provider}, ${r.created} new, ${r.changed} changed, ` +
              `${r.unchanged} unchanged, ${r.gone} gone${skipped}.`,
          })
        },
        (message, status, session) => {
          const id = idParam(params.sender)
          if (status === 404 || id === null) return notFound(session)
          return d.finish(session, {
            to: id === 0 ? '/dashboard/senders/0/templates' : `/dashboard/senders/${id}`,
            error: `Templates not synced: ${message}`,
          })
        },
      ),
    )
    .get('/senders/:sender/templates', async ({ request, params }) => {
      const session = await d.view(request, OPERATOR)
      if (session instanceof Response) return session
      const id = idParam(params.sender)
      if (id === null) return notFound(session)
      return id === 0 ? defaultSenderPage(session) : redirect(`/dashboard/senders/${id}`)
    })
    .get('/my-senders/:sender', async ({ request, params }) => {
      const session = await d.view(request)
      if (session instanceof Response) return session
      const where = await memberWhere(session, request, params.sender)
      if (!where) return notFound(session)
      const sender = (await listAccountSenders(d.sql, session.user.account_id!)).find((s) => s.id === where.senderId)!
      const templates = await templatesOfSender(d.sql, where.senderId)
      return respond(
        <Layout title={`Sender ${sender.name}`} session={session}>
          <p>
            <a href="/dashboard">Overview</a>
          </p>
          <dl class="facts card">
            <dt>Number</dt>
            <dd>{sender.number}</dd>
            <dt>Provider</dt>
            <dd>{sender.provider}</dd>
            <dt>Id</dt>
            <dd>
              <code>{sender.id}</code> <span class="muted">(a send's from)</span>
            </dd>
            <dt>State</dt>
            <dd>{sender.disabled ? 'disabled' : 'enabled'}</dd>
          </dl>
          <SenderTemplates
            session={session}
            senderId={where.senderId}
            templates={templates}
            base={where.base}
            sync={false}
            create={where.mayChange}
          />
          {where.mayChange ? null : (
            <p class="muted">
              The service's operator creates, edits and deletes this sender's templates (or allows this account's members to).
            </p>
          )}
        </Layout>,
      )
    })
  const places: [string, (session: Session, request: Request, param: string, change?: boolean) => Promise<Where | null>][] = [
    ['/senders', async (session, request, param) => (session.user.role === 'operator' ? operatorWhere(session, request, param) : null)],
    ['/my-senders', memberWhere],
  ]
  for (const [prefix, whereOf] of places) {
    /** The place of a request, or its answer (sign-in, 404). */
    const view = async (request: Request, param: string): Promise<Where | Response> => {
      const session = await d.view(request)
      if (session instanceof Response) return session
      return (await whereOf(session, request, param)) ?? notFound(session)
    }
    /** The place of a change where its actor may change templates, or 404. */
    const target = (request: Request, param: string) => async (session: Session) => {
      const where = await whereOf(session, request, param, true)
      return where && where.mayChange ? where : notFound(session)
    }
    app
      .get(`${prefix}/:sender/templates/new`, async ({ request, params }) => {
        const where = await view(request, params.sender)
        if (where instanceof Response) return where
        return where.mayChange ? newTemplatePage(where) : notFound(where.session)
      })
      .post(`${prefix}/:sender/templates`, ({ request, body, params }) =>
        d.formAction(
          request,
          body,
          target(request, params.sender),
          async (where) => {
            let definition: Record<string, unknown>
            if (field(body, 'mode') === 'fields') {
              const step = field(body, 'do')
              if (step !== '' && step !== 'create') {
                // A step makes nothing, but a member's is still its own sender's only (the create's guard, first).
                await requireMayChange(d.sql, where.actor, where.senderId === 0 ? null : where.senderId)
                return editorStep(where, body, step)
              }
              definition = definitionFromFields((name) => field(body, name))
            } else {
              const text = field(body, 'definition')
              const parsed = parseObject(text)
              if (typeof parsed === 'string') return newTemplatePage(where, { json: stateOf('template', text, parsed) }, 422)
              definition = parsed
            }
            const created = await createSenderTemplate(d.deps, where.senderId, definition, where.actor)
            return d.finish(where.session, {
              to: `${where.base}/templates/${created.id}`,
              notice: `Template ${created.name} (${created.language}) created: ${created.status}.`,
            })
          },
          (message, status, where) => {
            if (status === 404) return notFound(where.session)
            if (field(body, 'mode') === 'fields') return newTemplatePage(where, { editor: editorState(body, message) }, status)
            return newTemplatePage(where, { json: stateOf('template', field(body, 'definition'), message) }, status)
          },
        ),
      )
      .get(`${prefix}/:sender/templates/:template`, async ({ request, params }) => {
        const where = await view(request, params.sender)
        if (where instanceof Response) return where
        const templateId = idParam(params.template)
        return templateId === null ? notFound(where.session) : senderTemplatePage(where, templateId)
      })
      .post(`${prefix}/:sender/templates/:template/edit`, ({ request, body, params }) =>
        d.formAction(
          request,
          body,
          target(request, params.sender),
          async (where) => {
            const templateId = idParam(params.template)
            const template = templateId === null ? null : await getTemplateRow(d.sql, templateId)
            if (!template || (template.sender_id ?? 0) !== where.senderId) return notFound(where.session)
            const text = field(body, 'definition')
            const change = parseObject(text)
            if (typeof change === 'string') return senderTemplatePage(where, template.id, stateOf('edit', text, change), 422)
            const edited = await editTemplate(d.deps, where.actor, template.id, change)
            return d.finish(where.session, {
              to: `${where.base}/templates/${edited.id}`,
              notice: `Template ${edited.name} (${edited.language}) edited: ${edited.status} until ${edited.provider} reviews it again.`,
            })
          },
          (message, status, where) => {
            const templateId = idParam(params.template)
            if (status === 404 || templateId === null) return notFound(where.session)
            return senderTemplatePage(where, templateId, stateOf('edit', field(body, 'definition'), message), status)
          },
        ),
      )
      .get(`${prefix}/:sender/templates/:template/delete`, async ({ request, params }) => {
        const where = await view(request, params.sender)
        if (where instanceof Response) return where
        const templateId = idParam(params.template)
        return templateId === null || !where.mayChange ? notFound(where.session) : deletePage(where, templateId)
      })
      .post(`${prefix}/:sender/templates/:template/delete`, ({ request, body, params }) =>
        d.formAction(
          request,
          body,
          target(request, params.sender),
          async (where) => {
            const templateId = idParam(params.template)
            const template = templateId === null ? null : await getTemplateRow(d.sql, templateId)
            if (!template || (template.sender_id ?? 0) !== where.senderId) return notFound(where.session)
            const deleted = await deleteTemplate(d.deps, where.actor, template.id)
            return d.finish(where.session, {
              to: `${where.base}/templates/${deleted.id}`,
              notice: `Template ${deleted.name} (${deleted.language}) deleted: it no longer sends, and campaigns of it pause.`,
            })
          },
          (message, status, where) => {
            const templateId = idParam(params.template)
            if (status === 404 || templateId === null) return notFound(where.session)
            return d.finish(where.session, { to: `${where.base}/templates/${templateId}`, error: `Template not deleted: ${message}` })
          },
        ),
      )
  }
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

/** A template form sent back: what was typed and the problem, shown at the JSON field. */
function stateOf(form: 'template' | 'edit', text: string, message: string): FormState {
  return { form, values: { definition: text }, problem: { field: 'definition', message } }
}

/** The JSON object of a form's definition, or the problem with it in words. */
function parseObject(text: string): Record<string, unknown> | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return 'definition: not JSON: paste the template as the Cloud API takes it'
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return 'definition: a JSON object with name, language, category and components'
  }
  return value as Record<string, unknown>
}

/** The templates of a sender for its page (the sender page reads them through this). */
export const senderTemplatesOf = (d: Dashboard, senderId: number) => templatesOfSender(d.sql, senderId)
