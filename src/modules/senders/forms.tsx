// The parts of the sender forms: the credential fields of a provider (each control named after its
// provider, so providers never share one; a secret one a password input that is never filled in), their
// reading, the pace fields, and where a refusal's message belongs.

import { h, Fragment } from '../../dashboard/jsx'
import { field } from '../../dashboard/context'
import { FormError, fieldProps, formState, type FormState } from '../../dashboard/components'
import { badValue } from '../../http/errors'
import type { SenderField } from '../../providers/provider'
import { SENDER_PROVIDERS } from './directory'
import type { Sender } from './model'
import { supportOf } from './service'

const MAX_RATE = 100_000
const MAX_GAP_MS = 86_400_000
/** The fields of a sender form besides its provider and credentials. */
export const SENDER_FIELDS = ['name', 'number', 'rate_per_second', 'recipient_gap_ms']

/** "twilio" → "Twilio". */
export const providerLabel = (provider: string) => provider.charAt(0).toUpperCase() + provider.slice(1)

/** A credential field's name as a label: account_sid → "Account SID". */
const credentialLabel = (name: string) => {
  const words = name.split('_').map((w) => (w === 'sid' || w === 'id' ? w.toUpperCase() : w))
  return words.join(' ').replace(/^./, (c) => c.toUpperCase())
}

/** The form control of a credential field: its provider's name before it, so providers never share one. */
const inputOf = (provider: string, name: string) => `${provider}_${name}`
export const fieldsOf = (provider: string) => Object.entries(supportOf(provider).fields)
export const isProvider = (value: string) => (SENDER_PROVIDERS as readonly string[]).includes(value)

/** Every credential control a form of `providers` has, and those whose typed text may come back (never a secret's). */
function credentialInputs(providers: readonly string[]) {
  const all = providers.flatMap((p) => fieldsOf(p).map(([name, spec]) => ({ input: inputOf(p, name), secret: spec.secret })))
  return { all: all.map((c) => c.input), shown: all.filter((c) => !c.secret).map((c) => c.input) }
}

/** The credential fields typed for `provider` (blank ones left out); editing, an optional field ticked "remove" is blank. */
export function credentialsOf(body: unknown, provider: string, editing: boolean): Record<string, string> {
  if (!isProvider(provider)) return {}
  const out: Record<string, string> = {}
  for (const [name, spec] of fieldsOf(provider)) {
    const value = field(body, inputOf(provider, name))
    if (value.trim() !== '') out[name] = value
    else if (editing && !spec.required && field(body, `${inputOf(provider, name)}_remove`) === 'on') out[name] = ''
  }
  return out
}

/** Messages per second: blank is the provider's default (null). */
export function rateOf(body: unknown): number | null {
  const text = field(body, 'rate_per_second').trim()
  if (text === '') return null
  const rate = Number(text)
  if (!/^\d{1,6}(\.\d{1,3})?$/.test(text) || rate <= 0 || rate > MAX_RATE) {
    throw badValue(`rate_per_second: messages per second, a number above 0 and at most ${MAX_RATE.toLocaleString('en')} (e.g. 80 or 0.5)`)
  }
  return rate
}

/** Least ms between two messages to one recipient: blank is the provider's default (null). */
export function gapOf(body: unknown): number | null {
  const text = field(body, 'recipient_gap_ms').trim().replace(/,/g, '')
  if (text === '') return null
  if (!/^\d{1,8}$/.test(text) || Number(text) > MAX_GAP_MS) {
    throw badValue(`recipient_gap_ms: milliseconds, a whole number from 0 to ${MAX_GAP_MS.toLocaleString('en')} (e.g. 6000)`)
  }
  return Number(text)
}

/**
 * The state of a sender form after `message` refused it: what was typed (never a secret), and the
 * problem at its field: the service names a credential `credentials.<name>`, and a number taken by
 * another sender is a 409 without a field name.
 */
export function senderFormState(
  form: string,
  body: unknown,
  provider: string,
  names: string[],
  message: string,
  status: number,
): FormState {
  const inputs = credentialInputs(isProvider(provider) ? [provider] : [])
  const state = formState(form, body, [...names, ...credentialInputs(SENDER_PROVIDERS).shown], message)
  const credential = /^credentials\.([a-z_]+): /.exec(message)?.[1]
  const named = credential ? inputOf(provider, credential) : status === 409 ? 'number' : null
  if (state.problem && named && (inputs.all.includes(named) || names.includes(named))) state.problem = { ...state.problem, field: named }
  return state
}

