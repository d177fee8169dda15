// An account's senders in the dashboard: on its account page the operator gives it senders, makes one
// its default and takes them back (each change audited, then a redirect to the account page saying what
// changed); its members see them on their overview, without credentials. The campaign and message pages
// name senders with senderChoice and senderLabel.

import { h } from '../../dashboard/jsx'
import { Csrf } from '../../dashboard/layout'
import { type Dashboard, field, notFound, pageRoutes } from '../../dashboard/context'
import { PagedTable } from '../../dashboard/components'
import type { Session } from '../../dashboard/session'
import { ApiError } from '../../http/errors'
import { idParam } from '../accounts/scope'
import type { AccountSender } from './model'
import { assignSender, listAccountSenders, senderNames, unassignSender, type SenderName } from './service'
import type { Actor } from '../users/service'
import { BudgetText } from '../budgets/pages'
import type { BudgetUse } from '../budgets/service'
import type { Formatted } from '../../lib/time'

/** The sender of a message or campaign in words; null: the deployment's default sender. */
export const senderLabel = (sender: Pick<SenderName, 'name' | 'number'> | undefined, id: number | null) =>
  id === null ? "the service's own number" : sender ? `${sender.name} (${sender.number})` : `sender #${id}`

/** An account's sender as an option of a select. */
export const senderChoice = (s: Pick<AccountSender, 'name' | 'number' | 'provider' | 'default' | 'disabled'>) =>
  `${s.name} (${s.number}, ${s.provider})${s.default ? ', default' : ''}${s.disabled ? ', disabled' : ''}`

const stateOf = (s: AccountSender) => (s.disabled ? <span class="status status-failed">disabled</span> : 'enabled')

/** An account's senders as its members see them (the overview): nothing when it has none. */
export function MemberSenders(props: {
  senders: AccountSender[]
  budgets: Map<number, Formatted<BudgetUse>>
  /** A member's own overview: each sender's name links to its page (its WhatsApp templates). */
  link?: boolean
}) {
  if (props.senders.length === 0) return null
  return (
    <section aria-labelledby="senders-title">
      <h2 id="senders-title">Senders</h2>
      <p class="muted">
        The numbers this account's messages go from: the default one, unless a send names another (<code>from</code>, by its id or number).
      </p>
      <PagedTable
        columns={[
          { header: 'Name', cell: (s) => (props.link ? <a href={`/dashboard/my-senders/${s.id}`}>{s.name}</a> : s.name) },
          { header: 'Number', cell: (s) => s.number, class: 'nowrap' },
          { header: 'Provider', cell: (s) => s.provider },
          { header: 'Id', cell: (s) => s.id, phone: false },
          { header: 'Default', cell: (s) => (s.default ? 'default' : '') },
          { header: 'State', cell: stateOf },
          {
            header: 'Messaging limit',
            cell: (s) => (props.budgets.has(s.id) ? <BudgetText use={props.budgets.get(s.id)!} /> : ''),
          },
        ]}
        rows={props.senders}
      />
      <p class="muted">
        Messaging limit: WhatsApp lets a number (or the business portfolio it belongs to) start conversations with so many new people per
        rolling 24 hours; customers who wrote in the last 24 hours do not count. Past it, sends are refused uncharged (429{' '}
        <code>MESSAGING_LIMIT</code>) and campaigns pause until it frees.
      </p>
    </section>
  )
}

