// The integrator's WhatsApp templates (issue 30): GET /api/v1/templates and GET /api/v1/templates/{id},
// the templates the account may use (catalog.ts usableTemplate(s)), each with its sender and the
// parameters a send must fill (parameters.ts). Another account's template is as unknown as a missing one.

import { t } from 'elysia'
import type { Db } from '../../db/client'
import type { Deps } from '../../deps'
import { apiRoutes } from '../../http/groups'
import { ApiError, badValue, ok } from '../../http/errors'
import { Id, listOf } from '../../http/models'
import { envelopeOf, errorsOf } from '../../http/openapi'
import { readSql } from '../../http/reads'
import { page } from '../../http/values'
import { formatTimestamp } from '../../lib/time'
import { TEMPLATE_STATUSES, usableTemplate, usableTemplates, type TemplateStatus, type WaTemplate } from './catalog'
import { parametersOf } from './parameters'
import { WaTemplateListQuery, WaTemplateView } from './wa-model'

const tags = ['Templates']

/** The numbers of the senders the templates belong to, by id. */
async function senderNumbers(sql: Db, templates: WaTemplate[]): Promise<Map<number, string>> {
  const ids = [...new Set(templates.map((row) => row.sender_id).filter((id) => id !== null))]
  if (ids.length === 0) return new Map()
  const rows = await sql<{ id: number; number: string }[]>`select id, number from senders where id = any(${ids}::bigint[])`
  return new Map(rows.map((r) => [Number(r.id), r.number]))
}

function view(t: WaTemplate, numbers: Map<number, string>, timeZone: string): WaTemplateView {
  return {
    id: t.id,
    name: t.name,
    language: t.language,
    category: t.category,
    status: t.status,
    reason: t.reason,
    quality: t.quality,
    parameter_format: t.parameter_format,
    sender: t.sender_id === null ? null : { id: t.sender_id, number: numbers.get(t.sender_id) ?? '' },
    parameters: parametersOf(t),
    components: t.components,
    updated_at: formatTimestamp(t.updated_at, timeZone)!,
  }
}

export async function listWaTemplates(
  sql: Parameters<typeof usableTemplates>[0],
  accountId: number,
  query: WaTemplateListQuery,
  timeZone: string,
) {
  const p = page(query)
  if (query.status !== undefined && !(TEMPLATE_STATUSES as readonly string[]).includes(query.status))
    throw badValue(`status: must be one of ${TEMPLATE_STATUSES.join(', ')}`)
  const list = await usableTemplates(
    sql,
    accountId,
    { status: query.status as TemplateStatus | undefined, name: query.name, language: query.language },
    p,
  )
  const numbers = await senderNumbers(sql, list.items)
  return { ...list, items: list.items.map((row) => view(row, numbers, timeZone)) }
}

export async function getWaTemplate(sql: Db, accountId: number, id: number, timeZone: string) {
  const template = await usableTemplate(sql, accountId, id)
  if (!template) throw new ApiError('NOT_FOUND', `template ${id} not found`)
  return view(template, await senderNumbers(sql, [template]), timeZone)
}

const PARAMETERS_RULE =
  '`parameters` says what a send of it must fill, and nothing else: each `body[].key` in `variables` (`"1"`, `"2"`... or the ' +
  'names of a named template), the `header` (its text parameter, or the media of an image, video or document header) and each ' +
  "`buttons[]` by its `index` (a URL button's suffix, a coupon code, an authentication template's code), with Meta's examples."

export const templatesApi = (deps: Deps) =>
  apiRoutes()
    .get(
      '/templates',
      async ({ query, principal, request }) =>
        ok(await listWaTemplates(await readSql(deps, request), principal.accountId, query, deps.config.timezone)),
      {
        query: WaTemplateListQuery,
        response: { 200: envelopeOf(listOf(WaTemplateView)), ...errorsOf(400, 401, 422) },
        detail: {
          tags,
          summary: 'List WhatsApp templates (extension)',
          description:
            "The WhatsApp templates the account may send: its senders' (or, for an account without senders of its own, the " +
            "deployment's), newest first, each with its status (only `approved` sends), category, quality and sender. `status`, " +
            '`name` and `language` keep those only (422 for an unknown status); `limit`/`offset` with `has_more`, as the other lists. ' +
            PARAMETERS_RULE,
        },
      },
    )
    .get(
      '/templates/:id',
      async ({ params, principal }) => ok(await getWaTemplate(deps.sql, principal.accountId, params.id, deps.config.timezone)),
      {
        params: t.Object({ id: Id('template', "The template id (a send's `template_id`)") }),
        response: { 200: envelopeOf(WaTemplateView), ...errorsOf(400, 401, 404) },
        detail: {
          tags,
          summary: 'One WhatsApp template (extension)',
          description:
            "By its `id` (the `template_id` of a send). A template the account may not use (another account's sender's) is 404 " +
            '`NOT_FOUND`, as a missing one. ' +
            PARAMETERS_RULE,
        },
      },
    )
