// Templates and segments, under the campaign engine's rules (its service decides: unknown
// placeholders are refused, a template in use by a running campaign does not change, one any
// campaign refers to is not deleted, nor is such a segment). A segment shows its size now.
// A template's page also binds it to each provider's approved template (modules/campaigns/bindings.ts).

import { h } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { PagedTable } from '../../dashboard/components'
import { type Dashboard, field, notFound, orError, redirect, respond, pageRoutes } from '../../dashboard/context'
import { changeScope, idParam, titleOf, viewScope, type Scope } from '../accounts/scope'
import { audit } from '../users/service'
import { PLACEHOLDERS } from '../../lib/template'
import { deleteBinding, setBinding } from './bindings'
import { TEMPLATE_RULES } from '../../providers/registry'
import { type Binding, type Template } from './model'
import { createTemplate, deleteTemplate, getTemplate, listTemplates, updateTemplate } from './service'
import { createSegment, deleteSegment, listSegments } from './segments'

const LIST = { limit: 200, offset: 0 }
const placeholderHelp = `Placeholders: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}.`

type BindingForm = { provider: string; ref: string; language: string; variables: string }
/** "name, city" (or "{{name}} {{city}}") typed in the form: the placeholder names in order. */
const variableNames = (text: string) =>
  text
    .split(/[\s,]+/)
    .map((v) => v.replace(/^\{\{\s*|\s*\}\}$/g, ''))
    .filter(Boolean)
const bindingLine = (b: Binding) => `${b.provider}: ${b.ref}${b.language ? ` (${b.language})` : ''}`

