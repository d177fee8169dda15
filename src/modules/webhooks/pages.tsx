// The webhook of each API key: register, replace or delete the URL, reveal the signing secret once,
// send a test event, the delivery log with every attempt, replay one delivery or a key's failed ones.
// Members at /dashboard/webhook (their own account); operators at /dashboard/accounts/:id/webhook.

import { Elysia } from 'elysia'
import { kind } from '../../http/routes'
import { h, Fragment } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { AccountLink, viewScope as accountView, changeScope as accountChange, titleOf, type Scope } from '../accounts/scope'
import { type Dashboard, field, notFound, orError, respond, counted } from '../../dashboard/context'
import { Field, FormProblem, FormToken, PagedTable, formState, offsetOf, offsetPager, type FormState } from '../../dashboard/components'
import { ApiError } from '../../http/errors'
import { MAX_MEDIA_URL_CHARS } from '../../lib/validate'
import { audit } from '../users/service'
import { deleteWebhook, listKeyWebhooks, registerWebhook, webhookSecret } from './service'
import { getDelivery, listAttempts, listDeliveries, replayDelivery, replayFailedSince } from './deliveries'
import { sendTestEvent } from './events'
import { DEFAULT_EVENTS, EVENT_TYPES, type EventType } from './model'
import { EventCell } from './event-cell'
import { formatTimes } from '../../lib/time'
import { requireTimestamp } from '../../http/values'

// Each delivery shows its attempts: fewer deliveries a page than the other lists.
const PAGE_SIZE = 20
const ATTEMPTS_SHOWN = 20

type Server = Parameters<Dashboard['addressOf']>[1]
type Options = { error?: string; status?: number; state?: FormState }

/** The time typed, as the API's `YYYY-MM-DD HH:MM:SS` (`2026-01-31T10:00` and `2026-01-31 10:00` are read too). */
function sinceOf(value: string): string {
  const text = value.trim().replace('T', ' ')
  return /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}$/.test(text) ? `${text}:00` : text
}

// The events a registration may choose, one checkbox each (field `event_<type>`, `on` when checked).
const EVENT_LABELS: Record<EventType, string> = {
  'message.status': 'a message sent with this key changed status',
  'message.received': 'a customer wrote to the account',
  'contact.opted_out': 'a contact opted out',
  'contact.opted_in': 'a contact opted back in',
  'balance.low': "the account's balance fell below its low-balance threshold",
  'template.status_changed': "a WhatsApp template's status, category or quality changed",
  'verification.approved': 'a one-time code was checked right',
  'sender.status_changed': "a sender's health changed (quality, flag, messaging limit, throughput, restrictions)",
  'message.settled': "a message was settled on Meta's pricing (its category or cost changed)",
}
const eventField = (e: EventType) => `event_${e.replace('.', '_')}`
const EVENT_FIELDS = EVENT_TYPES.map(eventField)

/** The event checkboxes of a key's registration form: what was typed when it came back, else what is chosen now. */
function EventChoice(props: { state: FormState | undefined; form: string; keyId: number; chosen: readonly string[] }) {
  const typed = props.state?.form === props.form ? props.state.values : undefined
  return (
    <fieldset class="events">
      <legend>Events sent to this URL</legend>
      <input type="hidden" name="events_shown" value="1" />
      {EVENT_TYPES.map((e) => (
        <label class="choice">
          <input
            type="checkbox"
            name={eventField(e)}
            id={`${props.form}-${eventField(e)}`}
            checked={typed ? typed[eventField(e)] === 'on' : props.chosen.includes(e)}
          />
          <span>
            <code>{e}</code> <span class="muted">{EVENT_LABELS[e]}</span>
          </span>
        </label>
      ))}
    </fieldset>
  )
}

