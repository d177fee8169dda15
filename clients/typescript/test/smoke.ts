// The client's own check against a running service, run by tests/clients/clients.outer.test.ts
// (`bun test/smoke.ts`). Reads MESSAGING_BASE_URL, MESSAGING_API_KEY and a webhook test vector
// (WEBHOOK_SECRET, WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_BODY, WEBHOOK_SIGNATURE) from the environment
// and prints one JSON object of what it saw; the test judges it.

import { MessagingClient, MessagingError, ValidationError, verifyWebhook, WebhookVerificationError } from '../src/index'

const env = (name: string) => {
  const value = process.env[name]
  if (value === undefined) throw new Error(`${name} is not set`)
  return value
}

const client = new MessagingClient({ baseUrl: env('MESSAGING_BASE_URL'), apiKey: env('MESSAGING_API_KEY') })
const out: Record<string, unknown> = {}

out.balance_before = (await client.balance()).wa_balance
const sent = await client.send({ to: '081234567890', body: 'hello from TypeScript' })
out.sent = { status: sent.status, cost: sent.cost }
out.quote_total = (await client.quote({ to: '081234567891', body: 'what would this cost?' })).total_cost

const messages = ['081234567892', '081234567893', '081234567894'].map((to) => ({ to, body: 'bulk from TypeScript' }))
out.bulk_first = await client.bulk(messages, { idempotencyKey: 'ts-bulk-1' })
out.bulk_repeat = await client.bulk(messages, { idempotencyKey: 'ts-bulk-1' })
out.balance_after = (await client.balance()).wa_balance

const first = await client.listMessages({ limit: 2, offset: 0 })
const second = await client.listMessages({ limit: 2, offset: 2 })
const walked: number[] = []
for await (const message of client.eachMessage({ limit: 2 })) walked.push(message.id)
out.paging = { total: first.total, first: first.items.map((m) => m.id), second: second.items.map((m) => m.id), walked }

try {
  await client.send({ to: '12345', body: 'not a phone' })
  out.error = null
} catch (error) {
  if (!(error instanceof MessagingError)) throw error
  out.error = { validation: error instanceof ValidationError, status: error.status, code: error.code, request_id: error.requestId }
}

out.templates_total = (await client.listTemplates({ limit: 10 })).total

const headers = {
  'webhook-id': env('WEBHOOK_ID'),
  'webhook-timestamp': env('WEBHOOK_TIMESTAMP'),
  'webhook-signature': env('WEBHOOK_SIGNATURE'),
}
const body = env('WEBHOOK_BODY')
const forged = (attempt: () => unknown) => {
  try {
    attempt()
    return false
  } catch (error) {
    if (error instanceof WebhookVerificationError) return true
    throw error
  }
}
out.webhook = {
  event: verifyWebhook(env('WEBHOOK_SECRET'), headers, body).event,
  forged_body_refused: forged(() => verifyWebhook(env('WEBHOOK_SECRET'), headers, `${body} `)),
  other_secret_refused: forged(() => verifyWebhook(`whsec_${Buffer.from('not the secret').toString('base64')}`, headers, body)),
  stale_refused: forged(() =>
    verifyWebhook(env('WEBHOOK_SECRET'), headers, body, { now: new Date((Number(headers['webhook-timestamp']) + 301) * 1000) }),
  ),
}

console.log(JSON.stringify(out))
