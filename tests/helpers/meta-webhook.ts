// Meta's signed webhooks, as the Cloud API sends them to /provider/meta/webhook: the raw JSON body and
// its X-Hub-Signature-256 (HMAC-SHA256 of the exact bytes under the app secret).

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
  options: { name?: string; displayPhoneNumber?: string } = {},
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
              metadata: { display_phone_number: options.displayPhoneNumber ?? '6281100000001', phone_number_id: phoneNumberId },
              contacts: [{ profile: { name: options.name ?? 'Budi' }, wa_id: from }],
              messages: messages.map((m) => ({ from, timestamp: String(Math.floor(Date.now() / 1000)), ...m })),
            },
          },
        ],
      },
    ],
  })
}