/** A credential field's control, its meaning as its description; a secret one is a password input, always empty. */
function CredentialInput(props: {
  state: FormState | undefined
  form: string
  provider: string
  name: string
  spec: SenderField
  editing: boolean
}) {
  const { state, form, provider, name, spec, editing } = props
  const input = inputOf(provider, name)
  const { typed, attributes } = fieldProps(state, form, input)
  const hint = `${form}-${input}-hint`
  // Editing, every field is optional (blank keeps the stored value, its description says).
  const optional = !editing && !spec.required
  return (
    <div class="field">
      <label>
        {credentialLabel(name)}
        {optional ? ' (optional)' : ''}
        <input
          {...attributes}
          aria-describedby={[hint, attributes['aria-describedby']].filter(Boolean).join(' ')}
          type={spec.secret ? 'password' : 'text'}
          value={spec.secret ? undefined : (typed ?? '')}
          autocomplete={spec.secret ? 'new-password' : 'off'}
          spellcheck="false"
          maxlength={2000}
        />
      </label>
      <p class="hint" id={hint}>
        {spec.meaning.replace(/^optional: /, '').replace(/^./, (c) => c.toUpperCase())}
        {editing ? '. Blank keeps the stored value.' : spec.secret ? '. Stored encrypted, never shown again.' : '.'}
      </p>
      <FormError state={state} form={form} name={input} />
    </div>
  )
}

/** The credential fields of `provider` in a fieldset of their own (senders.js shows the chosen provider's only). */
export function Credentials(props: { state: FormState | undefined; form: string; provider: string; sender?: Sender }) {
  const { state, form, provider, sender } = props
  const fields = fieldsOf(provider)
  return (
    <fieldset data-provider={provider}>
      <legend>{sender ? 'Replace credentials' : `${providerLabel(provider)} credentials`}</legend>
      {fields.length === 0 ? <p class="hint">None: the {provider} takes every sender.</p> : null}
      {fields.map(([name, spec]) => (
        <CredentialInput state={state} form={form} provider={provider} name={name} spec={spec} editing={sender !== undefined} />
      ))}
      {sender
        ? fields
            .filter(([name, spec]) => !spec.required && sender.credentials_set.includes(name))
            .map(([name]) => (
              <label class="choice">
                <input type="checkbox" name={`${inputOf(provider, name)}_remove`} />
                Remove the stored {credentialLabel(name).replace(/^./, (c) => c.toLowerCase())}
              </label>
            ))
        : null}
    </fieldset>
  )
}

/** A sender's last check, in words: ok or failed, what the provider said, and when. */
export function LastCheck(props: { check: Sender['last_check'] }) {
  const { check } = props
  if (!check) return <span class="muted">not checked yet</span>
  return (
    <>
      <span class={`status ${check.ok ? 'status-ok' : 'status-failed'}`}>{check.ok ? 'ok' : 'failed'}</span> {check.detail}{' '}
      <span class="muted">{check.at}</span>
    </>
  )
}

/** What a sender's late failures do, in words. */
export const lateFailuresText = (value: Sender['late_failures']) =>
  value === 'refund' ? 'refunded (the operator trusts its reports)' : "kept charged (its credentials may be a tenant's own)"

/** The late-failures choice of a sender form: blank (creating) is the provider's default. */
export function lateFailuresOf(body: unknown): Sender['late_failures'] | null {
  const value = field(body, 'late_failures')
  if (value === '') return null
  if (value !== 'refund' && value !== 'keep') throw badValue('late_failures: refund or keep')
  return value
}

/** Whether a late failure reported through the sender's credentials is refunded; `value` '' offers the provider's default. */
export function LateFailuresChoice(props: { value: Sender['late_failures'] | '' }) {
  const options: [string, string][] = [
    ...(props.value === '' ? [['', "The provider's default"] as [string, string]] : []),
    ['keep', 'Keep them charged'],
    ['refund', 'Refund them'],
  ]
  return (
    <div class="field">
      <label>
        Late failures (messages reported failed after the provider accepted them)
        <select name="late_failures" aria-describedby="late-failures-help">
          {options.map(([value, label]) => (
            <option value={value} selected={value === props.value}>
              {label}
            </option>
          ))}
        </select>
      </label>
      <p class="hint" id="late-failures-help">
        Whoever holds the sender's credentials can report a failure for its own delivered messages, so refund them only for credentials you
        hold yourself. The provider's default: kept charged for Twilio and Meta (a tenant may have brought its own), refunded for the
        simulator. The price's own choice applies as well.
      </p>
    </div>
  )
}
