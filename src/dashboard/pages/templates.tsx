// Templates and segments, under the campaign engine's rules (its service decides: unknown
// placeholders are refused, a template in use by a running campaign does not change, one any
// campaign refers to is not deleted, nor is such a segment). A segment shows its size now.

import { Elysia } from 'elysia'
import { h } from '../jsx'
import { Csrf, Layout } from '../layout'
import { type Dashboard, field, notFound, orError, redirect, respond } from '../context'
import { changeScope, idParam, titleOf, viewScope, type Scope } from './account-scope'
import { audit } from '../../modules/users/service'
import { PLACEHOLDERS } from '../../lib/template'
import type { Template } from '../../modules/campaigns/model'
import {
  createSegment,
  createTemplate,
  deleteSegment,
  deleteTemplate,
  getTemplate,
  listSegments,
  listTemplates,
  updateTemplate,
} from '../../modules/campaigns/service'

const LIST = { limit: 200, offset: 0 }
const placeholderHelp = `Placeholders: ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}.`

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
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Text</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {templates.items.map((t) => (
                <tr>
                  <td>{t.name}</td>
                  <td class="pre">{t.body}</td>
                  <td>{t.created_at}</td>
                  <td>
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
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {templates.items.length === 0 ? <p class="muted">No templates yet.</p> : null}
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
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Tag</th>
                <th scope="col">Contacts</th>
                <th scope="col">Created</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {segments.items.map((s) => (
                <tr>
                  <td>{s.name}</td>
                  <td>{s.tag}</td>
                  <td class="segment-size">{s.contact_count.toLocaleString('en')}</td>
                  <td>{s.created_at}</td>
                  <td>
                    <form method="post" action={`${base}/segments/${s.id}/delete`}>
                      <Csrf session={session} />
                      <button class="secondary" type="submit" aria-label={`Delete segment ${s.name}`}>
                        Delete
                      </button>
                    </form>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {segments.items.length === 0 ? <p class="muted">No segments yet.</p> : null}
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
    options: { error?: string; status?: number; values?: { name: string; body: string } } = {},
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
        <p>
          <a href={`${scope.base}/templates`}>Back to templates and segments</a>
        </p>
      </Layout>,
      options.status ?? 200,
    )
  }

  const app = new Elysia({ prefix: '/dashboard' })
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