/** The operator's senders section of an account's page: its senders, make one the default, take one back, give one. */
export function AccountSenders(props: { session: Session; accountId: number; senders: AccountSender[]; all: SenderName[] }) {
  const { session, accountId, senders } = props
  const base = `/dashboard/accounts/${accountId}/senders`
  const free = props.all.filter((s) => !senders.some((a) => a.id === s.id))
  const button = (s: AccountSender, path: string, label: string) => (
    <form method="post" action={`${base}/${s.id}/${path}`}>
      <Csrf session={session} />
      <button class="secondary" type="submit" aria-label={`${label}: ${s.name} (${s.number})`}>
        {label}
      </button>
    </form>
  )
  return (
    <section aria-labelledby="senders-title">
      <h2 id="senders-title">Senders</h2>
      <p class="muted">
        This account's messages go from its default sender unless a send names another; without senders, from the service's own number.
      </p>
      <PagedTable
        columns={[
          { header: 'Sender', cell: (s) => <a href={`/dashboard/senders/${s.id}`}>{s.name}</a> },
          { header: 'Number', cell: (s) => s.number, class: 'nowrap' },
          { header: 'Provider', cell: (s) => s.provider },
          { header: 'State', cell: stateOf },
          { header: 'Default', cell: (s) => (s.default ? <strong>default</strong> : button(s, 'default', 'Make default')) },
          { header: 'Take back', cell: (s) => button(s, 'unassign', 'Unassign') },
        ]}
        rows={senders}
        empty="No senders: this account sends from the service's own number."
      />
      {props.all.length === 0 ? (
        <p>
          No senders exist yet: <a href="/dashboard/senders">create one</a> first.
        </p>
      ) : free.length === 0 ? (
        <p class="muted">Every sender is this account's.</p>
      ) : (
        <form class="inline card" method="post" action={base}>
          <Csrf session={session} />
          <label>
            Sender
            <select name="sender_id" id="assign-sender_id" required>
              {free.map((s) => (
                <option value={String(s.id)}>{`${s.name} (${s.number}, ${s.provider})${s.disabled ? ', disabled' : ''}`}</option>
              ))}
            </select>
          </label>
          <label class="choice">
            <input type="checkbox" name="default" id="assign-default" checked={senders.length === 0} />
            Make it the default
          </label>
          <button type="submit">Assign sender</button>
        </form>
      )}
    </section>
  )
}

type Server = Parameters<Dashboard['addressOf']>[1]

/** Assign, make default and unassign: each answers with the account's page saying what changed (or what refused it). */
export function accountSenderPages(d: Dashboard) {
  const OPERATOR = 'operator' as const
  /** Runs a change of account `param`'s senders: 404 for an account that does not exist, the rest said on its page. */
  async function change(
    request: Request,
    body: unknown,
    server: Server,
    param: string,
    fn: (actor: Actor, accountId: number) => Promise<string>,
  ): Promise<Response> {
    const accountId = idParam(param)
    if (accountId === null) return d.formAction(request, body, OPERATOR, async (session) => notFound(session))
    const to = `/dashboard/accounts/${accountId}`
    return d.formAction(
      request,
      body,
      OPERATOR,
      async (session) => {
        const notice = await fn({ user: session.user, address: d.addressOf(request, server) }, accountId)
        d.deps.senders.forget()
        return d.finish(session, { to, notice })
      },
      (error, status, session) =>
        status === 404 && error.startsWith(`account ${accountId} `) ? notFound(session) : d.finish(session, { to, error }),
    )
  }
  const nameOf = async (id: number) => {
    const [sender] = await senderNames(d.sql, [id])
    return sender ? `${sender.name} (${sender.number})` : `sender ${id}`
  }

  return pageRoutes()
    .post('/accounts/:id/senders', ({ request, body, params, server }) =>
      change(request, body, server, params.id, async (actor, accountId) => {
        const senderId = idParam(field(body, 'sender_id'))
        if (senderId === null) throw new ApiError('VALIDATION_ERROR', 'sender_id: choose a sender', 422)
        const senders = await assignSender(d.deps, actor, accountId, senderId, field(body, 'default') === 'on')
        const made = senders.find((s) => s.id === senderId)!
        return `Sender ${made.name} (${made.number}) assigned${made.default ? ": it is this account's default now" : ''}.`
      }),
    )
    .post('/accounts/:id/senders/:sender/default', ({ request, body, params, server }) =>
      change(request, body, server, params.id, async (actor, accountId) => {
        const senderId = idParam(params.sender)
        // Making a sender the default never assigns it: only one of the account's may become its default.
        const own = senderId !== null && (await listAccountSenders(d.sql, accountId)).some((s) => s.id === senderId)
        if (senderId === null || !own) throw new ApiError('NOT_FOUND', "that sender is not this account's")
        await assignSender(d.deps, actor, accountId, senderId, true)
        return `Sender ${await nameOf(senderId)} is this account's default now: sends that name no sender go from it.`
      }),
    )
    .post('/accounts/:id/senders/:sender/unassign', ({ request, body, params, server }) =>
      change(request, body, server, params.id, async (actor, accountId) => {
        const senderId = idParam(params.sender)
        if (senderId === null) throw new ApiError('NOT_FOUND', "that sender is not this account's")
        const name = await nameOf(senderId)
        const left = await unassignSender(d.deps, actor, accountId, senderId)
        const next = left.find((s) => s.default)
        return (
          `Sender ${name} unassigned: ` +
          (next ? `this account's default is ${next.name} (${next.number}).` : "this account sends from the service's own number again.")
        )
      }),
    )
}
