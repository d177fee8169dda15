// Rendering an account template for a send (`template_id` + `variables`): the account's templates with
// their binding for the provider in use, read in one query, and each message's text and, when the
// template is bound, the approved template the provider is to be sent with the values in the bound
// order. A template without a binding for the provider in use goes as free-form text.

import type { Db } from '../../db/client'
import { badValue } from '../../http/errors'
import { placeholdersOf, renderTemplate, type TemplateValues } from '../../lib/template'
import { MAX_BODY_CHARS } from '../../lib/validate'
import type { StoredTemplate } from '../../providers/provider'

/** A variable's name in an error: as typed when plain, quoted (and cut) otherwise. */
const nameOf = (name: string) =>
  /^[A-Za-z_][\w-]{0,99}$/.test(name) ? name : JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}...` : name)

/** An account template as a send uses it, with its binding for the provider in use (or null). */
export type SendTemplate = {
  id: number
  body: string
  binding: { ref: string; language: string | null; variables: string[] } | null
}

/** The account's templates among `ids`, each with its binding for `provider`, in one query. */
export async function loadTemplates(sql: Db, accountId: number, ids: number[], provider: string): Promise<Map<number, SendTemplate>> {
  const rows = await sql<{ id: number; body: string; ref: string | null; language: string | null; variables: string[] | null }[]>`
    select t.id, t.body, b.ref, b.language, b.variables
    from templates t left join template_bindings b on b.template_id = t.id and b.provider = ${provider}
    where t.account_id = ${accountId} and t.id = any(${ids}::bigint[])`
  return new Map(
    rows.map((r) => [
      r.id,
      { id: r.id, body: r.body, binding: r.ref === null ? null : { ref: r.ref, language: r.language, variables: r.variables ?? [] } },
    ]),
  )
}

export type TemplateContent = { body: string; templateId: number; providerTemplate: StoredTemplate | null }

/**
 * A template message's content, or a 422 naming what is wrong: a template that is not the account's,
 * a variable the template does not use, one it uses that is missing, a rendered text that is empty or
 * over 4096 characters.
 */
export function templateContent(
  template: SendTemplate | undefined,
  input: { template_id: number; variables?: Record<string, string> },
  provider: string,
  at = '',
): TemplateContent {
  if (!template) throw badValue(`${at}template_id: template ${input.template_id} does not exist`)
  const values = input.variables ?? {}
  const uses: string[] = placeholdersOf(template.body)
  const used = `template ${template.id} uses: ${uses.length ? uses.join(', ') : 'none'}`
  for (const name of Object.keys(values)) {
    if (!uses.includes(name)) throw badValue(`${at}variables.${nameOf(name)}: not a placeholder of the template (${used})`)
  }
  const missing = uses.find((name) => !Object.hasOwn(values, name))
  if (missing !== undefined) throw badValue(`${at}variables.${missing}: missing (${used})`)
  const body = renderTemplate(template.body, values as TemplateValues)
  if (body.trim().length === 0) throw badValue(`${at}variables: the rendered text of template ${template.id} is empty`)
  if (body.length > MAX_BODY_CHARS) {
    throw badValue(`${at}variables: the rendered text of template ${template.id} is ${body.length} characters; at most ${MAX_BODY_CHARS}`)
  }
  const b = template.binding
  return {
    body,
    templateId: template.id,
    providerTemplate: b && { provider, ref: b.ref, language: b.language, variables: b.variables.map((name) => values[name] ?? '') },
  }
}

/** The account's templates bound to an approved template of `provider`, by name: what may go outside the 24-hour window. */
export async function boundTemplates(sql: Db, accountId: number, provider: string): Promise<{ id: number; name: string; body: string }[]> {
  const rows = await sql<{ id: number; name: string; body: string }[]>`
    select t.id, t.name, t.body from templates t join template_bindings b on b.template_id = t.id and b.provider = ${provider}
    where t.account_id = ${accountId} order by t.name, t.id`
  return rows.map((r) => ({ ...r, id: Number(r.id) }))
}
