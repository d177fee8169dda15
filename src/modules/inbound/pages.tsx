// The inbox: an account's conversations by last activity, and one conversation both ways with its
// 24-hour window and a reply box. Inside the window (or through a sender whose provider does not hold
// to it) the reply is free-form text; outside it only the account's templates bound for the sender's
// provider are offered, with why. A reply goes through the same send service as the API (charged like
// any send, refused before charging as any send is), exactly once per form (its single-use token is the
// send's request token); its outcome or refusal is the next page's flash. Members at /dashboard/inbox,
// operators at /dashboard/accounts/:id/inbox.

import { h, Fragment, type Child } from '../../dashboard/jsx'
import { Csrf, Layout } from '../../dashboard/layout'
import { type Dashboard, field, notFound, orError, pageRoutes, refused, respond } from '../../dashboard/context'
import { FormToken, PagedTable, offsetOf, offsetPager } from '../../dashboard/components'
import { FORM_TOKEN, formTokenNonce } from '../../dashboard/form-token'
import { AccountLink, changeScope, titleOf, viewScope, type Scope } from '../accounts/scope'
import { placeholdersOf } from '../../lib/template'
import { audit } from '../users/service'
import { listAccountSenders } from '../senders/service'
import { senderChoice } from '../senders/account-pages'
import { boundTemplates } from '../templates/render'
import { sendOne } from '../messages/service'
import { checksWindow } from '../messages/window'
import { listConversations, type ConversationSummary } from './inbox'
import { openWindows } from './window'
import { dashboardMediaPath, withMedia } from './media-view'
import { conversation, windowSenderOf, windowWith } from './service'
import { moveConversation, sharedConversation, type HolderSource } from './holders'
import { formatTimes, type Formatted } from '../../lib/time'
import { accountName } from '../accounts/service'
import { inboundPhone } from './phone'
import { isUserId } from '../../lib/user-id'
import { accountCustomerKey } from '../customers/service'
import { inboundToQuote, markOpenedConversation, quotedPreviews, reactionsOf, setInboxMarksRead, inboxMarksRead } from './manners'
import { isOptedOut } from '../optouts/service'
import { PAGE_HEADERS } from '../../dashboard/session'

const PAGE = 50
const INBOX_SCRIPT = '/dashboard/assets/inbox.js'
/** How often an open conversation asks for what is new (assets/inbox.js). */
const POLL_MS = 5_000
const preview = (text: string | null, type: string) => {
  const shown = text ?? `[${type}]`
  return shown.length > 80 ? `${shown.slice(0, 80)}…` : shown
}
const pathOf = (phone: string) => phone.replace(/^\+/, '')

type Item = Formatted<Awaited<ReturnType<typeof conversation>>['items'][number]>

/** What an inbound message shows, by its type. */
function inboundContent(item: Item): Child {
  const c = (item.content ?? {}) as Record<string, unknown>
  switch (item.type) {
    case 'text':
      return item.text
    case 'image':
    case 'video':
    case 'audio':
    case 'document':
    case 'sticker': {
      // The kept copy, through the dashboard's own link (the API's needs a key); while it is being fetched, or
      // when it could not be kept, the page says so.
      const label = `${item.type}${typeof c.filename === 'string' ? ` ${c.filename}` : ''}${typeof c.mime_type === 'string' ? ` (${c.mime_type})` : ''}`
      const state = c.media_status === 'kept' ? null : c.media_status === 'failed' ? 'could not be kept' : 'being fetched'
      return (
        <>
          {state === null ? <a href={dashboardMediaPath(item.id)}>{label}</a> : <span>{`${label}, ${state}`}</span>}
          {typeof c.caption === 'string' ? <div>{c.caption}</div> : null}
        </>
      )
    }
    case 'location': {
      const where = [c.name, c.address].filter((x) => typeof x === 'string').join(', ')
      const map = `https://www.openstreetmap.org/?mlat=${Number(c.latitude)}&mlon=${Number(c.longitude)}`
      return (
        <>
          Location: {where || 'a place'} <a href={map}>{`${Number(c.latitude)}, ${Number(c.longitude)} on a map`}</a>
        </>
      )
    }
    case 'interactive':
      return `${c.kind === 'list_reply' ? 'List reply' : 'Button reply'}: ${String(c.title ?? '')} (${String(c.id ?? '')})`
    case 'button':
      return `Button: ${String(c.text ?? '')}${c.payload ? ` (${String(c.payload)})` : ''}`
    case 'reaction':
      return `Reacted ${String(c.emoji ?? '')} to a message`
    case 'contacts': {
      const cards = Array.isArray(c.contacts) ? (c.contacts as { name?: string; phones?: string[] }[]) : []
      return `Contact card: ${cards.map((x) => `${x.name ?? ''} ${(x.phones ?? []).join(', ')}`.trim()).join('; ')}`
    }
    default:
      return item.text ?? `[${item.type}]`
  }
}

