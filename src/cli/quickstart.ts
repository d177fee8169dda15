// `quickstart`: from a fresh install to a first message in one command. It finds the demo account by
// its name (or makes it, with an opening balance), makes a new API key every time (a key is shown
// only once, so an earlier one cannot be printed again), invites a dashboard member once, and
// prints `export KEY=...` with the README's calls against the service's real URL. It tops the
// balance up only when asked (--topup), so running it again changes nothing but the new key.

import type * as accounts from '../modules/accounts/model'
import type * as users from '../modules/users/model'
import { CliError } from './client'
import type { Command, Context } from './command'
import { amount, cell, count, type Page } from './format'
import { program } from './program'

type Account = typeof accounts.Account.static
type Key = typeof accounts.CreatedApiKey.static
type User = typeof users.CreatedUser.static

const DEFAULT_NAME = 'Demo account'
const DEFAULT_BALANCE = 100_000

/** The newest account with exactly this name, looked up page by page through the admin API. */
async function findAccount(ctx: Context, name: string): Promise<Account | undefined> {
  for (let offset = 0; ; offset += 200) {
    const page = await ctx.api.call<Page<Account>>('GET', `/admin/v1/accounts?limit=200&offset=${offset}`)
    const found = page.items.find((a) => a.name === name)
    if (found || page.items.length === 0 || offset + page.items.length >= page.total) return found
  }
}

/** The README's first calls, with this service's URL; `$KEY` comes from the export line. */
const firstCalls = (base: string) => [
  `curl -s ${base}/api/v1/balance -H "Authorization: Bearer $KEY"`,
  `curl -s ${base}/api/v1/messages/send -H "Authorization: Bearer $KEY" \\`,
  `  -H 'Content-Type: application/json' -d '{"to":"081234567890","body":"Hello from the messaging API"}'`,
  `curl -s "${base}/api/v1/messages?limit=10" -H "Authorization: Bearer $KEY"`,
]

export const quickstart: Command = {
  name: 'quickstart',
  args: [],
  summary: 'a demo account, a new API key and the calls to try the API',
  details:
    'Run again, it finds the demo account by its name and makes only a new API key (a key is shown once); ' +
    "--topup adds to its balance. The export line sets KEY, ACCOUNT_ID and KEY_ID for the README's examples.",
  example: 'bun run admin quickstart',
  flags: {
    name: { value: 'NAME', help: `the demo account's name (default "${DEFAULT_NAME}")` },
    balance: { value: 'N', help: `opening balance when the account is made (default ${DEFAULT_BALANCE})` },
    topup: { value: 'N', help: 'add N to the balance of the demo account' },
  },
  async run(ctx) {
    const name = (typeof ctx.flags.name === 'string' ? ctx.flags.name : DEFAULT_NAME).trim()
    const balance = ctx.flags.balance !== undefined ? ctx.integer('balance') : DEFAULT_BALANCE
    const topup = ctx.flags.topup !== undefined ? ctx.integer('topup') : undefined

    const found = await findAccount(ctx, name)
    let account = found ?? (await ctx.api.call<Account>('POST', '/admin/v1/accounts', { name, balance }))
    if (topup !== undefined) {
      await ctx.api.call('POST', `/admin/v1/accounts/${account.id}/topups`, { amount: topup, note: 'quickstart' })
      account = await ctx.api.call<Account>('GET', `/admin/v1/accounts/${account.id}`)
    }
    const key = await ctx.api.call<Key>('POST', `/admin/v1/accounts/${account.id}/keys`, { label: 'quickstart' })
    const email = `demo-${account.id}@example.com`
    let member: User | null = null
    try {
      member = await ctx.api.call<User>('POST', `/admin/v1/accounts/${account.id}/members`, { email })
    } catch (error) {
      // Invited by an earlier quickstart: its link cannot be shown again.
      if (!(error instanceof CliError && error.status === 409)) throw error
    }

    const base = ctx.api.base
    const messages = count(Math.floor(account.wa_balance / account.cost_per_message), 'message')
    const text = () =>
      [
        `account ${account.id} "${cell(account.name, Infinity)}" ${found ? 'found by its name' : 'created'}` +
          `${topup !== undefined ? `, topped up by ${amount(topup)}` : ''}: ` +
          `balance ${amount(account.wa_balance)}, price ${amount(account.cost_per_message)} a message (${messages} paid for)` +
          (found && topup === undefined ? '; --topup N adds to it' : ''),
        `API key ${key.id} "quickstart" created; it is shown only now. Run this line in your shell (the ids are for the README's examples):`,
        '',
        `export KEY=${key.key} ACCOUNT_ID=${account.id} KEY_ID=${key.id}`,
        '',
        'Then, in the same shell: the balance, a message, the messages sent:',
        '',
        ...firstCalls(base),
        '',
        ...(member
          ? [`The dashboard, as ${member.email}: set the password with this one-time link (valid 72 hours):`, member.link]
          : [
              `The dashboard: sign in at ${base}/dashboard as ${email} (invited by an earlier quickstart;`,
              `if its link is lost, make a new one: ${program.admin} user link ${email}).`,
            ]),
      ].join('\n')
    return { data: { account, key, member, reused: Boolean(found) }, text }
  },
}
