// Bindings of account templates to providers' approved templates: for Twilio a Content SID, for Meta
// a template name and language, each with the order of its variables taken from the account
// template's placeholders. One binding per provider per template: a template can be ready for Twilio
// and for Meta at once, and the provider in use picks its own (a template without one for it goes as
// free-form text). Like the template's text, a binding does not change while a scheduled, sending or
// paused campaign uses the template, so one campaign sends one thing.

import type { Db, Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { placeholdersOf } from '../../lib/template'
import { TEMPLATE_RULES } from '../../providers/registry'
import type { TemplateRules } from '../../providers/provider'
import { type BindingBody } from './model'

const MAX_VARIABLES = 100
// An ISO 639 language, optionally with a region: en, id, en_US, pt_BR, zh_CN (the codes Meta lists).
const LANGUAGE = /^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/

type BindingRow = { template_id: number; provider: string; ref: string; language: string | null; variables: string[]; updated_at: Date }
const bindingView = (r: BindingRow) => ({
  provider: r.provider,
  ref: r.ref,
  language: r.language,
  variables: r.variables,
  updated_at: r.updated_at,
})
export type BindingView = ReturnType<typeof bindingView>

/** The bindings of these templates, by template id (each list by provider name). */
export async function bindingsOf(sql: Db, templateIds: number[]): Promise<Map<number, BindingView[]>> {
  const out = new Map<number, BindingView[]>(templateIds.map((id) => [id, []]))
  if (templateIds.length === 0) return out
  const rows = await sql<BindingRow[]>`
    select template_id, provider, ref, language, variables, updated_at from template_bindings
    where template_id = any(${templateIds}::bigint[]) order by provider`
  for (const r of rows) out.get(r.template_id)!.push(bindingView(r))
  return out
}

function rulesOf(provider: string): TemplateRules {
  const rules = TEMPLATE_RULES.get(provider)
  if (!rules)
    throw badValue(`provider: must be one of ${[...TEMPLATE_RULES.keys()].join(', ')} (the providers that send approved templates)`)
  return rules
}

/** A template of the account (any account for the admin API), locked for the caller's transaction. */
async function lockTemplate(tx: Db, id: number, accountId: number | undefined): Promise<{ id: number; body: string }> {
  const [row] =
    Number.isSafeInteger(id) && id > 0
      ? await tx<{ id: number; body: string }[]>`
          select id, body from templates where id = ${id} ${accountId === undefined ? tx`` : tx`and account_id = ${accountId}`} for update`
      : []
  if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
  return row
}

/** A template used by a scheduled, sending or paused campaign keeps its text and its bindings. */
export async function requireNotRunning(tx: Db, id: number): Promise<void> {
  const [busy] = await tx`select id from campaigns where template_id = ${id} and status in ('scheduled', 'sending', 'paused') limit 1`
  if (busy) throw new ApiError('CONFLICT', `template ${id} is used by running campaign ${busy.id}`)
}

const listed = (names: string[]) => (names.length ? names.join(', ') : 'none')

/** Every variable of `variables` is a placeholder `body` uses, or a 422 naming the first that is not. */
export function requireVariablesOf(body: string, variables: string[], templateId: number, field = 'variables'): void {
  const placeholders: string[] = placeholdersOf(body)
  variables.forEach((name, i) => {
    if (!placeholders.includes(name)) {
      throw badValue(`${field}[${i}]: "${name}" is not a placeholder of template ${templateId} (it uses: ${listed(placeholders)})`)
    }
  })
}

/** PUT /admin/v1/templates/{id}/bindings/{provider}: sets (or replaces) the template's binding for `provider`. */
export async function setBinding(
  sql: Sql,
  templateId: number,
  provider: string,
  input: BindingBody,
  accountId?: number,
): Promise<BindingView> {
  const rules = rulesOf(provider)
  const refError = rules.refError(input.ref)
  if (refError) throw badValue(`ref: ${refError}`)
  const language = input.language === undefined || input.language === null || input.language === '' ? null : input.language
  if (rules.language === 'none' && language !== null) throw badValue(`language: ${provider} templates have no language code`)
  if (rules.language === 'required' && language === null) throw badValue(`language: required for ${provider} templates (e.g. en_US, id)`)
  if (language !== null && !LANGUAGE.test(language)) throw badValue('language: must be a language code such as en_US or id')
  const variables = input.variables ?? []
  if (variables.length > MAX_VARIABLES) throw badValue(`variables: at most ${MAX_VARIABLES}`)

  return sql.begin(async (tx) => {
    const template = await lockTemplate(tx, templateId, accountId)
    requireVariablesOf(template.body, variables, template.id)
    await requireNotRunning(tx, template.id)
    const [row] = await tx<BindingRow[]>`
      insert into template_bindings (template_id, provider, ref, language, variables)
      values (${template.id}, ${provider}, ${input.ref}, ${language}, ${variables}::text[])
      on conflict (template_id, provider) do update
        set ref = excluded.ref, language = excluded.language, variables = excluded.variables, updated_at = now()
      returning template_id, provider, ref, language, variables, updated_at`
    return bindingView(row!)
  })
}

/** DELETE /admin/v1/templates/{id}/bindings/{provider}: the template goes as free-form text with that provider again. */
export async function deleteBinding(sql: Sql, templateId: number, provider: string, accountId?: number): Promise<{ deleted: true }> {
  rulesOf(provider)
  return sql.begin(async (tx) => {
    const template = await lockTemplate(tx, templateId, accountId)
    await requireNotRunning(tx, template.id)
    const [row] = await tx`delete from template_bindings where template_id = ${template.id} and provider = ${provider} returning 1`
    if (!row) throw new ApiError('NOT_FOUND', `template ${template.id} has no ${provider} binding`)
    return { deleted: true as const }
  })
}

/** A new text for a bound template must keep the placeholders its bindings use. */
export async function requireBindingsFit(tx: Db, templateId: number, body: string): Promise<void> {
  const placeholders: string[] = placeholdersOf(body)
  const rows = await tx<{ provider: string; variables: string[] }[]>`
    select provider, variables from template_bindings where template_id = ${templateId} order by provider`
  for (const r of rows) {
    const lost = r.variables.filter((v) => !placeholders.includes(v))
    if (lost.length > 0) {
      throw badValue(
        `body: the ${r.provider} binding uses ${[...new Set(lost)].map((v) => `{{${v}}}`).join(', ')}; keep it in the text, or change the binding first`,
      )
    }
  }
}
