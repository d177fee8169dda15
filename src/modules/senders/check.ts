// A sender's check: its credentials opened and given to its provider's one harmless call.

import type { Deps } from '../../deps'
import type { SenderCheck } from '../../providers/provider'
import { openFields, supportOf, whyNotOpen, type SenderRow } from './service'

export async function checkSender(deps: Pick<Deps, 'secrets' | 'config' | 'clock'>, row: SenderRow): Promise<SenderCheck> {
  let fields: Record<string, string>
  try {
    fields = await openFields(deps.secrets, row)
  } catch (error) {
    return { ok: false, detail: `its ${whyNotOpen(error)}` }
  }
  const support = supportOf(row.provider)
  const environment = (deps.config.providers as Record<string, unknown>)[row.provider]
  return support.check(support.settingsOf(fields, row.number, environment), { timeoutMs: deps.config.providerTimeoutMs, clock: deps.clock })
}
