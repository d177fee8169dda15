// Meta's signed webhooks, as the Cloud API sends them to /provider/meta/webhook: the raw JSON body and
// its X-Hub-Signature-256 (HMAC-SHA256 of the exact bytes under the app secret); a customer's
// messages, and a template's change of status, category or quality.

import { createHmac } from 'node:crypto'

/** X-Hub-Signature-256 of `body` under the app `secret`: `sha256=` and the hex digest. */
export function metaSignature(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`
}

/** The headers of a webhook POST of `body` signed with the app `secret`. */
export function metaWebhookHeaders(body: string, secret: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-hub-signature-256': metaSignature(body, secret) }
}

/**
 * A notification of `messages` a customer (`from`, Meta's digits) wrote to `phoneNumberId`, as JSON
 * text: each message gets `from` and the current time unless it names its own `timestamp`.
 */
export function metaMessagesBody(
  phoneNumberId: string,
  from: string,
  messages: Record<string, unknown>[],
  options: { name?: string; displayPhoneNumber?: string; userId?: string } = {},
): string {
  // A customer with a business-scoped user id (issue 32): `contacts[].user_id` and `from_user_id`, and no
  // `wa_id` / `from` when the phone is hidden (`from` '').
  const { userId } = options
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '200000000000001',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: options.displayPhoneNumber ?? '6281100000001', phone_number_id: phoneNumberId },
              contacts: [
                { profile: { name: options.name ?? 'Budi' }, ...(from ? { wa_id: from } : {}), ...(userId ? { user_id: userId } : {}) },
              ],
              messages: messages.map((m) => ({
                ...(from ? { from } : {}),
                ...(userId ? { from_user_id: userId } : {}),
                timestamp: String(Math.floor(Date.now() / 1000)),
                ...m,
              })),
            },
          },
        ],
      },
    ],
  })
}

/** A notification of one `system` message (a changed number or user id; no `contacts[]`, as Meta sends it), as JSON text. */
export function metaSystemBody(phoneNumberId: string, message: Record<string, unknown>): string {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '200000000000001',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '6281100000001', phone_number_id: phoneNumberId },
              messages: [{ timestamp: String(Math.floor(Date.now() / 1000)), ...message }],
            },
          },
        ],
      },
    ],
  })
}

/**
 * A notification of one template change of WhatsApp Business Account `waba`, as Meta sends it, as JSON
 * text: `field` is `message_template_status_update`, `template_category_update` or
 * `message_template_quality_update`; `value` carries what it says beside the template's id, name and
 * language; `time` is Meta's time of the notification (Unix seconds).
 */
export function metaTemplateBody(
  waba: string,
  field: string,
  template: { id: string; name: string; language: string },
  value: Record<string, unknown>,
  time: number,
): string {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: waba,
        time,
        changes: [
          {
            field,
            value: {
              ...value,
              message_template_id: Number(template.id),
              message_template_name: template.name,
              message_template_language: template.language,
            },
          },
        ],
      },
    ],
  })
}

/**
 * Meta's `pricing` of a status (per-message pricing, as since July 2025): the category it charged, the
 * type (`regular`, `free_customer_service` inside the customer's window, `free_entry_point`) and the
 * retiring `billable` (false exactly when the type is free).
 */
export type MetaPricing = { billable?: boolean; pricing_model: string; category: string; type?: string }
export function metaPricing(category: string, type: 'regular' | 'free_customer_service' | 'free_entry_point' = 'regular'): MetaPricing {
  return { billable: type === 'regular', pricing_model: 'PMP', category, type }
}

/**
 * A notification of message statuses for `phoneNumberId`, as JSON text: each `{id, status, pricing}`
 * (pricing null: none, as Meta's `failed` has), with the fields Meta sends around them.
 */
export function metaStatusesBody(
  phoneNumberId: string,
  statuses: { id: string; status: string; pricing?: MetaPricing | null; recipient?: string | null; recipientUserId?: string }[],
): string {
  return JSON.stringify({
    object: 'whatsapp_business_account',
    entry: [
      {
        id: '200000000000001',
        changes: [
          {
            field: 'messages',
            value: {
              messaging_product: 'whatsapp',
              metadata: { display_phone_number: '6281100000001', phone_number_id: phoneNumberId },
              statuses: statuses.map((s) => ({
                id: s.id,
                status: s.status,
                timestamp: String(Math.floor(Date.now() / 1000)),
                // A message to a business-scoped user id: recipient_user_id, and recipient_id only when Meta gives the phone (null: not).
                ...(s.recipient === null ? {} : { recipient_id: s.recipient ?? '6281234567890' }),
                ...(s.recipientUserId ? { recipient_user_id: s.recipientUserId } : {}),
                ...(s.pricing ? { pricing: s.pricing } : {}),
              })),
            },
          },
        ],
      },
    ],
  })
}
