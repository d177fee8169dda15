// A campaign's quote before Run (issue 31, §3): its recipients as the engine would meet them now, judged by
// messages/admission.ts (opt-out, window, template status, price cap, messaging limit, spend cap and
// balance), and nothing taken. What the dashboard shows on a draft campaign's page: how many would go, how
// many would be skipped and why, and the cost by category. The engine differs in two ways the page says:
// a campaign sends what its budget, cap and balance allow and then pauses (a bulk is refused whole), and a
// WhatsApp template's recipient without a value is skipped when its batch is filled.

import type { Deps } from '../../deps'
import type { ApiError } from '../../http/errors'
import { getTemplateRow } from '../templates/catalog'
import { requireApproved } from '../templates/fill'
import { segmentMatch } from '../templates/segments'
import { categoryOf, quotePrepared, type Prepared, type Quote, type Refusal } from '../messages/admission'
import type { StoredTemplate } from '../../providers/provider'

/** At most this many recipients are quoted (the first, in the engine's order). */
export const QUOTED_RECIPIENTS = 5_000

export type CampaignQuote = Quote & { recipients: number; quoted: number }

export async function quoteCampaign(
  deps: Pick<Deps, 'sql' | 'config' | 'clock' | 'senders'>,
  accountId: number,
  campaignId: number,
): Promise<CampaignQuote | null> {
  const { sql } = deps
  const [c] = await sql<
    {
      api_key_id: number | null
      sender_id: number | null
      max_price: number | null
      template_id: number | null
      wa_template_id: number | null
      tag: string
    }[]
  >`
    select c.api_key_id, c.sender_id, c.max_price, c.template_id, c.wa_template_id, s.tag
    from campaigns c join segments s on s.id = c.segment_id
    where c.id = ${campaignId} and c.account_id = ${accountId}`
  if (!c) return null
  const sender = await deps.senders.get(c.sender_id)
  const wa = c.wa_template_id === null ? null : await getTemplateRow(sql, c.wa_template_id)
  const [binding] =
    c.template_id === null
      ? []
      : await sql<{ ref: string }[]>`
          select ref from template_bindings where template_id = ${c.template_id} and provider = ${sender.providerName}`
  const [contacts, [count]] = await Promise.all([
    sql<{ phone: string }[]>`
      select c.phone from contacts c where c.account_id = ${accountId} and ${segmentMatch(sql, c.tag)}
      order by c.id limit ${QUOTED_RECIPIENTS}`,
    sql<{ n: number }[]>`select count(*)::int as n from contacts c where c.account_id = ${accountId} and ${segmentMatch(sql, c.tag)}`,
  ])
  // A free-form campaign (its account template not bound for the sender's provider) is held to the window.
  const freeForm = !wa && !binding
  let notApproved: ApiError | null = null
  try {
    if (wa) requireApproved(wa)
  } catch (error) {
    notApproved = error as ApiError
  }
  const prepared = contacts.map((contact, index): Prepared | Refusal =>
    notApproved
      ? { index, to: contact.phone, error: notApproved }
      : {
          index,
          phone: contact.phone,
          body: '',
          mediaUrl: null,
          providerTemplate: freeForm ? null : ({} as StoredTemplate),
          validitySeconds: 0,
          sender,
          senderId: c.sender_id,
          provider: sender.providerName,
          category: categoryOf(wa),
          maxPrice: c.max_price === null ? null : Number(c.max_price),
        },
  )
  const quote = await quotePrepared(deps, accountId, c.api_key_id, prepared, () => '')
  return { ...quote, recipients: count!.n, quoted: contacts.length }
}
