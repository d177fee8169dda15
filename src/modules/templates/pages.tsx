// Templates and segments, under the campaign engine's rules (its service decides: unknown
// placeholders are refused, a template in use by a running campaign does not change, one any
// campaign refers to is not deleted, nor is such a segment). A segment shows its size now.
// A template's page also binds it to each provider's approved template (modules/campaigns/bindings.ts).

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, counted, field, notFound, respond, pageRoutes } from '../../dashboard/context'
import type { Session } from '../../dashboard/session'
import { Field, FormProblem, FormToken, PagedTable, formState, type FormState } from '../../dashboard/components'
import { AccountLink, idParam, inScope, titleOf, viewScope, type Scope } from '../accounts/scope'
import { MAX_BODY_CHARS, MAX_NAME_CHARS } from '../../lib/validate'
import { audit } from '../users/service'
import { PLACEHOLDERS } from '../../lib/template'
import { deleteBinding, setBinding } from './bindings'
import { TEMPLATE_RULES } from '../../providers/registry'
import { type Binding, type Template } from './model'
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from './service'
import { MAX_TAG, createSegment, deleteSegment, listSegments } from './segments'
import { formatTimes } from '../../lib/time'

const LIST = { limit: 200, offset: 0 }
const placeholderHelp = `Placeholders: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}.`

const TEMPLATE_FIELDS = ['name', 'body'] as const
const SEGMENT_FIELDS = ['name', 'tag'] as const
const BINDING_FIELDS = ['ref', 'language', 'variables'] as const
/** The longest approved-template reference, language code and variable list a binding form takes. */
const MAX_REF_CHARS = 512
const MAX_LANGUAGE_CHARS = 10
const MAX_VARIABLES_CHARS = 2000
/** "name, city" (or "{{name}} {{city}}") typed in the form: the placeholder names in order. */
const variableNames = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((v) => v.replace(/^\{\{\s*|\s*\}\}$/g, ''))
    .filter(Boolean)
const bindingLine = (b: Pick<Binding, 'provider' | 'ref' | 'language'>) => `${b.provider}: ${b.ref}${b.language ? ` (${b.language})` : ''}`

