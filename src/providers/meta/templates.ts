// A Meta sender's WhatsApp templates, in its WhatsApp Business Account (issue 30): listing them
// (`GET {META_API_BASE}/{waba-id}/message_templates`, every page, following the `after` cursor while
// the answer has a `paging.next`) and submitting a new one (`POST` to the same edge, the Cloud API's
// template JSON as given; Meta answers its id, status and category). The access token goes as bearer,
// never in a URL: the next page is asked for with the cursor, not by following Meta's `paging.next`
// (which would carry the token). Nothing here throws; no answer carries a secret (providerText).

import { del, errorCodeOf, failure, get, isObject, post, type Exchange } from '../http'
import type { ListedTemplate, TemplateChangeAnswer, TemplateListing, TemplateSubmission, WaTemplateSupport } from '../provider'
import { metaSecrets, type MetaSettings } from './settings'

/** What the listing asks for of each template. */
export const TEMPLATE_FIELDS = 'name,language,category,status,components,parameter_format,quality_score,rejected_reason,id'
/** Templates per page (Meta's pages hold up to 100 or so; components make a page up to a few hundred KiB). */
export const TEMPLATE_PAGE = 100
/** Pages read at most: a WhatsApp Business Account holds up to 6,000 templates (names × languages). */
const MAX_PAGES = 100
/** A page of templates may be far bigger than a message's answer. */
const PAGE_BYTES = 4 * 1024 * 1024

/**
 * Meta's error_subcode refusing a template whose name and language are held: "New English (US) content
 * can't be added while the existing English (US) content is being deleted" (a deletion of less than 30 days).
 */
export const NAME_TAKEN_SUBCODE = 2388023

const edge = (settings: MetaSettings) => `${settings.apiBase}/${encodeURIComponent(settings.businessAccountId)}/message_templates`

const headersOf = (settings: MetaSettings) => ({ authorization: `Bearer ${settings.accessToken}`, accept: 'application/json' })

/** Meta's error object of an answer: its code and message, or the HTTP status. */
function refusal(status: number, answer: Record<string, unknown> | null): { code: number | null; text: string; subcode: number | null } {
  const error = isObject(answer?.error) ? answer.error : {}
  const data = isObject(error.error_data) ? error.error_data : {}
  const message = typeof error.message === 'string' ? error.message : `HTTP ${status}`
  const details = typeof data.details === 'string' && data.details !== message ? `: ${data.details}` : ''
  const user = typeof error.error_user_msg === 'string' ? ` (${error.error_user_msg})` : ''
  return { code: errorCodeOf(error.code), subcode: errorCodeOf(error.error_subcode), text: `${message}${details}${user}` }
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null)

/** One listed template in the provider-neutral shape, or null when it lacks what a template is. */
function templateOf(item: unknown): ListedTemplate | null {
  if (!isObject(item)) return null
  const id = typeof item.id === 'number' ? String(item.id) : text(item.id)
  const name = text(item.name)
  const language = text(item.language)
  if (!id || !name || !language) return null
  const quality = isObject(item.quality_score) ? text(item.quality_score.score) : null
  const reason = text(item.rejected_reason)
  return {
    ref: id,
    name,
    language,
    category: text(item.category) ?? '',
    status: text(item.status) ?? '',
    parameterFormat: text(item.parameter_format),
    components: Array.isArray(item.components) ? item.components.filter(isObject) : [],
    quality,
    reason: reason && reason.toUpperCase() !== 'NONE' ? reason : null,
  }
}

/** Every template of the sender's WhatsApp Business Account, page after page. */
export async function listMetaTemplates(
  settings: MetaSettings,
  context: { timeoutMs: number; clock: Parameters<typeof get>[1]['clock'] },
): Promise<TemplateListing> {
  const secrets = metaSecrets(settings)
  const templates: ListedTemplate[] = []
  let after: string | null = null
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ fields: TEMPLATE_FIELDS, limit: String(TEMPLATE_PAGE) })
    if (after) query.set('after', after)
    const answer = await get(`${edge(settings)}?${query}`, {
      headers: headersOf(settings),
      timeoutMs: context.timeoutMs,
      clock: context.clock,
      maxBytes: PAGE_BYTES,
    })
    if (!answer.ok) {
      const why = answer.reason === 'timeout' ? 'Meta did not answer in time' : `could not reach Meta${answer.hint}`
      return { ok: false, detail: failure(secrets, null, why).errorMessage }
    }
    if (answer.status !== 200 || !answer.answer || !Array.isArray(answer.answer.data)) {
      const { code, text } = refusal(answer.status, answer.answer)
      const said = answer.status === 200 ? 'an answer without its templates (data)' : text
      return { ok: false, detail: failure(secrets, code, `Meta answered HTTP ${answer.status}: ${said}`).errorMessage }
    }
    for (const item of answer.answer.data) {
      const template = templateOf(item)
      if (template) templates.push(template)
    }
    const paging = isObject(answer.answer.paging) ? answer.answer.paging : {}
    const cursors = isObject(paging.cursors) ? paging.cursors : {}
    const next = text(cursors.after)
    // Meta gives `paging.next` only while a page follows; the cursor alone is there on the last page too.
    if (!text(paging.next) || !next || next === after) return { ok: true, templates }
    after = next
  }
  return { ok: false, detail: `more than ${MAX_PAGES} pages of ${TEMPLATE_PAGE} templates: not read` }
}

