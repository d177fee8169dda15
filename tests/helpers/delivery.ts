// The webhook delivery pipeline exactly as the service runs it (startWebhookDelivery), on a test
// app's database and woken as there (the NOTIFY of each commit that wrote or replayed events, sql/0034).
// Outer-ring tests start it when their setup is done and wait for outcomes; stop() drains it like a
// shutdown. Tests on a test clock step it instead
// (deliverAll): each step claims what is due at the clock's time, and ends when its outcomes are recorded.

import type { Config } from '../../src/config'
import type { Deps } from '../../src/deps'
import { deliverDue, startWebhookDelivery } from '../../src/workers/webhook-delivery'
import type { TestApp } from './app'

export type Delivery = { wake(): void; stop(): Promise<void> }

export function startDelivery(t: TestApp, config: Partial<Config> = {}, options: { concurrency?: number } = {}): Delivery {
  const deps: Deps = { ...t.deps, config: { ...t.config, ...config } }
  const loop = startWebhookDelivery(deps, options)
  t.loops.set('webhook-delivery', loop)
  return {
    wake: () => loop.wake(),
    async stop() {
      if (t.loops.get('webhook-delivery') === loop) t.loops.delete('webhook-delivery')
      await loop.stop()
    },
  }
}

/**
 * Steps the delivery pipeline until a step finds nothing due (one message's next event is due only
 * once the one before it is recorded): every request made and every outcome recorded by then. The
 * number of attempts made.
 */
export async function deliverAll(t: TestApp, config: Partial<Config> = {}, options: { concurrency?: number } = {}): Promise<number> {
  const deps: Deps = { ...t.deps, config: { ...t.config, ...config } }
  let attempts = 0
  for (;;) {
    const n = await deliverDue(deps, options)
    if (n === 0) return attempts
    attempts += n
  }
}