export function inboxPages(d: Dashboard) {
  /**
   * The customer a path names, as the account keys it, or null (404): a phone (digits, with or without +), or
   * a WhatsApp user id (issue 32: a customer who hides the phone), which is its phone once Meta linked them.
   */
  async function phoneParam(scope: Scope, value: string): Promise<string | null> {
    if (isUserId(value)) return accountCustomerKey(d.sql, scope.accountId, value)
    return /^\+?\d{6,15}$/.test(value) ? inboundPhone(value) : null
  }
  async function inboxPage(scope: Scope, query: Record<string, unknown>) {
    const offset = offsetOf(query.offset)
    const list = await listConversations(d.sql, d.tz, scope.accountId, { limit: PAGE, offset })
    const senderId = await windowSenderOf(d.sql, scope.accountId, undefined)
    const open = await openWindows(
      d.sql,
      d.deps.clock,
      senderId,
      list.items.map((c) => c.phone),
    )
    const path = `${scope.base}/inbox`
    const marksRead = await inboxMarksRead(d.sql, scope.accountId)
    const badge = (c: ConversationSummary) =>
      open.has(c.phone) ? <span class="badge badge-open">window open</span> : <span class="badge">window closed</span>
    return respond(
      <Layout title={titleOf(scope, 'Inbox')} session={scope.session}>
        <AccountLink scope={scope} />
        <p class="muted">
          Conversations by last activity, both ways. The window is WhatsApp's 24-hour window with the account's default sender: free-form
          replies only while it is open.
        </p>
        <PagedTable
          columns={[
            {
              header: 'Customer',
              cell: (c) => <a href={`${path}/${pathOf(c.phone)}`}>{c.name && c.name !== c.phone ? `${c.name} (${c.phone})` : c.phone}</a>,
            },
            {
              header: 'Last message',
              cell: (c) => `${c.direction === 'inbound' ? 'They wrote: ' : 'You sent: '}${preview(c.text, c.type)}`,
            },
            { header: 'When', cell: (c) => c.at, class: 'nowrap' },
            { header: 'Window', cell: badge },
          ]}
          rows={list.items}
          empty="No conversations yet: messages sent and received show here."
          pager={offsetPager('Pages of conversations', offset, list.total, (o) => `${path}?offset=${o}`, PAGE)}
        />
        <h2 id="inbox-settings">Inbox settings</h2>
        <form class="stack card" method="post" action={`${path}/settings`} aria-labelledby="inbox-settings">
          <Csrf session={scope.session} />
          <label class="choice">
            <input type="checkbox" name="marks_read" checked={marksRead} aria-describedby="marks-read-help" />
            Mark a conversation read when an agent opens it
          </label>
          <p id="marks-read-help" class="muted small">
            The customer sees read receipts (blue ticks) for their messages once one of you opens the conversation. Off by default.
          </p>
          <button class="secondary" type="submit">
            Save inbox settings
          </button>
        </form>
      </Layout>,
    )
  }

  /**
   * One page of the conversation as the inbox shows it: media linked through the dashboard, what a message
   * quotes, the reactions it holds, and (when `quoteHref` is given) a link that quotes a customer's message
   * in the reply box. The open page polls GET .../thread for the latest page (assets/inbox.js).
   */
  async function threadOf(scope: Scope, phone: string, offset: number, quoteHref: ((id: number) => string) | null) {
    const page = formatTimes(await conversation(d.sql, d.deps.clock, scope.accountId, phone, { limit: PAGE, offset }), d.tz)
    const items = await withMedia(d.sql, d.config.publicBaseUrl, page.items)
    const pids = items.flatMap((m) => (m.message_sid ? [m.message_sid] : []))
    const reactions = await reactionsOf(d.sql, scope.accountId, pids, d.tz)
    const quotes = await quotedPreviews(d.sql, scope.accountId, [...new Set(items.flatMap((m) => (m.reply_to ? [m.reply_to] : [])))])
    const list = (
      <ol id="thread" class="thread" aria-label="Messages, oldest first">
        {items.map((m) => {
          const quote = m.reply_to ? quotes.get(m.reply_to) : undefined
          const held = (m.message_sid && reactions.get(m.message_sid)) || []
          return (
            <li class={`bubble ${m.direction}`} id={`${m.direction}-${m.id}`}>
              <div class="muted small">
                {m.direction === 'inbound' ? 'They wrote' : 'Sent'} · <span class="nowrap">{m.at}</span>
                {m.status ? (
                  <>
                    {' · '}
                    <span class={`status status-${m.status}`}>{m.status}</span>
                  </>
                ) : null}
              </div>
              {m.reply_to ? (
                <blockquote class="quote small">
                  {quote
                    ? `${quote.direction === 'inbound' ? 'Quoting their message' : 'Quoting your message'}: ${preview(quote.text, 'text')}`
                    : 'Quoting a message not shown here'}
                </blockquote>
              ) : null}
              <div class="message-body">{m.direction === 'inbound' ? inboundContent(m) : m.text}</div>
              {held.length > 0 ? (
                <div class="reactions small">
                  {held.map((r) => (
                    <span class="reaction">{`${r.emoji} ${r.by === 'customer' ? 'from the customer' : 'from you'}`}</span>
                  ))}
                </div>
              ) : null}
              {quoteHref && m.direction === 'inbound' && m.type !== 'reaction' ? (
                <a class="small" href={quoteHref(m.id)}>
                  Reply quoting this message
                </a>
              ) : null}
            </li>
          )
        })}
      </ol>
    )
    return { ...page, items, list }
  }

  async function conversationPage(scope: Scope, phoneText: string, query: Record<string, unknown>) {
    const phone = await phoneParam(scope, phoneText)
    if (!phone) return notFound(scope.session)
    const senders = (await listAccountSenders(d.sql, scope.accountId)).filter((s) => !s.disabled)
    const fromText = typeof query.from === 'string' && senders.some((s) => String(s.id) === query.from) ? query.from : undefined
    const senderId = await windowSenderOf(d.sql, scope.accountId, fromText)
    const sender = await d.deps.senders.get(senderId)
    const head = await conversation(d.sql, d.deps.clock, scope.accountId, phone, { limit: 1, offset: 0 })
    if (head.total === 0) return notFound(scope.session)
    // Opened: the customer's messages are marked read at the provider when the account chose so (manners.ts).
    await markOpenedConversation(d.deps, scope.accountId, phone)
    // The latest page by default; `offset` pages back.
    const latest = typeof query.offset !== 'string'
    const offset = latest ? Math.max(0, head.total - PAGE) : offsetOf(query.offset)
    const window = formatTimes(await windowWith(d.sql, d.deps.clock, senderId, phone), d.tz)
    const enforced = checksWindow(d.config, sender)
    const optedOut = await isOptedOut(d.sql, scope.accountId, phone)
    const freeForm = !optedOut && (window.open || !enforced)
    const path = `${scope.base}/inbox/${pathOf(phone)}`
    const fromQuery = fromText ? `from=${fromText}&` : ''
    const thread = await threadOf(scope, phone, offset, freeForm ? (id) => `${path}?${fromQuery}reply_to=${id}#reply-title` : null)
    const quoting =
      freeForm && typeof query.reply_to === 'string' && /^\d{1,15}$/.test(query.reply_to)
        ? await inboundToQuote(d.sql, scope.accountId, phone, Number(query.reply_to))
        : null
    const templates = await boundTemplates(d.sql, scope.accountId, sender.providerName)
    const chosen = templates.find((t) => String(t.id) === query.template)
    const [contact] = await d.sql<{ name: string; email: string | null; city: string | null }[]>`
      select name, email, city from contacts where account_id = ${scope.accountId} and phone = ${phone}`
    // Operators see who holds the conversation on a number several accounts share, and may move it here.
    const shared = scope.session.user.role === 'operator' ? formatTimes(await sharedConversation(d.sql, senderId, phone), d.tz) : null
    const holderName = shared?.holder ? await accountName(d.sql, shared.holder.account_id) : null
    const fromField = fromText ? <input type="hidden" name="from" value={fromText} /> : null
    const templateForm = (
      <form class="stack card" method="get" action={path} aria-label="Choose a template">
        {fromField}
        <label>
          Approved template
          <select name="template">
            {templates.map((t) => (
              <option value={String(t.id)} selected={chosen?.id === t.id}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <button class="secondary" type="submit">
          Choose
        </button>
      </form>
    )
    // Each placeholder starts with the contact's value; one left empty is refused (the browser says so first: required).
    const known: Record<string, string> = { name: contact?.name ?? '', phone, email: contact?.email ?? '', city: contact?.city ?? '' }
    const templateSend = chosen ? (
      <form class="stack card" method="post" action={`${path}/reply`} aria-label={`Send the template ${chosen.name}`}>
        <Csrf session={scope.session} />
        <FormToken session={scope.session} />
        {fromField}
        <input type="hidden" name="template_id" value={String(chosen.id)} />
        <p class="message-body">{chosen.body}</p>
        {placeholdersOf(chosen.body).map((name) => (
          <label>
            {`Value of {{${name}}}`}
            <input name={`var_${name}`} value={known[name] ?? ''} maxlength={1000} required />
            {known[name] ? null : <span class="muted small">{`The contact has no ${name}: type the value to send.`}</span>}
          </label>
        ))}
        <button type="submit">Send template</button>
      </form>
    ) : null
    const noTemplates = (
      <p class="muted">
        This account has no template bound to an approved {sender.providerName} template: an operator binds one on a template's page.
      </p>
    )
    return respond(
      <Layout
        title={titleOf(scope, `Conversation with ${contact?.name && contact.name !== phone ? `${contact.name} (${phone})` : phone}`)}
        session={scope.session}
      >
        <AccountLink scope={scope} />
        <p>
          <a href={`${scope.base}/inbox`}>All conversations</a>
        </p>
        {senders.length > 1 ? (
          <form class="inline card" method="get" action={path}>
            <label>
              Sender
              <select name="from">
                {senders.map((s) => (
                  <option value={String(s.id)} selected={s.id === senderId}>
                    {senderChoice(s)}
                  </option>
                ))}
              </select>
            </label>
            <button class="secondary" type="submit">
              Show its window
            </button>
          </form>
        ) : null}
        {shared?.shared ? (
          <HolderCard
            holder={shared.holder}
            holderName={holderName}
            here={scope.accountId}
            action={`${path}/holder`}
            fromField={fromField}
            session={scope.session}
          />
        ) : null}
        <p id="window-state" class={`card ${window.open ? 'window-open' : 'window-closed'}`} role="status">
          {window.open
            ? `The 24-hour window is open until ${window.until}: ${optedOut ? 'but the customer opted out, so nothing can go (see Reply).' : 'free-form replies can go.'}`
            : `The 24-hour window is closed (${window.last_inbound_at ? `the customer last wrote at ${window.last_inbound_at}` : 'the customer has not written to this sender'}).`}
        </p>
        {thread.offset > 0 ? (
          <p>
            <a href={`${path}?${fromQuery}offset=${Math.max(0, thread.offset - PAGE)}`}>Earlier messages</a>
          </p>
        ) : null}
        {thread.list}
        {latest ? (
          // The latest page keeps itself current (assets/inbox.js): new messages and statuses appear, and the
          // live region says how many arrived; without script the link loads the page again.
          <p
            class="small"
            id="thread-live"
            data-thread-url={`${path}/thread${fromText ? `?from=${fromText}` : ''}`}
            data-poll-ms={String(POLL_MS)}
          >
            <span id="thread-news" role="status" aria-live="polite"></span>{' '}
            <a href={`${path}${fromText ? `?from=${fromText}` : ''}`}>Check for new messages</a>
          </p>
        ) : null}
        {thread.offset + thread.items.length < thread.total ? (
          <p>
            <a href={`${path}?${fromQuery}offset=${thread.offset + PAGE}`}>Later messages</a>
          </p>
        ) : null}
        <h2 id="reply-title">Reply</h2>
        {optedOut ? (
          <p id="opted-out-why" class="card window-closed">
            This customer has opted out (they wrote STOP, or the account recorded their opt-out): every message to them is refused,
            free-form or template, and nothing is charged. Messages can go again once they write START, or once the opt-out is removed on
            the <a href={`${scope.base}/opt-outs`}>Opt-outs</a> page with their consent.
          </p>
        ) : freeForm ? (
          <>
            {!window.open ? <p class="muted">This sender's provider does not hold to the window: free-form replies go.</p> : null}
            <form class="stack card" method="post" action={`${path}/reply`} aria-labelledby="reply-title">
              <Csrf session={scope.session} />
              <FormToken session={scope.session} />
              {fromField}
              {quoting ? (
                <>
                  <input type="hidden" name="reply_to" value={String(quoting.id)} />
                  <blockquote id="reply-quote" class="quote">
                    {`Quoting their message: ${preview(quoting.text, 'text')}`}
                  </blockquote>
                  <a class="small" href={`${path}${fromText ? `?from=${fromText}` : ''}#reply-title`}>
                    Reply without quoting
                  </a>
                </>
              ) : null}
              <label>
                Your reply
                <textarea name="body" rows={3} maxlength={4096} required></textarea>
              </label>
              <button type="submit">Send reply</button>
            </form>
            {templates.length > 0 ? (
              <details>
                <summary>Send an approved template instead</summary>
                {templateForm}
                {templateSend}
              </details>
            ) : null}
          </>
        ) : (
          <>
            <p id="window-closed-why">
              Outside the 24-hour window WhatsApp takes only approved templates: a free-form reply would be refused. Send one of the
              account's templates bound for {sender.providerName}; the window opens again when the customer writes.
            </p>
            {templates.length > 0 ? (
              <>
                {templateForm}
                {templateSend}
              </>
            ) : (
              noTemplates
            )}
          </>
        )}
        {latest ? <script src={INBOX_SCRIPT} defer></script> : null}
      </Layout>,
    )
  }

  /** The latest page of the thread alone (the open page's poll): the same list the page shows, or 404. */
  async function threadFragment(scope: Scope, phoneText: string, query: Record<string, unknown>) {
    const phone = await phoneParam(scope, phoneText)
    if (!phone) return notFound(scope.session)
    const head = await conversation(d.sql, d.deps.clock, scope.accountId, phone, { limit: 1, offset: 0 })
    if (head.total === 0) return notFound(scope.session)
    await markOpenedConversation(d.deps, scope.accountId, phone)
    const fromText = typeof query.from === 'string' && /^\d{1,15}$/.test(query.from) ? query.from : undefined
    const senderId = await windowSenderOf(d.sql, scope.accountId, fromText).catch(() => windowSenderOf(d.sql, scope.accountId, undefined))
    const window = await windowWith(d.sql, d.deps.clock, senderId, phone)
    const freeForm =
      !(await isOptedOut(d.sql, scope.accountId, phone)) && (window.open || !checksWindow(d.config, await d.deps.senders.get(senderId)))
    const path = `${scope.base}/inbox/${pathOf(phone)}`
    const fromQuery = fromText ? `from=${fromText}&` : ''
    const thread = await threadOf(
      scope,
      phone,
      Math.max(0, head.total - PAGE),
      freeForm ? (id) => `${path}?${fromQuery}reply_to=${id}#reply-title` : null,
    )
    return new Response(thread.list.value, { headers: PAGE_HEADERS })
  }

  async function reply(scope: Scope, phoneText: string, body: unknown, request: Request) {
    const phone = await phoneParam(scope, phoneText)
    // A reply answers one of the account's conversations: another phone is not this page's to write to.
    if (!phone || (await conversation(d.sql, d.deps.clock, scope.accountId, phone, { limit: 1, offset: 0 })).total === 0) {
      return notFound(scope.session)
    }
    const from = field(body, 'from') || undefined
    const back = `${scope.base}/inbox/${pathOf(phone)}${from ? `?from=${encodeURIComponent(from)}` : ''}`
    // The form's single-use token names the send: the same form sent again finds its message, never a second one.
    const nonce = formTokenNonce(scope.session, field(body, FORM_TOKEN))
    if (!nonce) return refused()
    const requestToken = await tokenOf(scope.session.user.id, nonce)
    const templateId = field(body, 'template_id')
    const variables = Object.fromEntries(
      Object.entries((body ?? {}) as Record<string, unknown>)
        .filter(([k, v]) => k.startsWith('var_') && typeof v === 'string')
        .map(([k, v]) => [k.slice(4), v as string]),
    )
    // A template whose placeholder would go empty ("Hi , your order…") is not sent: the agent is told which to fill.
    const empty = Object.entries(variables).find(([, v]) => v.trim() === '')
    if (templateId && empty) {
      return d.finish(scope.session, {
        to: `${back}${back.includes('?') ? '&' : '?'}template=${encodeURIComponent(templateId)}`,
        error: `Not sent: {{${empty[0]}}} has no value, and the message would go with a gap. Type its value and send again; nothing was charged.`,
      })
    }
    const replyTo = field(body, 'reply_to')
    const input = templateId
      ? { to: phone, template_id: /^\d{1,15}$/.test(templateId) ? Number(templateId) : 0, variables, from }
      : { to: phone, body: field(body, 'body'), from, ...(replyTo ? { reply_to: replyTo } : {}) }
    return orError(
      async () => {
        const sent = await sendOne(d.deps, { accountId: scope.accountId, keyId: null }, input, requestToken)
        await audit(d.sql, {
          user: scope.session.user,
          address: d.addressOf(request),
          accountId: scope.accountId,
          action: 'inbox reply sent',
          detail: { phone, template_id: 'template_id' in input ? input.template_id : null, reply_to: replyTo || null, cost: sent.cost },
        })
        const what = 'message_id' in sent ? 'Reply sent' : 'Reply queued (the provider is busy; it goes shortly)'
        return d.finish(scope.session, { to: back, notice: `${what}; ${d.money(sent.cost)} charged.` })
      },
      (message) => d.finish(scope.session, { to: back, error: `Not sent: ${message}` }),
    )
  }

  /** The account's inbox settings: whether opening a conversation marks the customer's messages read (off by default). */
  async function saveSettings(scope: Scope, body: unknown, request: Request) {
    const on = field(body, 'marks_read') === 'on'
    await setInboxMarksRead(d.sql, scope.accountId, on)
    await audit(d.sql, {
      user: scope.session.user,
      address: d.addressOf(request),
      accountId: scope.accountId,
      action: 'inbox settings changed',
      detail: { marks_read: on },
    })
    const notice = on
      ? "Opening a conversation now marks the customer's messages read: they see read receipts."
      : 'Opening a conversation no longer marks messages read.'
    return d.finish(scope.session, { to: `${scope.base}/inbox`, notice })
  }

  /** An operator moves the phone's conversation on the page's sender to this account (with its received messages when ticked). */
  async function moveHere(scope: Scope, phoneText: string, body: unknown, request: Request) {
    const phone = await phoneParam(scope, phoneText)
    if (!phone || scope.session.user.role !== 'operator') return notFound(scope.session)
    const from = field(body, 'from') || undefined
    const back = `${scope.base}/inbox/${pathOf(phone)}${from ? `?from=${encodeURIComponent(from)}` : ''}`
    return orError(
      async () => {
        const senderId = await windowSenderOf(d.sql, scope.accountId, from)
        const moved = await moveConversation(
          d.sql,
          { user: scope.session.user, address: d.addressOf(request) },
          { phone, sender_id: senderId, account_id: scope.accountId, move_messages: field(body, 'move_messages') === 'on' },
        )
        const messages = moved.messages_moved > 0 ? ` with ${moved.messages_moved} received message(s)` : ''
        return d.finish(scope.session, { to: back, notice: `The conversation now belongs to this account${messages}.` })
      },
      (message) => d.finish(scope.session, { to: back, error: `Not moved: ${message}` }),
    )
  }

  const app = pageRoutes()
  for (const prefix of ['', '/accounts/:id']) {
    const accountOf = (params: Record<string, string>) => (prefix ? params.id : undefined)
    app
      .get(`${prefix}/inbox`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : inboxPage(scope, query)
      })
      .get(`${prefix}/inbox/:phone`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : conversationPage(scope, params.phone, query)
      })
      .get(`${prefix}/inbox/:phone/thread`, async ({ request, params, query }) => {
        const scope = await viewScope(d, request, accountOf(params))
        return scope instanceof Response ? scope : threadFragment(scope, params.phone, query)
      })
      .post(`${prefix}/inbox/settings`, async ({ request, params, body }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        return scope instanceof Response ? scope : saveSettings(scope, body, request)
      })
      .post(`${prefix}/inbox/:phone/reply`, async ({ request, params, body }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        return scope instanceof Response ? scope : reply(scope, params.phone, body, request)
      })
      .post(`${prefix}/inbox/:phone/holder`, async ({ request, params, body }) => {
        const scope = await changeScope(d, request, body, accountOf(params))
        return scope instanceof Response ? scope : moveHere(scope, params.phone, body, request)
      })
  }
  return app
}

const HOLDER_SOURCES: Record<HolderSource, string> = {
  first_message: 'its message was the first this customer received through the number',
  reply: 'the customer replied quoting its message',
  operator: 'an operator moved the conversation there',
}

/** Who holds the conversation on a shared number, and the operator's form to move it to this account. */
function HolderCard(props: {
  holder: Formatted<Awaited<ReturnType<typeof sharedConversation>>['holder']>
  holderName: string | null
  here: number
  action: string
  fromField: Child
  session: Scope['session']
}) {
  const { holder } = props
  const heldHere = holder?.account_id === props.here
  return (
    <section class="card" aria-labelledby="holder-title" id="conversation-holder">
      <h2 id="holder-title">Shared number</h2>
      <p>
        Several accounts send through this number. The customer's replies that quote no message, their STOP and START, and their
        message.received events go to{' '}
        {holder ? (
          <>
            <a href={`/dashboard/accounts/${holder.account_id}`}>
              {heldHere ? 'this account' : (props.holderName ?? `account ${holder.account_id}`)}
            </a>{' '}
            ({HOLDER_SOURCES[holder.source]}, {holder.updated_at})
          </>
        ) : (
          'the account whose message the customer received first through it (none has been decided yet)'
        )}
        . A reply quoting a message goes to that message's account.
      </p>
      {heldHere ? null : (
        <form class="stack" method="post" action={props.action} aria-label="Move the conversation to this account">
          <Csrf session={props.session} />
          {props.fromField}
          <label class="choice">
            <input type="checkbox" name="move_messages" />
            Also move the messages this customer already sent to the number
          </label>
          <button class="secondary" type="submit">
            Move the conversation to this account
          </button>
        </form>
      )}
    </section>
  )
}

/** A send's request token (a UUID) from the user and the form's nonce. */
async function tokenOf(userId: number, nonce: string): Promise<string> {
  const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(`inbox:${userId}:${nonce}`)))
  const hex = [...hash.slice(0, 16)].map((b) => b.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}
