// A sender's check: its credentials opened and given to its provider's one harmless call.

import type { Deps } from '../../deps'
import type { SenderCheck } from '../../providers/provider'
import { openFields, supportOf, type SenderRow } from './service'

export async function checkSender(deps: Pick<Deps, 'secrets' | 'config'>, row: SenderRow): Promise<SenderCheck> {
  const fields = await openFields(deps.secrets, row).catch(() => null)
  if (!fields) return { ok: false, detail: "its credentials do not open with this service's SECRETS_KEY (see SECRETS_KEY_PREVIOUS)" }
  const support = supportOf(row.provider)
  const environment = (deps.config.providers as Record<string, unknown>)[row.provider]
  return support.check(support.settingsOf(fields, row.number, environment), { timeoutMs: deps.config.providerTimeoutMs })
}