export function templatePages(d: Dashboard) {
  async function templatesPage(
    scope: Scope,
    options: { error?: string; status?: number; template?: { name: string; body: string }; segment?: { name: string; tag: string } } = {},
  ) {
    const { session, base } = scope
    const [templates, segments] = await Promise.all([
      listTemplates(d.sql, d.tz, scope.accountId, LIST),
      listSegments(d.sql, d.tz, scope.accountId, LIST),
    ])
    return respond(
      <Layout title={titleOf(scope, 'Templates and segments')} session={session} error={options.error}>
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
          <label>
            Name
            <input name="name" required maxlength={200} value={options.template?.name ?? ''} />
          </label>
          <label>
            Text
            <textarea name="body" required rows={4} maxlength={4096}>
              {options.template?.body ?? ''}
            </textarea>
          </label>
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
          <label>
            Name
            <input name="name" required maxlength={200} value={options.segment?.name ?? ''} />
          </label>
          <label>
            Tag (the contacts carrying it, in any case)
            <input name="tag" required maxlength={100} value={options.segment?.tag ?? ''} />
          </label>
          <button type="submit">Create segment</button>
        </form>
      </Layout>,
      options.status ?? 200,
    )
  }

  function editPage(
    scope: Scope,
    template: Template,
    options: { error?: string; status?: number; values?: { name: string; body: string }; binding?: BindingForm } = {},
  ) {
    const values = options.values ?? template
    return respond(
      <Layout title={titleOf(scope, `Template ${template.name}`)} session={scope.session} error={options.error}>
        <form class="stack card" method="post" action={`${scope.base}/templates/${template.id}`}>
          <Csrf session={scope.session} />
          <label>
            Name
            <input name="name" required maxlength={200} value={values.name} />
          </label>
          <label>
            Text
            <textarea name="body" required rows={6} maxlength={4096}>
              {values.body}
            </textarea>
          </label>
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
          const typed = options.binding?.provider === provider ? options.binding : undefined
          const shown = typed ?? {
            ref: bound?.ref ?? '',
            language: bound?.language ?? '',
            variables: bound?.variables.join(', ') ?? '',
          }
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
                <label>
                  {`Template: ${rules.ref}`}
                  <input name="ref" required maxlength={512} value={shown.ref} />
                </label>
                {rules.language === 'none' ? null : (
                  <label>
                    {`Language code (en_US, id)${rules.language === 'optional' ? ', optional' : ''}`}
                    <input name="language" maxlength={10} required={rules.language === 'required'} value={shown.language} />
                  </label>
                )}
                <label>
                  Variables in the approved template's order: placeholder names, comma-separated (e.g. name, city)
                  <input name="variables" maxlength={2000} value={shown.variables} />
                </label>
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
      scope: Scope,
      request: Request,
      server: Parameters<Dashboard['addressOf']>[1],
      action: string,
      detail: Record<string, unknown>,
    ) => audit(d.sql, { user: scope.session.user, address: d.addressOf(request, server), accountId: scope.accountId, action, detail })
    /** The template of the scope's account, or null (404). */
    const ownTemplate = (scope: Scope, id: number | null) =>
      id === null ? Promise.resolve(null) : getTemplate(d.sql, d.tz, id, scope.accountId).catch(() => null)

    app
      .get(`${prefix}/templates`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : templatesPage(scope)
      })
      .post(`${prefix}/templates`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const input = { name: field(body, 'name'), body: field(body, 'body') }
        return orError(
          async () => {
            const template = await createTemplate(d.sql, d.tz, scope.accountId, input)
            await record(scope, request, server, 'template created', { template_id: template.id, name: template.name })
            return redirect(`${scope.base}/templates`)
          },
          (error, status) => templatesPage(scope, { error, status, template: input }),
        )
      })
      .get(`${prefix}/templates/:template`, async ({ request, params }) => {
        const scope = await viewScope(d, request, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        return template ? editPage(scope, template) : notFound(scope.session)
      })
      .post(`${prefix}/templates/:template`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        if (!template) return notFound(scope.session)
        const input = { name: field(body, 'name'), body: field(body, 'body') }
        return orError(
          async () => {
            await updateTemplate(d.sql, d.tz, template.id, input, scope.accountId)
            await record(scope, request, server, 'template changed', { template_id: template.id })
            return redirect(`${scope.base}/templates`)
          },
          (error, status) => editPage(scope, template, { error, status, values: input }),
        )
      })
      .post(`${prefix}/templates/:template/delete`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        if (!template) return notFound(scope.session)
        return orError(
          async () => {
            await deleteTemplate(d.sql, template.id, scope.accountId)
            await record(scope, request, server, 'template deleted', { template_id: template.id, name: template.name })
            return redirect(`${scope.base}/templates`)
          },
          (error, status) => templatesPage(scope, { error, status }),
        )
      })
      .post(`${prefix}/templates/:template/bindings/:provider`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        if (!template || !TEMPLATE_RULES.has(params.provider)) return notFound(scope.session)
        const typed = {
          provider: params.provider,
          ref: field(body, 'ref'),
          language: field(body, 'language'),
          variables: field(body, 'variables'),
        }
        return orError(
          async () => {
            const binding = await setBinding(
              d.sql,
              d.tz,
              template.id,
              params.provider,
              { ref: typed.ref.trim(), language: typed.language.trim() || null, variables: variableNames(typed.variables) },
              scope.accountId,
            )
            await record(scope, request, server, 'template bound', {
              template_id: template.id,
              provider: binding.provider,
              ref: binding.ref,
              language: binding.language,
              variables: binding.variables,
            })
            return redirect(`${scope.base}/templates/${template.id}`)
          },
          (error, status) => editPage(scope, template, { error, status, binding: typed }),
        )
      })
      .post(`${prefix}/templates/:template/bindings/:provider/delete`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const template = await ownTemplate(scope, idParam(params.template))
        if (!template || !TEMPLATE_RULES.has(params.provider)) return notFound(scope.session)
        return orError(
          async () => {
            await deleteBinding(d.sql, template.id, params.provider, scope.accountId)
            await record(scope, request, server, 'template unbound', { template_id: template.id, provider: params.provider })
            return redirect(`${scope.base}/templates/${template.id}`)
          },
          (error, status) => editPage(scope, template, { error, status }),
        )
      })
      .post(`${prefix}/segments`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const input = { name: field(body, 'name'), tag: field(body, 'tag') }
        return orError(
          async () => {
            const segment = await createSegment(d.sql, d.tz, scope.accountId, input)
            await record(scope, request, server, 'segment created', { segment_id: segment.id, name: segment.name, tag: segment.tag })
            return redirect(`${scope.base}/templates`)
          },
          (error, status) => templatesPage(scope, { error, status, segment: input }),
        )
      })
      .post(`${prefix}/segments/:segment/delete`, async ({ request, body, params, server }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        if (scope instanceof Response) return scope
        const id = idParam(params.segment)
        if (id === null) return notFound(scope.session)
        return orError(
          async () => {
            await deleteSegment(d.sql, id, scope.accountId)
            await record(scope, request, server, 'segment deleted', { segment_id: id })
            return redirect(`${scope.base}/templates`)
          },
          (error, status) => (status === 404 ? notFound(scope.session) : templatesPage(scope, { error, status })),
        )
      })
  }
  return app
}