/** Submits a template to the sender's WhatsApp Business Account for approval. */
export async function submitMetaTemplate(
  settings: MetaSettings,
  definition: Record<string, unknown>,
  context: { timeoutMs: number; clock: Parameters<typeof post>[1]['clock'] },
): Promise<TemplateSubmission> {
  const secrets = metaSecrets(settings)
  const answer = await post(edge(settings), {
    headers: { ...headersOf(settings), 'content-type': 'application/json' },
    body: JSON.stringify(definition),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  if (!answer.ok) {
    const why = answer.reason === 'timeout' ? 'Meta did not answer in time' : `could not reach Meta${answer.hint}`
    return { ok: false, code: null, detail: failure(secrets, null, why).errorMessage, throttled: false }
  }
  const body = answer.answer
  const id = body && (typeof body.id === 'number' ? String(body.id) : text(body.id))
  if (answer.status === 200 && body && id) {
    return { ok: true, ref: id, status: text(body.status) ?? 'PENDING', category: text(body.category) }
  }
  const { code, subcode, text: said } = refusal(answer.status, body)
  return {
    ok: false,
    code,
    detail: failure(secrets, code, `Meta answered HTTP ${answer.status}: ${said}`).errorMessage,
    // Graph's "Application request limit reached" (4), or HTTP 429 whatever the code: try again later.
    throttled: answer.status === 429 || code === 4,
    nameTaken: subcode === NAME_TAKEN_SUBCODE,
  }
}

/** Meta's answer to an edit or a deletion (`{success: true}`), or its refusal in the service's words. */
function changeAnswer(settings: MetaSettings, answer: Exchange, what: string): TemplateChangeAnswer {
  const secrets = metaSecrets(settings)
  if (!answer.ok) {
    const why = answer.reason === 'timeout' ? `Meta did not answer in time (${what})` : `could not reach Meta${answer.hint} (${what})`
    return { ok: false, code: null, detail: failure(secrets, null, why).errorMessage, throttled: false }
  }
  if (answer.status === 200 && answer.answer?.success === true) return { ok: true }
  const { code, text: said } = refusal(answer.status, answer.answer)
  return {
    ok: false,
    code,
    detail: failure(secrets, code, `Meta answered HTTP ${answer.status} (${what}): ${said}`).errorMessage,
    throttled: answer.status === 429 || code === 4,
  }
}

/**
 * Edits a template: `POST {META_API_BASE}/{template-id}` with its new `components` (and `category`, for
 * a rejected or paused one). Meta takes edits of approved, rejected and paused templates only, an
 * approved one's at most once a day and ten times a month, never its name or language, and reviews it
 * again (it is PENDING until then).
 */
export async function editMetaTemplate(
  settings: MetaSettings,
  ref: string,
  change: Record<string, unknown>,
  context: { timeoutMs: number; clock: Parameters<typeof post>[1]['clock'] },
): Promise<TemplateChangeAnswer> {
  const answer = await post(`${settings.apiBase}/${encodeURIComponent(ref)}`, {
    headers: { ...headersOf(settings), 'content-type': 'application/json' },
    body: JSON.stringify(change),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  return changeAnswer(settings, answer, `editing template ${ref}`)
}

/**
 * Deletes one template: `DELETE {META_API_BASE}/{waba-id}/message_templates?name=…&hsm_id=…`. With its
 * id (`hsm_id`) Meta deletes that language only; by name alone it would delete every language of the
 * name, so the id is always given. Meta keeps the name from being used again for 30 days.
 */
export async function removeMetaTemplate(
  settings: MetaSettings,
  template: { ref: string; name: string },
  context: { timeoutMs: number; clock: Parameters<typeof post>[1]['clock'] },
): Promise<TemplateChangeAnswer> {
  const query = new URLSearchParams({ name: template.name, hsm_id: template.ref })
  const answer = await del(`${edge(settings)}?${query}`, {
    headers: headersOf(settings),
    timeoutMs: context.timeoutMs,
    clock: context.clock,
  })
  return changeAnswer(settings, answer, `deleting template ${template.ref}`)
}

export const metaTemplates: WaTemplateSupport<MetaSettings> = {
  unreachable: (settings) =>
    settings.businessAccountId
      ? null
      : "it has no WhatsApp Business Account id (a Meta sender's business_account_id; the default sender's META_BUSINESS_ACCOUNT_ID)",
  list: listMetaTemplates,
  submit: submitMetaTemplate,
  edit: editMetaTemplate,
  remove: removeMetaTemplate,
}
