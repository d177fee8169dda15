// A Meta sender's pricing analytics (issue 31's reconciliation): what Meta itself counted and charged
// for the messages of a WhatsApp Business Account, read from the business account's node with the
// `pricing_analytics` field:
//   GET {META_API_BASE}/{waba-id}?fields=pricing_analytics.start(S).end(E).granularity(HALF_HOUR)
//       .phone_numbers(["62811…"]).dimensions(["PRICING_CATEGORY","PRICING_TYPE"])
// answered `{pricing_analytics: {data: [{data_points: [{start, end, pricing_category, pricing_type,
// volume, cost}]}], paging}}`. Half-hour buckets, not DAILY: Meta's days are UTC days, and the report's
// days are the deployment's (TIMEZONE), so the buckets are cut into days here. While the answer has a
// `paging.next`, the next page is asked for with `.after(cursor)` in the same field expansion (the
// token stays a bearer header, never in a URL). Nothing here throws; no answer carries a secret.

import { errorCodeOf, failure, get, isObject } from '../http'
import type { PricingAnalytics, PricingAnalyticsSupport, PricingPoint } from '../provider'
import { metaSecrets, type MetaSettings } from './settings'

/** Pages read at most (a month of half-hour buckets by category and type is a few thousand points). */
const MAX_PAGES = 200
const PAGE_BYTES = 4 * 1024 * 1024

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null)
const num = (v: unknown): number | null => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v
  return typeof n === 'number' && Number.isFinite(n) ? n : null
}

/** The field expansion asked for: the period, half-hour buckets, the number (when known), by category and type. */
export function pricingField(period: { start: number; end: number; phone: string | null }, after: string | null): string {
  const parts = [
    'pricing_analytics',
    `start(${period.start})`,
    `end(${period.end})`,
    'granularity(HALF_HOUR)',
    ...(period.phone ? [`phone_numbers(${JSON.stringify([period.phone])})`] : []),
    `dimensions(${JSON.stringify(['PRICING_CATEGORY', 'PRICING_TYPE'])})`,
    ...(after ? [`after(${after})`] : []),
  ]
  return parts.join('.')
}

function pointOf(item: unknown): PricingPoint | null {
  if (!isObject(item)) return null
  const start = num(item.start)
  const end = num(item.end)
  const volume = num(item.volume)
  const category = text(item.pricing_category)
  if (start === null || end === null || volume === null || !category) return null
  return {
    start,
    end,
    category: category.toUpperCase(),
    type: (text(item.pricing_type) ?? '').toUpperCase(),
    volume,
    cost: num(item.cost) ?? 0,
  }
}

export async function readPricingAnalytics(
  settings: MetaSettings,
  period: { start: number; end: number; phone: string | null },
  context: { timeoutMs: number; clock: Parameters<typeof get>[1]['clock'] },
): Promise<PricingAnalytics> {
  const secrets = metaSecrets(settings)
  const points: PricingPoint[] = []
  let after: string | null = null
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ fields: pricingField(period, after) })
    const answer = await get(`${settings.apiBase}/${encodeURIComponent(settings.businessAccountId)}?${query}`, {
      headers: { authorization: `Bearer ${settings.accessToken}`, accept: 'application/json' },
      timeoutMs: context.timeoutMs,
      clock: context.clock,
      maxBytes: PAGE_BYTES,
    })
    if (!answer.ok) {
      const why = answer.reason === 'timeout' ? 'Meta did not answer in time' : `could not reach Meta${answer.hint}`
      return { ok: false, detail: failure(secrets, null, why).errorMessage }
    }
    const body = answer.answer
    if (answer.status !== 200 || !body) {
      const error = isObject(body?.error) ? body.error : {}
      const said = typeof error.message === 'string' ? error.message : `HTTP ${answer.status}`
      const code = errorCodeOf(error.code)
      return { ok: false, detail: failure(secrets, code, `Meta answered HTTP ${answer.status}: ${said}`).errorMessage }
    }
    // A business account without any message in the period has no pricing_analytics at all.
    const analytics = isObject(body.pricing_analytics) ? body.pricing_analytics : null
    if (!analytics) return { ok: true, points }
    const data = Array.isArray(analytics.data) ? analytics.data : []
    for (const series of data) {
      const list = isObject(series) && Array.isArray(series.data_points) ? series.data_points : []
      for (const item of list) {
        const point = pointOf(item)
        if (point) points.push(point)
      }
    }
    const paging = isObject(analytics.paging) ? analytics.paging : {}
    const cursors = isObject(paging.cursors) ? paging.cursors : {}
    const next = text(cursors.after)
    if (!text(paging.next) || !next || next === after) return { ok: true, points }
    after = next
  }
  return { ok: false, detail: `more than ${MAX_PAGES} pages of pricing analytics: not read` }
}

export const metaPricingAnalytics: PricingAnalyticsSupport<MetaSettings> = {
  unreachable: (settings) =>
    settings.businessAccountId
      ? null
      : "it has no WhatsApp Business Account id (a Meta sender's business_account_id; the default sender's META_BUSINESS_ACCOUNT_ID)",
  read: readPricingAnalytics,
}
