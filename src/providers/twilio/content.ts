// Reply buttons and lists through Twilio: WhatsApp's interactive messages go through Twilio's Content
// API, as Content templates (twilio/quick-reply, twilio/list-picker) sent by their ContentSid. Each
// template has placeholders only (`{{1}}` the body, then each button's title and id, or the list's
// button text and each row's title, id and description), so one template per shape (3 of buttons, 10
// of lists) serves every message, its text given in ContentVariables. A template is created the first
// time its shape is sent (POST {TWILIO_CONTENT_API_BASE}/v1/Content) and kept: in memory, and in
// provider_contents by account and shape, so other processes and restarts reuse it.

import type { Sql } from '../../db/client'
import type { ListRow, RichContent } from '../provider'

type Interactive = Extract<RichContent, { type: 'button' | 'list' }>

/** A Content template's definition and the variables that fill it for one message. */
export type ContentRequest = { shape: string; definition: Record<string, unknown>; variables: Record<string, string> }

/** The template of an interactive message's shape, and its variables. */
export function contentRequest(content: Interactive): ContentRequest {
  const values: string[] = [content.body]
  const slot = (value: string) => {
    values.push(value)
    return `{{${values.length}}}`
  }
  let shape: string
  let types: Record<string, unknown>
  if (content.type === 'button') {
    shape = `quick-reply:${content.buttons.length}`
    types = { 'twilio/quick-reply': { body: '{{1}}', actions: content.buttons.map((b) => ({ title: slot(b.title), id: slot(b.id) })) } }
  } else {
    // A list-picker has no sections: their rows go in order.
    const rows: ListRow[] = content.sections.flatMap((s) => s.rows)
    const button = slot(content.button)
    shape = `list-picker:${rows.length}`
    types = {
      'twilio/list-picker': {
        body: '{{1}}',
        button,
        items: rows.map((r) => ({ item: slot(r.title), id: slot(r.id), description: slot(r.description ?? '') })),
      },
    }
  }
  const variables = Object.fromEntries(values.map((v, i) => [String(i + 1), v]))
  // The template's sample values are the first message's: Twilio asks for one per placeholder.
  const definition = { friendly_name: `messaging_api_${shape.replace(':', '_')}`, language: 'en', variables, types }
  return { shape, definition, variables }
}

/** Reads and keeps created templates' SIDs by (account, shape). */
export function contentStore(sql: Sql, account: string) {
  const known = new Map<string, string>()
  return {
    async get(shape: string): Promise<string | null> {
      const cached = known.get(shape)
      if (cached) return cached
      const [row] = await sql<{ ref: string }[]>`
        select ref from provider_contents where provider = 'twilio' and account = ${account} and digest = ${shape}`
      if (row) known.set(shape, row.ref)
      return row?.ref ?? null
    },
    /** Keeps a created template; one kept already by another process wins (both work; one is used from now on). */
    async put(shape: string, ref: string): Promise<string> {
      const [row] = await sql<{ ref: string }[]>`
        with added as (
          insert into provider_contents (provider, account, digest, ref) values ('twilio', ${account}, ${shape}, ${ref})
          on conflict do nothing returning ref
        )
        select ref from added
        union all
        select ref from provider_contents where provider = 'twilio' and account = ${account} and digest = ${shape}
        limit 1`
      const kept = row?.ref ?? ref
      known.set(shape, kept)
      return kept
    },
  }
}
