// Templates: text with {{placeholders}} filled from a contact's fields. A template changes or goes only
// while no running campaign uses it; its bindings to providers' approved templates are bindings.ts's,
// rendering a template for a send is render.ts's.

import type { Db, Sql } from '../../db/client'
import { ApiError, badValue } from '../../http/errors'
import { requireText } from '../../http/values'
import { MAX_BODY_CHARS, pageOf, type Page } from '../../lib/validate'
import { PLACEHOLDERS, unknownPlaceholders } from '../../lib/template'
import { requireAccount } from '../accounts/service'
import { bindingsOf, requireBindingsFit, requireNotRunning, type BindingView } from './bindings'
import type { CreateTemplateBody } from './model'

/** An id that can be a row of ours: ids out of bigint range would fail in the database instead. */
export const isRowId = (id: number) => Number.isSafeInteger(id) && id > 0

function requireKnownPlaceholders(body: string): void {
  const unknown = unknownPlaceholders(body)
  if (unknown.length > 0) {
    throw badValue(
      `body: unknown placeholder ${unknown.map((p) => `{{${p}}}`).join(', ')}; use ${PLACEHOLDERS.map((p) => `{{${p}}}`).join(', ')}`,
    )
  }
}

type TemplateRow = { id: number; name: string; body: string; created_at: Date }
const templateView = (row: TemplateRow, bindings: BindingView[]) => ({ ...row, bindings })
type TemplateView = ReturnType<typeof templateView>
/** Templates with their bindings (one more query for all of them). */
async function withBindings(sql: Db, rows: TemplateRow[]): Promise<TemplateView[]> {
  const bindings = await bindingsOf(
    sql,
    rows.map((r) => r.id),
  )
  return rows.map((r) => templateView(r, bindings.get(r.id)!))
}

export async function createTemplate(sql: Db, accountId: number, input: CreateTemplateBody): Promise<TemplateView> {
  const name = requireText(input.name, 'name')
  if (input.body.trim().length === 0) throw badValue('body: must not be empty')
  if (input.body.length > MAX_BODY_CHARS) throw badValue(`body: must be at most ${MAX_BODY_CHARS} characters`)
  requireKnownPlaceholders(input.body)
  await requireAccount(sql, accountId)
  const [row] = await sql<TemplateRow[]>`
    insert into templates (account_id, name, body) values (${accountId}, ${name}, ${input.body})
    returning id, name, body, created_at`
  return templateView(row!, [])
}

export async function listTemplates(sql: Sql, accountId: number, p: Page) {
  await requireAccount(sql, accountId)
  const [rows, [count]] = await Promise.all([
    sql<TemplateRow[]>`
      select id, name, body, created_at from templates where account_id = ${accountId}
      order by created_at desc, id desc limit ${p.limit} offset ${p.offset}`,
    sql<{ n: number }[]>`select count(*)::int as n from templates where account_id = ${accountId}`,
  ])
  return pageOf(await withBindings(sql, rows), count!.n, p)
}

export const ofAccount = (sql: Db, accountId: number | undefined) => (accountId === undefined ? sql`` : sql`and account_id = ${accountId}`)

export async function getTemplate(sql: Sql, id: number, accountId?: number): Promise<TemplateView> {
  const [row] = isRowId(id)
    ? await sql<TemplateRow[]>`select id, name, body, created_at from templates where id = ${id} ${ofAccount(sql, accountId)}`
    : []
  if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
  return (await withBindings(sql, [row]))[0]!
}

/**
 * A template changes only while no scheduled, sending or paused campaign uses it, and its text keeps
 * the placeholders its bindings use. `accountId`: only a template of that account (else 404), for the dashboard.
 */
export async function updateTemplate(
  sql: Sql,
  id: number,
  input: { name?: string; body?: string },
  accountId?: number,
): Promise<TemplateView> {
  const name = input.name === undefined ? undefined : requireText(input.name, 'name')
  if (input.body !== undefined) {
    if (input.body.trim().length === 0) throw badValue('body: must not be empty')
    if (input.body.length > MAX_BODY_CHARS) throw badValue(`body: must be at most ${MAX_BODY_CHARS} characters`)
    requireKnownPlaceholders(input.body)
  }
  return sql.begin(async (tx) => {
    const [row] = isRowId(id)
      ? await tx<TemplateRow[]>`select id from templates where id = ${id} ${ofAccount(tx, accountId)} for update`
      : []
    if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
    await requireNotRunning(tx, id)
    if (input.body !== undefined) await requireBindingsFit(tx, id, input.body)
    const [updated] = await tx<TemplateRow[]>`
      update templates set name = coalesce(${name ?? null}, name), body = coalesce(${input.body ?? null}, body)
      where id = ${id} returning id, name, body, created_at`
    return (await withBindings(tx, [updated!]))[0]!
  })
}

/** A template is deleted only when no campaign refers to it. */
export async function deleteTemplate(sql: Sql, id: number, accountId?: number): Promise<{ deleted: true }> {
  return sql.begin(async (tx) => {
    const [row] = isRowId(id) ? await tx`select id from templates where id = ${id} ${ofAccount(tx, accountId)} for update` : []
    if (!row) throw new ApiError('NOT_FOUND', `template ${id} not found`)
    const [used] = await tx`select id from campaigns where template_id = ${id} limit 1`
    if (used) throw new ApiError('CONFLICT', `template ${id} is used by campaign ${used.id}`)
    await tx`delete from templates where id = ${id}`
    return { deleted: true as const }
  })
}