export function templatePages(d: Dashboard) {
  async function templatesPage(scope: Scope, options: { error?: string; status?: number; state?: FormState } = {}) {
    const { session, base } = scope
    const { state } = options
    const [templates, segments] = formatTimes(
      await Promise.all([listTemplates(d.sql, scope.accountId, LIST), listSegments(d.sql, scope.accountId, LIST)]),
      d.tz,
    )
    return respond(
      <Layout title={titleOf(scope, 'Templates and segments')} session={session} error={options.error}>
        <AccountLink scope={scope} />
        <p>
          <a href={`${base}/whatsapp-templates`}>WhatsApp templates</a>: the templates WhatsApp approved for this account's senders, with
          the parameters a send fills.
        </p>
        <h2>Templates</h2>
        <PagedTable
          columns={[
            { header: 'Name', cell: (t) => t.name },
            { header: 'Text', cell: (t) => t.body, class: 'pre' },
            { header: 'Approved templates', cell: (t) => (t.bindings.length ? t.bindings.map(bindingLine).join('\n') : '-'), class: 'pre' },
            { header: 'Created', cell: (t) => t.created_at, class: 'nowrap', phone: false },
            {
              header: 'Actions',
              cell: (t) => (
                <div class="actions">
                  <a href={`${base}/templates/${t.id}`} aria-label={`Edit template ${t.name}`}>
                    Edit
                  </a>
                  <form method="post" action={`${base}/templates/${t.id}/delete`}>
                    <Csrf session={session} />
                    <button class="secondary" type="submit" aria-label={`Delete template ${t.name}`}>
                      Delete
                    </button>
                  </form>
                </div>
              ),
            },
          ]}
          rows={templates.items}
          empty="No templates yet."
        />
        <h3>New template</h3>
        <form class="stack card" method="post" action={`${base}/templates`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="template" />
          <Field state={state} form="template" name="name" label="Name" required maxlength={MAX_NAME_CHARS} />
          <Field state={state} form="template" name="body" label="Text" required rows={4} maxlength={MAX_BODY_CHARS} />
          <p class="muted">{placeholderHelp}</p>
          <button type="submit">Create template</button>
        </form>
        <h2>Segments</h2>
        <PagedTable
          columns={[
            { header: 'Name', cell: (s) => s.name },
            { header: 'Tag', cell: (s) => s.tag },
            { header: 'Contacts', cell: (s) => s.contact_count.toLocaleString('en'), class: 'segment-size' },
            { header: 'Created', cell: (s) => s.created_at, class: 'nowrap', phone: false },
            {
              header: 'Actions',
              cell: (s) => (
                <form method="post" action={`${base}/segments/${s.id}/delete`}>
                  <Csrf session={session} />
                  <button class="secondary" type="submit" aria-label={`Delete segment ${s.name}`}>
                    Delete
                  </button>
                </form>
              ),
            },
          ]}
          rows={segments.items}
          empty="No segments yet."
        />
        <h3>New segment</h3>
        <form class="stack card" method="post" action={`${base}/segments`}>
          <Csrf session={session} />
          <FormToken session={session} />
          <FormProblem state={state} form="segment" />
          <Field state={state} form="segment" name="name" label="Name" required maxlength={MAX_NAME_CHARS} />
          <Field state={state} form="segment" name="tag" label="Tag (the contacts carrying it, in any case)" required maxlength={MAX_TAG} />
          <button type="submit">Create segment</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  function editPage(scope: Scope, template: Template, options: { error?: string; status?: number; state?: FormState } = {}) {
    const { state } = options
    return respond(
      <Layout title={titleOf(scope, `Template ${template.name}`)} session={scope.session} error={options.error}>
        <AccountLink scope={scope} />
        <form class="stack card" method="post" action={`${scope.base}/templates/${template.id}`}>
          <Csrf session={scope.session} />
          <FormProblem state={state} form="edit" />
          <Field state={state} form="edit" name="name" label="Name" required maxlength={MAX_NAME_CHARS} value={template.name} />
          <Field state={state} form="edit" name="body" label="Text" required rows={6} maxlength={MAX_BODY_CHARS} value={template.body} />
          <p class="muted">{placeholderHelp} A template used by a scheduled, sending or paused campaign cannot change.</p>
          <button type="submit">Save template</button>
        </form>
        <h2>Approved templates</h2>
        <p class="muted">
          WhatsApp lets a business start a conversation only with a template it approved. Bind this template to the provider's approved
          template, with the placeholders that fill its variables in its order: campaigns and sends with this template then send the
          approved template (and record this text). A template without a binding for the provider in use goes as free-form text. The
          provider in use is {d.config.provider}.
        </p>
        {[...TEMPLATE_RULES].map(([provider, rules]) => {
          const bound = template.bindings.find((b) => b.provider === provider)
          const form = `binding-${provider}`
          const base = `${scope.base}/templates/${template.id}/bindings/${provider}`
          return (
            <section class="card stack" id={`binding-${provider}`}>
              <h3>
                {provider}
                {provider === d.config.provider ? ' (in use)' : ''}
              </h3>
              <p class={bound ? 'wrap' : 'muted'}>
                {bound
                  ? `Bound to ${bindingLine(bound)}, variables: ${bound.variables.length ? bound.variables.join(', ') : 'none'}.`
                  : 'Not bound: sent as free-form text.'}
              </p>
              <form class="stack" method="post" action={base}>
                <Csrf session={scope.session} />
                <FormProblem state={state} form={form} />
                <Field
                  state={state}
                  form={form}
                  name="ref"
                  label={`Template: ${rules.ref}`}
                  required
                  maxlength={MAX_REF_CHARS}
                  value={bound?.ref}
                />
                {rules.language === 'none' ? null : (
                  <Field
                    state={state}
                    form={form}
                    name="language"
                    label={`Language code (en_US, id)${rules.language === 'optional' ? ', optional' : ''}`}
                    maxlength={MAX_LANGUAGE_CHARS}
                    required={rules.language === 'required'}
                    value={bound?.language ?? ''}
                  />
                )}
                <Field
                  state={state}
                  form={form}
                  name="variables"
                  label="Variables in the approved template's order: placeholder names, comma-separated (e.g. name, city)"
                  maxlength={MAX_VARIABLES_CHARS}
                  value={bound?.variables.join(', ')}
                />
                <button type="submit" aria-label={`Save binding for ${provider}`}>
                  Save binding
                </button>
              </form>
              {bound ? (
                <form method="post" action={`${base}/delete`}>
                  <Csrf session={scope.session} />
                  <button class="secondary" type="submit" aria-label={`Remove binding for ${provider}`}>
                    Remove binding
                  </button>
                </form>
              ) : null}
            </section>
          )
        })}
        <p>
          <a href={`${scope.base}/templates`}>Back to templates and segments</a>
        </p>
      </Layout>,
      options.status ?? 200,
    )
  }

  const app = pageRoutes()
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    const record = (
      db: Parameters<typeof audit>[0],
      scope: Scope,
      request: Request,
      server: Parameters<Dashboard['addressOf']>[1],
      action: string,
      detail: Record<string, unknown>,
    ) => audit(db, { user: scope.session.user, address: d.addressOf(request, server), accountId: scope.accountId, action, detail })
    /** The template of the scope's account, or null (404). */
    const ownTemplate = (scope: Scope, id: number | null) =>
      id === null
        ? Promise.resolve(null)
        : getTemplate(d.sql, id, scope.accountId).then(
            (template) => formatTimes(template, d.tz),
            () => null,
          )
    /**
     * formAction's target for a change of one template: the scope and the template of the path, 404
     * when it is not the account's (or, with `provider`, that provider has no approved templates).
     */
    const templateOf =
      (request: Request, params: Record<string, string>, provider?: string) =>
      async (session: Session): Promise<{ scope: Scope; template: Template } | Response> => {
        const scope = await inScope(d, request, accountOf(params))(session)
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        if (!template || (provider !== undefined && !TEMPLATE_RULES.has(provider))) return notFound(session)
        return { scope, template }
      }

    app
      .get(`${prefix}/templates`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : templatesPage(scope)
      })
      .post(`${prefix}/templates`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/templates`
            return d.once(scope.session, body, to, async (tx) => {
              const template = await createTemplate(tx, scope.accountId, { name: field(body, 'name'), body: field(body, 'body') })
              await record(tx, scope, request, server, 'template created', { template_id: template.id, name: template.name })
              return { to, notice: `Template ${template.name} created.` }
            })
          },
          (message, status, scope) => templatesPage(scope, { state: formState('template', body, TEMPLATE_FIELDS, message), status }),
        ),
      )
      .get(`${prefix}/templates/:template`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        return template ? editPage(scope, template) : notFound(scope.session)
      })
      .post(`${prefix}/templates/:template`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          templateOf(request, params),
          async ({ scope, template }) => {
            const saved = await updateTemplate(
              d.sql,
              template.id,
              { name: field(body, 'name'), body: field(body, 'body') },
              scope.accountId,
            )
            await record(d.sql, scope, request, server, 'template changed', { template_id: template.id })
            return d.finish(scope.session, { to: `${scope.base}/templates`, notice: `Template ${saved.name} saved.` })
          },
          (message, status, { scope, template }) =>
            editPage(scope, template, { state: formState('edit', body, TEMPLATE_FIELDS, message), status }),
        ),
      )
      .post(`${prefix}/templates/:template/delete`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          templateOf(request, params),
          async ({ scope, template }) => {
            await deleteTemplate(d.sql, template.id, scope.accountId)
            await record(d.sql, scope, request, server, 'template deleted', { template_id: template.id, name: template.name })
            return d.finish(scope.session, { to: `${scope.base}/templates`, notice: `Template ${template.name} deleted.` })
          },
          (error, status, { scope }) => templatesPage(scope, { error, status }),
        ),
      )
      .post(`${prefix}/templates/:template/bindings/:provider`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          templateOf(request, params, params.provider),
          async ({ scope, template }) => {
            const binding = await setBinding(
              d.sql,
              template.id,
              params.provider,
              {
                ref: field(body, 'ref').trim(),
                language: field(body, 'language').trim() || null,
                variables: variableNames(field(body, 'variables')),
              },
              scope.accountId,
            )
            await record(d.sql, scope, request, server, 'template bound', {
              template_id: template.id,
              provider: binding.provider,
              ref: binding.ref,
              language: binding.language,
              variables: binding.variables,
            })
            return d.finish(scope.session, {
              to: `${scope.base}/templates/${template.id}`,
              notice: `Template ${template.name} bound: ${bindingLine(binding)}.`,
            })
          },
          (message, status, { scope, template }) =>
            editPage(scope, template, { state: formState(`binding-${params.provider}`, body, BINDING_FIELDS, message), status }),
        ),
      )
      .post(`${prefix}/templates/:template/bindings/:provider/delete`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          templateOf(request, params, params.provider),
          async ({ scope, template }) => {
            await deleteBinding(d.sql, template.id, params.provider, scope.accountId)
            await record(d.sql, scope, request, server, 'template unbound', { template_id: template.id, provider: params.provider })
            return d.finish(scope.session, {
              to: `${scope.base}/templates/${template.id}`,
              notice: `The ${params.provider} binding of template ${template.name} is removed: it goes as free-form text there.`,
            })
          },
          (error, status, { scope, template }) => editPage(scope, template, { error, status }),
        ),
      )
      .post(`${prefix}/segments`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          (scope) => {
            const to = `${scope.base}/templates`
            return d.once(scope.session, body, to, async (tx) => {
              const segment = await createSegment(tx, scope.accountId, { name: field(body, 'name'), tag: field(body, 'tag') })
              await record(tx, scope, request, server, 'segment created', { segment_id: segment.id, name: segment.name, tag: segment.tag })
              return {
                to,
                notice: `Segment ${segment.name} created: ${counted(segment.contact_count, 'contact')} tagged ${segment.tag} now.`,
              }
            })
          },
          (message, status, scope) => templatesPage(scope, { state: formState('segment', body, SEGMENT_FIELDS, message), status }),
        ),
      )
      .post(`${prefix}/segments/:segment/delete`, ({ request, body, params, server }) =>
        d.formAction(
          request,
          body,
          inScope(d, request, accountOf(params)),
          async (scope) => {
            const id = idParam(params.segment)
            if (id === null) return notFound(scope.session)
            await deleteSegment(d.sql, id, scope.accountId)
            await record(d.sql, scope, request, server, 'segment deleted', { segment_id: id })
            return d.finish(scope.session, { to: `${scope.base}/templates`, notice: 'Segment deleted.' })
          },
          (error, status, scope) => (status === 404 ? notFound(scope.session) : templatesPage(scope, { error, status })),
        ),
      )
  }
  return app
}
