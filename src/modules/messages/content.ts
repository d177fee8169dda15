// What a message carries: a free-form `body` (with optional media), or, as an extension of the spec,
// an account template (`template_id`) filled with `variables`. A template message records its
// rendered text as `body` (for lists and the dashboard); when the template is bound to an approved
// template of the provider in use, the provider is asked for that template with the values in the
// bound order, and the message records what was asked (`provider_template`), so a recovered hand-off
// sends the same. A template without a binding for the provider in use goes as free-form text.

import type { Db } from '../../db/client'
import { badShape, badValue } from '../../http/errors'
import { placeholdersOf, renderTemplate, type TemplateValues } from '../../lib/template'
import { MAX_BODY_CHARS } from '../../lib/validate'
import type { OutgoingMessage } from '../../providers/provider'

/** A variable's name in an error: as typed when plain, quoted (and cut) otherwise. */
const nameOf = (name: string) =>
  /^[A-Za-z_][\w-]{0,99}$/.test(name) ? name : JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}...` : name)

/** What a message asked its provider to send instead of free-form text (messages.provider_template). */
export type StoredTemplate = { provider: string; ref: string; language: string | null; variables: string[] }

/** The fields of a send or of one bulk entry that say what it carries. */
type ContentFields = { body?: string; media_url?: string; template_id?: number; variables?: Record<string, string> }

/**
 * The shape rules (400): exactly one of `body` and `template_id`; `variables` only with
 * `template_id`; no `media_url` with a template (an approved template brings its own media).
 * `at`: the entry's path in a bulk (`messages[3].`), empty for a send.
 */
export function requireContentShape(input: ContentFields, at = ''): void {
  if (input.body !== undefined && input.template_id !== undefined) throw badShape(`${at}body: give either body or template_id, not both`)
  if (input.body === undefined && input.template_id === undefined) throw badShape(`${at}body: is required (or template_id)`)
  if (input.variables !== undefined && input.template_id === undefined) throw badShape(`${at}variables: only with template_id`)
  if (input.media_url !== undefined && input.template_id !== undefined) throw badShape(`${at}media_url: not with template_id`)
}

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

/** A recorded message as its provider gets it: the approved template it was bound to, or its text. */
export function outgoingOf(
  m: { id: number; phone: string; body: string; media_url: string | null; provider_template: StoredTemplate | null },
  provider: string,
): OutgoingMessage {
  const t = m.provider_template
  // Recorded for another provider (PROVIDER changed before a recovered hand-off): its rendered text.
  if (t && t.provider === provider) {
    return { id: m.id, to: m.phone, body: m.body, template: { ref: t.ref, language: t.language, variables: t.variables } }
  }
  return { id: m.id, to: m.phone, body: m.body, mediaUrl: m.media_url }
}