export function webhookPages(d: Dashboard) {
  async function webhookPage(scope: Scope, query: { key?: unknown; offset?: unknown }, options: Options = {}) {
    const { session, accountId, base } = scope
    const keys = await listKeyWebhooks(d.sql, accountId)
    const wanted = Number(typeof query.key === 'string' ? query.key : NaN)
    const selected = keys.find((k) => k.key_id === wanted) ?? keys.find((k) => k.url) ?? keys[0]
    const offset = offsetOf(query.offset)
    const log = selected ? formatTimes(await listDeliveries(d.sql, selected.key_id, undefined, { limit: PAGE_SIZE, offset }), d.tz) : null
    const attempts = log
      ? await Promise.all(
          log.items.map((e) => listAttempts(d.sql, e.id, { limit: ATTEMPTS_SHOWN, offset: 0 }).then((a) => formatTimes(a, d.tz))),
        )
      : []
    const pageLink = (keyId: number, at: number) => `${base}?key=${keyId}${at > 0 ? `&offset=${at}` : ''}`
    return respond(
      <Layout title={titleOf(scope, 'Webhook')} session={session} error={options.error}>
        <AccountLink scope={scope} />
        <p class="muted">
          Each API key has its own callback URL, signed with its secret: the events it chose go there (by default the status events of the
          messages sent with the key).
        </p>
        {keys.length === 0 ? <p>This account has no API keys yet.</p> : null}
        {keys.map((k) => (
          <section class="card" aria-labelledby={`key-${k.key_id}`}>
            <h2 id={`key-${k.key_id}`}>
              {k.label} <code class="muted">{k.prefix}…</code> {k.active ? null : <span class="muted">(inactive key)</span>}
            </h2>
            <p>
              {k.url ? (
                <>
                  URL: <code>{k.url}</code>
                </>
              ) : (
                'No URL registered.'
              )}
            </p>
            {k.url ? (
              <p>
                Events:{' '}
                {(k.events ?? []).map((e, i) => (
                  <>
                    {i > 0 ? ', ' : ''}
                    <code>{e}</code>
                  </>
                ))}
              </p>
            ) : null}
            <form class="register" method="post" action={`${base}/keys/${k.key_id}`}>
              <Csrf session={session} />
              <FormProblem state={options.state} form={`url-${k.key_id}`} />
              <Field
                state={options.state}
                form={`url-${k.key_id}`}
                name="url"
                label={k.url ? 'New URL' : 'URL'}
                type="url"
                required
                value={k.url ?? undefined}
                maxlength={MAX_MEDIA_URL_CHARS}
                placeholder="https://"
              />
              <EventChoice state={options.state} form={`url-${k.key_id}`} keyId={k.key_id} chosen={k.events ?? DEFAULT_EVENTS} />
              <button type="submit">{k.url ? 'Save URL and events' : 'Register URL'}</button>
            </form>
            {k.url ? (
              <div class="actions">
                <form method="post" action={`${base}/keys/${k.key_id}/secret`}>
                  <Csrf session={session} />
                  <button class="secondary" type="submit" aria-label={`Reveal secret of key ${k.label}`}>
                    Reveal secret
                  </button>
                </form>
                <form method="post" action={`${base}/keys/${k.key_id}/test`}>
                  <Csrf session={session} />
                  <FormToken session={session} />
                  <button class="secondary" type="submit" aria-label={`Send test event to the URL of key ${k.label}`}>
                    Send test event
                  </button>
                </form>
                <form method="post" action={`${base}/keys/${k.key_id}/delete`}>
                  <Csrf session={session} />
                  <button class="secondary" type="submit" aria-label={`Delete URL of key ${k.label}`}>
                    Delete URL
                  </button>
                </form>
              </div>
            ) : null}
            {selected?.key_id === k.key_id ? null : (
              <p>
                <a href={pageLink(k.key_id, 0)}>Deliveries of {k.label}</a>
              </p>
            )}
          </section>
        ))}
        {selected && log ? (
          <>
            <h2>Deliveries of {selected.label}</h2>
            <form class="inline card" method="post" action={`${base}/keys/${selected.key_id}/replay-failed`}>
              <Csrf session={session} />
              <FormProblem state={options.state} form="replay" />
              <Field
                state={options.state}
                form="replay"
                name="since"
                label="Replay failed deliveries created since"
                placeholder="YYYY-MM-DD HH:MM:SS"
                maxlength={19}
                required
              />
              <button type="submit">Replay failed</button>
            </form>
            <p class="muted">
              {counted(log.total, 'delivery', 'deliveries')}, newest first. Times in {d.tz}.
            </p>
            <PagedTable
              columns={[
                { header: 'Created', cell: (e) => e.created_at, class: 'nowrap' },
                { header: 'Event', cell: (e) => <EventCell e={e} />, class: 'wrap' },
                {
                  header: 'Status',
                  cell: (e) => (
                    <>
                      {e.status}
                      {e.next_attempt_at ? <span class="muted"> (next {e.next_attempt_at})</span> : null}
                    </>
                  ),
                },
                { header: 'Attempts', cell: (e) => e.attempts },
                { header: 'Last error', cell: (e) => e.last_error ?? '' },
                {
                  header: 'Replay',
                  cell: (e) => (
                    <form method="post" action={`${base}/deliveries/${e.id}/replay`}>
                      <Csrf session={session} />
                      <button class="secondary" type="submit" aria-label={`Replay delivery ${e.id}`}>
                        Replay
                      </button>
                    </form>
                  ),
                },
              ]}
              rows={log.items.map((e, i) => ({ ...e, tried: attempts[i]!.items }))}
              detail={(e) =>
                e.tried.length > 0 ? (
                  <details>
                    <summary>Attempts of delivery {e.id}</summary>
                    <ul class="attempts">
                      {e.tried.map((a) => (
                        <li>
                          #{a.attempt} {a.created_at}: {a.status_code === null ? 'no answer' : `HTTP ${a.status_code}`},{' '}
                          {a.latency_ms.toLocaleString('en')} ms
                          {a.error && a.error !== `HTTP ${a.status_code}` ? `, ${a.error}` : ''}
                        </li>
                      ))}
                    </ul>
                  </details>
                ) : null
              }
              pager={offsetPager('Pages of deliveries', offset, log.total, (at) => pageLink(selected.key_id, at), PAGE_SIZE)}
            />
          </>
        ) : null}
      </Layout>,
      options.status ?? 200,
    )
  }

  // The shared account scope, with `base` the webhook page's own path.
  const atPage = (scope: Scope | Response) => (scope instanceof Response ? scope : { ...scope, base: `${scope.base}/webhook` })
  const viewScope = async (request: Request, idParam?: string) => atPage(await accountView(d, request, idParam))
  const changeScope = async (request: Request, body: unknown, idParam?: string) => atPage(await accountChange(d, request, body, idParam))

  /** A key of the scope's account, or null (404). */
  async function keyOf(scope: Scope, keyParam: string) {
    const keys = await listKeyWebhooks(d.sql, scope.accountId)
    return keys.find((k) => String(k.key_id) === keyParam) ?? null
  }

  type Ctx = { request: Request; body: unknown; params: Record<string, string | undefined>; server: Server }
  type Key = { key_id: number; label: string; url: string | null; events: string[] | null }
  const auditOf = (db: Parameters<typeof audit>[0], scope: Scope, ctx: Ctx, action: string, detail: Record<string, unknown>) =>
    audit(db, { user: scope.session.user, address: d.addressOf(ctx.request, ctx.server), accountId: scope.accountId, action, detail })

  /**
   * A POST on one key: scope, the key, then `fn`. A rule it breaks re-renders the page with the problem
   * at the field of form `form` (the key's URL form, or the replay form), or above the page without one.
   */
  const keyChange =
    (form: ((key: Key) => string) | null, fn: (scope: Scope, key: Key, ctx: Ctx) => Promise<Response>) => async (ctx: Ctx) => {
      const scope = await changeScope(ctx.request, ctx.body, ctx.params?.id)
      if (scope instanceof Response) return scope
      const key = await keyOf(scope, ctx.params.key!)
      if (!key) return notFound(scope.session)
      return orError(
        () => fn(scope, key, ctx),
        (message, status) =>
          webhookPage(
            scope,
            { key: String(key.key_id) },
            form
              ? { state: formState(form(key), ctx.body, ['url', 'since', ...EVENT_FIELDS], message), status }
              : { error: message, status },
          ),
      )
    }
  const pageOf = (scope: Scope, keyId: number) => `${scope.base}?key=${keyId}`

  const register = keyChange(
    (key) => `url-${key.key_id}`,
    async (scope, key, ctx) => {
      // The checkboxes speak only when the form had them (`events_shown`): none checked is then a refusal.
      const chosen = field(ctx.body, 'events_shown') ? EVENT_TYPES.filter((e) => field(ctx.body, eventField(e)) === 'on') : undefined
      const { url, events } = await registerWebhook(
        d.sql,
        { accountId: scope.accountId, keyId: key.key_id },
        { url: field(ctx.body, 'url'), events: chosen },
        d.config.webhookAllowPrivate,
      )
      await auditOf(d.sql, scope, ctx, key.url ? 'webhook replaced' : 'webhook registered', {
        key_id: key.key_id,
        url,
        previous_url: key.url,
        events,
        previous_events: key.events,
      })
      return d.finish(scope.session, {
        to: pageOf(scope, key.key_id),
        notice:
          `${key.url ? 'The URL of' : 'A URL for'} key ${key.label} is now ${url}: its events go there.` +
          (chosen ? ` Events: ${events.join(', ')}.` : ''),
      })
    },
  )
  const remove = keyChange(null, async (scope, key, ctx) => {
    await deleteWebhook(d.sql, { accountId: scope.accountId, keyId: key.key_id })
    await auditOf(d.sql, scope, ctx, 'webhook deleted', { key_id: key.key_id, url: key.url })
    return d.finish(scope.session, {
      to: pageOf(scope, key.key_id),
      notice: `The URL of key ${key.label} is deleted: no events go out for it.`,
    })
  })
  // Revealing is no change, so it may happen twice; the secret waits for the page in a sealed flash.
  const reveal = keyChange(null, async (scope, key, ctx) => {
    const secret = await webhookSecret(d.sql, { accountId: scope.accountId, keyId: key.key_id })
    await auditOf(d.sql, scope, ctx, 'webhook secret revealed', { key_id: key.key_id })
    return d.finish(scope.session, {
      to: pageOf(scope, key.key_id),
      shown: {
        id: 'signing-secret',
        text: `The signing secret of key ${key.label}. It is shown only now: reveal it again when you need it.`,
        value: secret,
        what: 'secret',
      },
    })
  })
  const test = keyChange(null, async (scope, key, ctx) => {
    const to = pageOf(scope, key.key_id)
    const answer = await d.once(scope.session, ctx.body, to, async (tx) => {
      const event = await sendTestEvent(tx, d.tz, key.key_id, d.deps.clock)
      await auditOf(tx, scope, ctx, 'webhook test sent', { key_id: key.key_id, delivery_id: event.id })
      return {
        to,
        notice: `A test event for key ${key.label} is on its way${event.url ? ` to ${event.url}` : ''}: its delivery is listed below.`,
      }
    })
    return answer
  })
  const replayFailed = keyChange(
    () => 'replay',
    async (scope, key, ctx) => {
      const since = sinceOf(field(ctx.body, 'since'))
      const { replayed } = await replayFailedSince(d.sql, d.deps.clock, key.key_id, requireTimestamp(since, 'since', d.tz))
      await auditOf(d.sql, scope, ctx, 'webhook deliveries replayed', { key_id: key.key_id, since, replayed })
      return d.finish(scope.session, {
        to: pageOf(scope, key.key_id),
        notice:
          replayed === 0
            ? `No failed deliveries of key ${key.label} since ${since}: nothing to replay.`
            : `${counted(replayed, 'failed delivery', 'failed deliveries')} of key ${key.label} since ${since} will be sent again.`,
      })
    },
  )
  const replayOne = async (ctx: Ctx) => {
    const scope = await changeScope(ctx.request, ctx.body, ctx.params?.id)
    if (scope instanceof Response) return scope
    const id = Number(ctx.params.delivery)
    if (!/^\d{1,15}$/.test(ctx.params.delivery!)) return notFound(scope.session)
    const delivery = await getDelivery(d.sql, id).catch((error) => {
      if (error instanceof ApiError && error.code === 'NOT_FOUND') return null
      throw error
    })
    const keys = await listKeyWebhooks(d.sql, scope.accountId)
    if (!delivery || !keys.some((k) => k.key_id === delivery.api_key_id)) return notFound(scope.session)
    return orError(
      async () => {
        await replayDelivery(d.sql, d.deps.clock, id)
        await auditOf(d.sql, scope, ctx, 'webhook delivery replayed', { key_id: delivery.api_key_id, delivery_id: id })
        return d.finish(scope.session, { to: pageOf(scope, delivery.api_key_id), notice: `Delivery ${id} will be sent again.` })
      },
      (error, status) => webhookPage(scope, { key: String(delivery.api_key_id) }, { error, status }),
    )
  }

  // The same routes at the member's path and at the operator's path of an account.
  const routes = (prefix: string) =>
    new Elysia({ prefix, detail: kind('page') })
      .get('', async ({ request, params, query }) => {
        const scope = await viewScope(request, (params as Record<string, string> | undefined)?.id)
        return scope instanceof Response ? scope : webhookPage(scope, query)
      })
      .post('/keys/:key', register)
      .post('/keys/:key/delete', remove)
      .post('/keys/:key/secret', reveal)
      .post('/keys/:key/test', test)
      .post('/keys/:key/replay-failed', replayFailed)
      .post('/deliveries/:delivery/replay', replayOne)

  return new Elysia().use(routes('/dashboard/webhook')).use(routes('/dashboard/accounts/:id/webhook'))
}
