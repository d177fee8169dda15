// The conversation commands: who holds a customer's conversation on a number several accounts share
// (the deployment's number, or a stored sender given to several accounts), and moving one to another
// account (see the README's "A number several accounts share"). Each move is audited.

// The answers' types are the admin API's own models, imported as types only (see commands.ts).
import type * as inbound from '../modules/inbound/model'
import type { Command, Context } from './command'
import { listing, type Column, type Page } from './format'

type Holder = typeof inbound.ConversationHolder.static
type Moved = typeof inbound.MovedConversation.static

const SENDER = {
  value: 'SENDER_ID|default',
  help: "the number: a stored sender's id, or default for the deployment's number (the default)",
}

/** --sender: a sender id, or null for `default` (the deployment's number). */
function senderOf(ctx: Context): number | null {
  const value = ctx.flags.sender
  if (value === undefined || value === 'default') return null
  return ctx.integer('sender')
}

const columns: Column<Holder>[] = [
  { header: 'PHONE', value: (h) => h.phone },
  { header: 'NUMBER', value: (h) => (h.sender_id === null ? 'default' : `sender ${h.sender_id}`) },
  { header: 'ACCOUNT', value: (h) => String(h.account_id), right: true },
  { header: 'HOW', value: (h) => h.source },
  { header: 'SINCE', value: (h) => h.updated_at },
]

export const conversationCommands: Command[] = [
  {
    name: 'conversation holders',
    args: [],
    summary: 'who holds the conversations on numbers several accounts share, newest change first',
    details:
      "A customer's reply that quotes no message, their STOP/START and their message.received events go to the account holding " +
      'the conversation: the one whose message they received first through the number, until they reply quoting another ' +
      "account's message or an operator moves it. Another account's send never moves it.",
    example: 'bun run admin conversation holders --phone 081234567890',
    flags: {
      phone: { value: 'PHONE', help: 'only this customer' },
      account: { value: 'ACCOUNT_ID', help: 'only the conversations this account holds' },
      sender: SENDER,
      limit: { value: 'N', help: 'rows per page (default 50, at most 200)' },
      offset: { value: 'N', help: 'rows to skip' },
    },
    async run(ctx) {
      const query = new URLSearchParams()
      if (typeof ctx.flags.phone === 'string') query.set('phone', ctx.flags.phone)
      if (ctx.flags.account !== undefined) query.set('account_id', String(ctx.id('account')))
      if (ctx.flags.sender !== undefined) query.set('sender_id', String(senderOf(ctx) ?? 'default'))
      if (ctx.flags.limit !== undefined) query.set('limit', String(ctx.integer('limit')))
      if (ctx.flags.offset !== undefined) query.set('offset', String(ctx.integer('offset')))
      const page = await ctx.api.call<Page<Holder>>('GET', `/admin/v1/conversation-holders${query.size ? `?${query}` : ''}`)
      return { data: page, text: () => listing(page, ['conversation'], columns, 'newest change first') }
    },
  },
  {
    name: 'conversation move',
    args: ['PHONE'],
    summary: "move PHONE's conversation on a shared number to another account",
    details:
      "From now on PHONE's unquoted replies to the number, its STOP/START and its message.received events belong to --account; " +
      '--messages moves the messages it already sent to the number there too. The account must send through the number.',
    example: 'bun run admin conversation move 081234567890 --account "$ACCOUNT_ID" --messages',
    flags: {
      account: { value: 'ACCOUNT_ID', required: true, help: 'the account that holds the conversation from now on' },
      sender: SENDER,
      messages: { help: 'also move the messages PHONE already sent to the number' },
    },
    async run(ctx) {
      const moved = await ctx.api.call<Moved>('PUT', '/admin/v1/conversation-holders', {
        phone: ctx.args.PHONE,
        sender_id: senderOf(ctx),
        account_id: ctx.id('account'),
        move_messages: ctx.flags.messages === true,
      })
      const messages = moved.messages_moved > 0 ? `, with ${moved.messages_moved} received message(s)` : ''
      return { data: moved, text: () => `${moved.phone}'s conversation now belongs to account ${moved.account_id}${messages}` }
    },
  },
]
