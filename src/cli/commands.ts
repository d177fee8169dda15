// The admin commands, one entry each: what `help` lists, what each `<command> --help` shows, and
// what runs. Handlers call the admin API and answer its data with a text rendering; --json and
// --quiet are handled by the caller. Examples use the shell variables the quickstart exports
// (ACCOUNT_ID, KEY_ID) or that the README's worked examples set.

// The answers' types are the admin API's own models; imported as types only, so the command line
// loads nothing of the service.
import type * as accounts from '../modules/accounts/model'
import type * as campaigns from '../modules/campaigns/model'
import type * as ledger from '../modules/ledger/model'
import type * as messages from '../modules/messages/model'
import type * as templates from '../modules/templates/model'
import type * as users from '../modules/users/model'
import type * as webhooks from '../modules/webhooks/model'
import type * as simulator from '../providers/simulator/model'
import { UsageError } from './args'
import { CliError } from './client'
import { QUIET, type Command, type Context, type Flag } from './command'
import { amount, cell, count, listing, type Column, type Page } from './format'
import { program } from './program'
import { senderTemplateList } from './wa-templates'

type Account = typeof accounts.Account.static
type Key = typeof accounts.ApiKey.static
type CreatedKey = typeof accounts.CreatedApiKey.static
type BalanceAfter = typeof accounts.BalanceAfter.static
type Price = typeof accounts.Price.static
type LedgerRow = typeof ledger.LedgerRow.static
type Binding = typeof templates.Binding.static
type Template = typeof templates.Template.static
type Segment = typeof templates.Segment.static
type Deleted = typeof templates.Deleted.static
type Campaign = typeof campaigns.Campaign.static
type CampaignDetail = typeof campaigns.CampaignDetail.static
type Delivery = typeof webhooks.Delivery.static
type Replayed = typeof webhooks.Replayed.static
type Quarantined = typeof messages.QuarantinedMessage.static
type Settled = typeof messages.Settled.static
type CreatedUser = typeof users.CreatedUser.static
type User = typeof users.User.static
type IssuedLink = typeof users.IssuedLink.static
type Inbound = typeof simulator.InboundAnswer.static

/** A name in running text, quoted, with control characters made visible. */
const named = (name: string) => `"${cell(name, Infinity)}"`

const bindingLine = (b: Binding) =>
  `${b.provider}: ${cell(b.ref, Infinity)}${b.language ? ` (${b.language})` : ''}, variables ${b.variables.length ? b.variables.join(', ') : 'none'}`

const PAGE_FLAGS: Record<string, Flag> = {
  limit: { value: 'N', help: 'rows to show, 1 to 200 (default 50)' },
  offset: { value: 'N', help: 'rows to skip (default 0)' },
}
function pageQuery(ctx: Context): string {
  const query = new URLSearchParams()
  if (ctx.flags.limit !== undefined) query.set('limit', String(ctx.integer('limit')))
  if (ctx.flags.offset !== undefined) query.set('offset', String(ctx.integer('offset')))
  return query.size ? `?${query}` : ''
}
const ids = (page: Page<{ id: number }>) => () => page.items.map((item) => item.id)

const accountLine = (a: Account) =>
  `balance ${amount(a.wa_balance)}, price ${amount(a.cost_per_message)} a message (${count(Math.floor(a.wa_balance / a.cost_per_message), 'message')} paid for)`

const thresholdLine = (a: Account) =>
  a.low_balance_threshold === null ? 'low-balance alert: none' : `low-balance alert (balance.low) below ${amount(a.low_balance_threshold)}`

const LOW_BALANCE_FLAG = { value: 'N|none', help: 'send balance.low when a charge takes the balance below N; none: no alert' }
const lowBalance = (ctx: Context) => (ctx.flags['low-balance'] === 'none' ? null : ctx.integer('low-balance'))

const priceLine = (p: Price) =>
  (p.account_id === null
    ? `price ${amount(p.cost_per_message)} a message, for every account without its own price`
    : `price ${amount(p.cost_per_message)} a message for account ${p.account_id} (${p.account_override ? 'its own price' : 'the global price'})`) +
  `\nlate failures (failed after the provider accepted them): ${p.refund_late_failures ? 'refunded' : 'kept charged'}` +
  `\nby category: ${(['marketing', 'utility', 'authentication', 'service'] as const)
    .map((c) => `${c} ${amount(p.prices[c])}${p.own_prices[c] === undefined ? ' (cost per message)' : ''}`)
    .join(', ')}` +
  `\nMeta's pricing reports: ${p.settle === 'provider' ? 'settle each message to the category Meta reports' : 'keep the charge as made'}`

function describeLimits(k: Key): string {
  const rate = k.rate_limit_per_minute === null ? "the service's default" : `${amount(k.rate_limit_per_minute)} (its own)`
  const cap = k.daily_spend_cap === null ? 'none' : amount(k.daily_spend_cap)
  return [
    `key ${k.id} ${named(k.label)} of account ${k.account_id}`,
    `  requests a minute: ${rate}`,
    `  daily spend cap: ${cap}; charged today: ${amount(k.spent_today)}`,
  ].join('\n')
}

function describeCampaign({ campaign: c, stats: s }: CampaignDetail): string {
  const times = [
    c.schedule_at && `scheduled ${c.schedule_at}`,
    c.started_at && `started ${c.started_at}`,
    c.finished_at && `finished ${c.finished_at}`,
  ]
  return [
    `campaign ${c.id} ${named(c.name)}: ${c.status}${c.pause_reason ? ` (${c.pause_reason})` : ''}`,
    `  total ${s.total}, sent ${s.sent}, delivered ${s.delivered}, read ${s.read}, failed ${s.failed}`,
    `  from ${c.sender_id === null ? "the deployment's number" : `sender ${c.sender_id}`}`,
    ...(times.some(Boolean) ? [`  ${times.filter(Boolean).join(', ')}`] : []),
  ].join('\n')
}

const accountColumns: Column<Account>[] = [
  { header: 'ID', value: (a) => String(a.id), right: true },
  { header: 'NAME', value: (a) => cell(a.name) },
  { header: 'BALANCE', value: (a) => amount(a.wa_balance), right: true },
  { header: 'PRICE', value: (a) => amount(a.cost_per_message), right: true },
  { header: 'CREATED', value: (a) => a.created_at },
]

export const userCommands: Command[] = [
  {
    name: 'operator create',
    args: ['EMAIL'],
    summary: 'a dashboard operator, with a one-time link to set the password',
    details: 'An operator sees and manages every account in the dashboard.',
    example: 'bun run admin operator create ops@example.com',
    async run(ctx) {
      const user = await ctx.api.call<CreatedUser>('POST', '/admin/v1/operators', { email: ctx.args.EMAIL })
      return {
        data: user,
        text: () => [`operator ${user.email} created`, 'set the password with this one-time link (valid 72 hours):', user.link].join('\n'),
      }
    },
  },
  {
    name: 'member invite',
    args: ['ACCOUNT_ID', 'EMAIL'],
    summary: 'a dashboard member of an account, with a one-time link to pass on',
    example: 'bun run admin member invite "$ACCOUNT_ID" ana@example.com',
    async run(ctx) {
      const user = await ctx.api.call<CreatedUser>('POST', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/members`, { email: ctx.args.EMAIL })
      return {
        data: user,
        text: () =>
          [`member ${user.email} of account ${user.account_id} invited`, 'pass on this one-time link (valid 72 hours):', user.link].join(
            '\n',
          ),
      }
    },
  },
  {
    name: 'user list',
    args: [],
    summary: 'the dashboard users, operators and members, oldest first',
    example: 'bun run admin user list',
    flags: { ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<User>>('GET', `/admin/v1/users${pageQuery(ctx)}`)
      const columns: Column<User>[] = [
        { header: 'ID', value: (u) => String(u.id), right: true },
        { header: 'EMAIL', value: (u) => cell(u.email, 60) },
        { header: 'ROLE', value: (u) => u.role },
        { header: 'ACCOUNT', value: (u) => cell(u.account_id), right: true },
        { header: 'STATUS', value: (u) => (!u.active ? 'deactivated' : u.password_set ? 'active' : 'invited') },
        { header: 'CREATED', value: (u) => u.created_at },
      ]
      return { data: page, text: () => listing(page, ['user'], columns, 'oldest first'), quiet: ids(page) }
    },
  },
  {
    name: 'user link',
    args: ['EMAIL|ID'],
    summary: 'a new one-time link for a user who lost theirs: an invitation, or a password reset',
    details:
      'An invitation while the user has never set a password, a password reset once they have; either is valid 72 hours ' +
      'and works once. The earlier unused links of the user stop working. EMAIL|ID is their e-mail, or their id in ' +
      '`bun run admin user list`.',
    example: 'bun run admin user link ops@example.com',
    async run(ctx) {
      const issued = await ctx.api.call<IssuedLink>('POST', `/admin/v1/users/${await userId(ctx)}/link`)
      const what = issued.kind === 'invite' ? 'invitation' : 'password-reset'
      return {
        data: issued,
        text: () =>
          [
            `new ${what} link for ${issued.role} ${issued.email}; earlier links of theirs no longer work`,
            'pass on this one-time link (valid 72 hours):',
            issued.link,
          ].join('\n'),
      }
    },
  },
]

/** The id of the user the argument EMAIL|ID names: an id as given, an e-mail looked up. */
async function userId(ctx: Context): Promise<number> {
  const given = ctx.args['EMAIL|ID']!
  if (/^\d+$/.test(given)) return ctx.id('EMAIL|ID')
  const found = await ctx.api.call<Page<User>>('GET', `/admin/v1/users?email=${encodeURIComponent(given)}`)
  if (!found.items[0]) throw new CliError(`no user with the e-mail ${cell(given, Infinity)} (see: ${program.admin} user list)`)
  return found.items[0].id
}

export const accountCommands: Command[] = [
  {
    name: 'account create',
    args: ['NAME'],
    summary: 'create an account',
    example: 'bun run admin account create "Acme Retail" --balance 500000',
    flags: {
      balance: { value: 'N', help: 'opening balance, recorded as a top-up (default 0)' },
      'low-balance': LOW_BALANCE_FLAG,
      quiet: QUIET,
    },
    async run(ctx) {
      const body: Record<string, unknown> = { name: ctx.args.NAME }
      if (ctx.flags.balance !== undefined) body.balance = ctx.integer('balance')
      if (ctx.flags['low-balance'] !== undefined) body.low_balance_threshold = lowBalance(ctx)
      const account = await ctx.api.call<Account>('POST', '/admin/v1/accounts', body)
      return {
        data: account,
        text: () => `account ${account.id} ${named(account.name)} created: ${accountLine(account)}`,
        quiet: () => [account.id],
      }
    },
  },
  {
    name: 'account list',
    args: [],
    summary: 'the accounts, newest first, with balance and price',
    example: 'bun run admin account list',
    flags: { ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<Account>>('GET', `/admin/v1/accounts${pageQuery(ctx)}`)
      return { data: page, text: () => listing(page, ['account'], accountColumns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'account show',
    args: ['ACCOUNT_ID'],
    summary: 'one account: balance, price, messages the balance pays for',
    example: 'bun run admin account show "$ACCOUNT_ID"',
    async run(ctx) {
      const a = await ctx.api.call<Account>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}`)
      return {
        data: a,
        text: () => `account ${a.id} ${named(a.name)}, created ${a.created_at}\n${accountLine(a)}\n${thresholdLine(a)}`,
      }
    },
  },
  {
    name: 'account update',
    args: ['ACCOUNT_ID'],
    summary: "change an account's low-balance threshold (the balance.low webhook event)",
    details:
      'A charge that takes the balance from at or above the threshold to below it sends one balance.low event to the ' +
      "account's webhook registrations that chose it; the next needs the balance back at or above it. --low-balance none: no alert.",
    example: 'bun run admin account update "$ACCOUNT_ID" --low-balance 50000',
    flags: { 'low-balance': { ...LOW_BALANCE_FLAG, required: true } },
    async run(ctx) {
      const a = await ctx.api.call<Account>('PATCH', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}`, {
        low_balance_threshold: lowBalance(ctx),
      })
      return { data: a, text: () => `account ${a.id} ${named(a.name)}: ${thresholdLine(a)}` }
    },
  },
  {
    name: 'key create',
    args: ['ACCOUNT_ID', 'LABEL'],
    summary: 'a new API key for an account (the key is shown only this once)',
    details: 'With --quiet it prints only the key, for a script to keep: KEY=$(bun run admin key create ... --quiet).',
    example: 'bun run admin key create "$ACCOUNT_ID" "ERP production"',
    flags: { quiet: { short: 'q', help: 'print only the key' } },
    async run(ctx) {
      const key = await ctx.api.call<CreatedKey>('POST', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/keys`, {
        label: ctx.args.LABEL,
      })
      return {
        data: key,
        text: () => `key ${key.id} ${named(key.label)} of account ${key.account_id} (shown once, keep it now): ${key.key}`,
        quiet: () => [key.key],
      }
    },
  },
  {
    name: 'key list',
    args: ['ACCOUNT_ID'],
    summary: "an account's API keys (without the secrets)",
    example: 'bun run admin key list "$ACCOUNT_ID"',
    flags: { quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<Key>>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/keys`)
      const columns: Column<Key>[] = [
        { header: 'ID', value: (k) => String(k.id), right: true },
        { header: 'KEY', value: (k) => `${k.prefix}…` },
        { header: 'LABEL', value: (k) => cell(k.label) },
        { header: 'STATUS', value: (k) => (k.active ? 'active' : 'inactive') },
        { header: 'LAST USED', value: (k) => k.last_used_at ?? 'never' },
        { header: 'CREATED', value: (k) => k.created_at },
      ]
      return { data: page, text: () => listing(page, ['key'], columns), quiet: ids(page) }
    },
  },
  ...(['activate', 'deactivate'] as const).map((verb): Command => ({
    name: `key ${verb}`,
    args: ['KEY_ID'],
    summary: `${verb} an API key (takes effect on its next request)`,
    example: `bun run admin key ${verb} "$KEY_ID"`,
    async run(ctx) {
      const key = await ctx.api.call<Key>('PATCH', `/admin/v1/keys/${ctx.id('KEY_ID')}`, { active: verb === 'activate' })
      return {
        data: key,
        text: () => `key ${key.id} ${named(key.label)} of account ${key.account_id} is now ${key.active ? 'active' : 'inactive'}`,
      }
    },
  })),
  {
    name: 'key limits',
    args: ['KEY_ID'],
    summary: "an API key's request rate and daily spend cap: shown, or set with --rate and --cap",
    details:
      "--rate N: the requests per minute the key may make (beyond it the API answers 429); --rate default: the service's " +
      'KEY_RATE_LIMIT_PER_MINUTE again. --cap AMOUNT: the most the key may be charged a day in the service time zone ' +
      '(a send beyond it is refused with 402, nothing charged); --cap none: no cap. Each takes effect on the next request.',
    example: 'bun run admin key limits "$KEY_ID" --rate 1200 --cap 500000',
    flags: {
      rate: { value: 'N|default', help: 'requests per minute, or default' },
      cap: { value: 'AMOUNT|none', help: 'the daily spend cap, or none' },
    },
    async run(ctx) {
      const path = `/admin/v1/keys/${ctx.id('KEY_ID')}`
      const change: Record<string, number | null> = {}
      if (ctx.flags.rate !== undefined) change.rate_limit_per_minute = ctx.flags.rate === 'default' ? null : ctx.integer('rate')
      if (ctx.flags.cap !== undefined) change.daily_spend_cap = ctx.flags.cap === 'none' ? null : ctx.integer('cap')
      const key = Object.keys(change).length > 0 ? await ctx.api.call<Key>('PATCH', path, change) : await ctx.api.call<Key>('GET', path)
      return { data: key, text: () => describeLimits(key) }
    },
  },
]

export const moneyCommands: Command[] = [
  {
    name: 'topup',
    args: ['ACCOUNT_ID', 'AMOUNT'],
    summary: "add to an account's balance",
    example: 'bun run admin topup "$ACCOUNT_ID" 250000 --note "invoice 2026-11"',
    flags: { note: { value: 'TEXT', help: 'kept on the ledger row' } },
    async run(ctx) {
      const accountId = ctx.id('ACCOUNT_ID')
      const added = ctx.integer('AMOUNT')
      const note = ctx.flags.note
      const result = await ctx.api.call<BalanceAfter>('POST', `/admin/v1/accounts/${accountId}/topups`, {
        amount: added,
        ...(typeof note === 'string' ? { note } : {}),
      })
      return { data: result, text: () => `account ${accountId} topped up by ${amount(added)}: balance ${amount(result.wa_balance)}` }
    },
  },
  {
    name: 'price set',
    args: ['AMOUNT'],
    summary: "set the price of a message: global, or an account's own",
    details:
      'A message the provider accepted and later reported failed is refunded, unless its price keeps late failures charged ' +
      '(--late-failures charge). Both the price and that choice are fixed on each message when it is charged; without ' +
      "--late-failures the choice stays as it is (an account's new own price starts with the one it follows now).",
    example: 'bun run admin price set 350 --marketing 700 --utility 350 --late-failures refund',
    flags: {
      account: { value: 'ACCOUNT_ID', help: "set this account's own price instead of the global one" },
      marketing: { value: 'AMOUNT|none', help: "the marketing category's own price (none: cost per message)" },
      utility: { value: 'AMOUNT|none', help: "the utility category's own price (none: cost per message)" },
      authentication: { value: 'AMOUNT|none', help: "the authentication category's own price (none: cost per message)" },
      service: { value: 'AMOUNT|none', help: "the service category's own price (none: cost per message)" },
      settle: {
        value: 'provider|keep',
        help: "Meta's pricing reports: settle each message to the category Meta reports, or keep the charge as made",
      },
      'late-failures': {
        value: 'refund|charge',
        help: 'messages that fail after the provider accepted them: refund them, or keep them charged',
      },
    },
    async run(ctx) {
      const body: Record<string, unknown> = { cost_per_message: ctx.integer('AMOUNT') }
      if (ctx.flags.account !== undefined) body.account_id = ctx.id('account')
      const late = ctx.flags['late-failures']
      if (late !== undefined) {
        if (late !== 'refund' && late !== 'charge')
          throw new UsageError(`--late-failures: expected refund or charge, got '${late}'`, `see: ${program.admin} price set --help`)
        body.refund_late_failures = late === 'refund'
      }
      const prices: Record<string, number | null> = {}
      for (const category of ['marketing', 'utility', 'authentication', 'service'] as const) {
        if (ctx.flags[category] === undefined) continue
        prices[category] = ctx.flags[category] === 'none' ? null : ctx.integer(category)
      }
      if (Object.keys(prices).length > 0) body.prices = prices
      const settle = ctx.flags.settle
      if (settle !== undefined) {
        if (settle !== 'provider' && settle !== 'keep')
          throw new UsageError(`--settle: expected provider or keep, got '${settle}'`, `see: ${program.admin} price set --help`)
        body.settle = settle
      }
      const price = await ctx.api.call<Price>('PUT', '/admin/v1/price', body)
      return { data: price, text: () => priceLine(price) }
    },
  },
  {
    name: 'price show',
    args: [],
    summary: 'the price in force: globally, or for one account',
    example: 'bun run admin price show --account "$ACCOUNT_ID"',
    flags: { account: { value: 'ACCOUNT_ID', help: 'the price this account pays (its own, or the global one)' } },
    async run(ctx) {
      const query = ctx.flags.account !== undefined ? `?account_id=${ctx.id('account')}` : ''
      const price = await ctx.api.call<Price>('GET', `/admin/v1/price${query}`)
      return { data: price, text: () => priceLine(price) }
    },
  },
  {
    name: 'ledger',
    args: ['ACCOUNT_ID'],
    summary: "an account's ledger: every balance change, newest first",
    example: 'bun run admin ledger "$ACCOUNT_ID" --limit 20',
    flags: PAGE_FLAGS,
    async run(ctx) {
      const page = await ctx.api.call<Page<LedgerRow>>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/ledger${pageQuery(ctx)}`)
      const columns: Column<LedgerRow>[] = [
        { header: 'ID', value: (r) => String(r.id), right: true },
        { header: 'TIME', value: (r) => r.created_at },
        { header: 'KIND', value: (r) => r.kind },
        { header: 'AMOUNT', value: (r) => amount(r.amount, true), right: true },
        { header: 'BALANCE', value: (r) => amount(r.balance_after), right: true },
        { header: 'MESSAGE', value: (r) => cell(r.message_id), right: true },
        { header: 'NOTE', value: (r) => cell(r.note) },
      ]
      return { data: page, text: () => listing(page, ['ledger row'], columns, 'newest first') }
    },
  },
]

export const campaignCommands: Command[] = [
  {
    name: 'template create',
    args: ['ACCOUNT_ID', 'NAME', 'BODY'],
    summary: 'a campaign template; BODY may use {{name}}, {{phone}}, {{email}}, {{city}}',
    example: 'bun run admin template create "$ACCOUNT_ID" "November promo" "Hi {{name}}, 20% off in {{city}} this week"',
    flags: { quiet: QUIET },
    async run(ctx) {
      const t = await ctx.api.call<Template>('POST', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/templates`, {
        name: ctx.args.NAME,
        body: ctx.args.BODY,
      })
      return { data: t, text: () => `template ${t.id} ${named(t.name)} created: ${cell(t.body, Infinity)}`, quiet: () => [t.id] }
    },
  },
  {
    name: 'template list',
    args: ['[ACCOUNT_ID]'],
    summary: "an account's templates, newest first; with --sender, a sender's WhatsApp templates",
    example: 'bun run admin template list "$ACCOUNT_ID"',
    flags: {
      ...PAGE_FLAGS,
      quiet: QUIET,
      sender: { value: 'SENDER_ID', help: "a sender's WhatsApp templates instead (0: the deployment's default sender)" },
    },
    async run(ctx) {
      if (ctx.flags.sender !== undefined) {
        if (ctx.args.ACCOUNT_ID !== undefined) throw ctx.usage('template list: give ACCOUNT_ID or --sender, not both')
        return senderTemplateList(ctx)
      }
      if (ctx.args.ACCOUNT_ID === undefined) throw ctx.usage('template list: give ACCOUNT_ID (or --sender SENDER_ID)')
      const page = await ctx.api.call<Page<Template>>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/templates${pageQuery(ctx)}`)
      const columns: Column<Template>[] = [
        { header: 'ID', value: (t) => String(t.id), right: true },
        { header: 'NAME', value: (t) => cell(t.name, 30) },
        { header: 'BODY', value: (t) => cell(t.body, 60) },
        { header: 'CREATED', value: (t) => t.created_at },
      ]
      return { data: page, text: () => listing(page, ['template'], columns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'template show',
    args: ['TEMPLATE_ID'],
    summary: 'a template of any account, with its approved-template bindings',
    example: 'bun run admin template show "$TEMPLATE_ID"',
    async run(ctx) {
      const t = await ctx.api.call<Template>('GET', `/admin/v1/templates/${ctx.id('TEMPLATE_ID')}`)
      const bindings = t.bindings.length
        ? t.bindings.map((b) => `  ${bindingLine(b)}`)
        : ['  no approved template bound: sent as free-form text']
      return { data: t, text: () => [`template ${t.id} ${named(t.name)}: ${cell(t.body, Infinity)}`, ...bindings].join('\n') }
    },
  },
  {
    name: 'template bind',
    args: ['TEMPLATE_ID', 'PROVIDER', 'REF'],
    summary: "bind a template to a provider's approved template (twilio, meta or simulator)",
    details:
      "REF is the Content SID (HX…) for twilio, the approved template's name for meta (with --language), any name for the simulator. " +
      "--variables lists the template's placeholders that fill the approved template's variables, in its order ({{1}}, {{2}}… for " +
      'Twilio, the body parameters for Meta). One binding per provider: binding again replaces it. Campaigns and sends with the template ' +
      'then send the approved template while PROVIDER is that provider.',
    example: 'bun run admin template bind "$TEMPLATE_ID" twilio HX0123456789abcdef0123456789abcdef --variables name,city',
    flags: {
      language: { value: 'CODE', help: "the template's language code, e.g. en_US or id (meta: required; twilio: none)" },
      variables: {
        value: 'NAMES',
        help: "placeholder names in the approved template's order, comma-separated, e.g. name,city (default none)",
      },
    },
    async run(ctx) {
      const body: Record<string, unknown> = { ref: ctx.args.REF }
      if (typeof ctx.flags.language === 'string') body.language = ctx.flags.language
      if (typeof ctx.flags.variables === 'string')
        body.variables = ctx.flags.variables
          .split(',')
          .map((v) => v.trim())
          .filter(Boolean)
      const id = ctx.id('TEMPLATE_ID')
      const b = await ctx.api.call<Binding>('PUT', `/admin/v1/templates/${id}/bindings/${encodeURIComponent(ctx.args.PROVIDER!)}`, body)
      return { data: b, text: () => `template ${id} bound: ${bindingLine(b)}` }
    },
  },
  {
    name: 'template unbind',
    args: ['TEMPLATE_ID', 'PROVIDER'],
    summary: "remove a template's binding for a provider (it goes as free-form text there again)",
    example: 'bun run admin template unbind "$TEMPLATE_ID" twilio',
    async run(ctx) {
      const id = ctx.id('TEMPLATE_ID')
      const provider = ctx.args.PROVIDER!
      const result = await ctx.api.call<Deleted>('DELETE', `/admin/v1/templates/${id}/bindings/${encodeURIComponent(provider)}`)
      return { data: result, text: () => `template ${id} is no longer bound for ${provider}` }
    },
  },
  {
    name: 'segment create',
    args: ['ACCOUNT_ID', 'NAME', 'TAG'],
    summary: "a segment: the account's contacts with TAG (case-insensitive)",
    example: 'bun run admin segment create "$ACCOUNT_ID" "VIP customers" vip',
    flags: { quiet: QUIET },
    async run(ctx) {
      const s = await ctx.api.call<Segment>('POST', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/segments`, {
        name: ctx.args.NAME,
        tag: ctx.args.TAG,
      })
      return {
        data: s,
        text: () => `segment ${s.id} ${named(s.name)} created: tag ${named(s.tag)}, ${count(s.contact_count, 'contact')} now`,
        quiet: () => [s.id],
      }
    },
  },
  {
    name: 'segment list',
    args: ['ACCOUNT_ID'],
    summary: "an account's segments with their contact counts, newest first",
    example: 'bun run admin segment list "$ACCOUNT_ID"',
    flags: { ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<Segment>>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/segments${pageQuery(ctx)}`)
      const columns: Column<Segment>[] = [
        { header: 'ID', value: (s) => String(s.id), right: true },
        { header: 'NAME', value: (s) => cell(s.name, 30) },
        { header: 'TAG', value: (s) => cell(s.tag, 30) },
        { header: 'CONTACTS', value: (s) => amount(s.contact_count), right: true },
        { header: 'CREATED', value: (s) => s.created_at },
      ]
      return { data: page, text: () => listing(page, ['segment'], columns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'campaign list',
    args: ['ACCOUNT_ID'],
    summary: "an account's campaigns, newest first",
    example: 'bun run admin campaign list "$ACCOUNT_ID"',
    flags: { ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<Campaign>>('GET', `/admin/v1/accounts/${ctx.id('ACCOUNT_ID')}/campaigns${pageQuery(ctx)}`)
      const columns: Column<Campaign>[] = [
        { header: 'ID', value: (c) => String(c.id), right: true },
        { header: 'NAME', value: (c) => cell(c.name, 30) },
        { header: 'STATUS', value: (c) => c.status },
        { header: 'TEMPLATE', value: (c) => String(c.template_id), right: true },
        { header: 'SEGMENT', value: (c) => String(c.segment_id), right: true },
        { header: 'SENDER', value: (c) => (c.sender_id === null ? '-' : String(c.sender_id)), right: true },
        { header: 'SCHEDULED', value: (c) => c.schedule_at ?? '-' },
        { header: 'CREATED', value: (c) => c.created_at },
      ]
      return { data: page, text: () => listing(page, ['campaign'], columns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'campaign show',
    args: ['CAMPAIGN_ID'],
    summary: 'a campaign of any account, with its live stats',
    example: 'bun run admin campaign show "$CAMPAIGN_ID"',
    async run(ctx) {
      const detail = await ctx.api.call<CampaignDetail>('GET', `/admin/v1/campaigns/${ctx.id('CAMPAIGN_ID')}`)
      return { data: detail, text: () => describeCampaign(detail) }
    },
  },
  ...(
    [
      ['run', 'run a draft campaign: now, or at its schedule_at'],
      ['resume', 'resume a campaign paused for lack of balance (after a top-up)'],
      ['cancel', 'cancel a campaign that has not finished'],
    ] as const
  ).map(([verb, summary]): Command => ({
    name: `campaign ${verb}`,
    args: ['CAMPAIGN_ID'],
    summary,
    example: `bun run admin campaign ${verb} "$CAMPAIGN_ID"`,
    async run(ctx) {
      const detail = await ctx.api.call<CampaignDetail>('POST', `/admin/v1/campaigns/${ctx.id('CAMPAIGN_ID')}/${verb}`)
      return { data: detail, text: () => describeCampaign(detail) }
    },
  })),
]

/** What `simulator inbound` did, as it happened: the number written to, and whose the message is. */
function describeWriteIn(w: Inbound, namedAccount: number | null): string {
  const to = w.sender ?? "the deployment's number"
  const stored = w.inbound_id === undefined ? '' : ` (inbound message ${w.inbound_id})`
  if (w.account_id === null) {
    const lost =
      `${w.phone} wrote to ${to}${stored}, but the message belongs to no account (no account holds a conversation with ${w.phone} ` +
      'there): no message.received event went out.'
    // A shared number's customer belongs to the account that messaged them first there (docs/guides/inbound.md):
    // naming the account picks its default sender, it does not hand the customer over.
    return namedAccount === null
      ? `${lost} Name the account with --account, or its number with --sender.`
      : `${lost} Account ${namedAccount} sends through ${to}, which it shares: send ${w.phone} a message from account ` +
          `${namedAccount} first (its replies then belong to it), or give the account a sender of its own.`
  }
  return (
    `${w.phone} wrote to ${to}${stored}, a message of account ${w.account_id}: free-form messages from ${to} to ${w.phone} ` +
    `are accepted until ${w.window_until}`
  )
}

export const simulatorCommands: Command[] = [
  {
    name: 'simulator inbound',
    args: ['PHONE'],
    summary: 'simulator: PHONE writes in (an inbound message), opening its 24-hour window with the sender',
    details:
      "Stores an inbound text message from PHONE now (GET /api/v1/inbound), to --sender (a stored sender's number); without it, " +
      "to the default sender of --account, else to the number that last wrote to PHONE, else to the deployment's number. " +
      'It prints the number written to and the account the message belongs to (none: no message.received event went out). ' +
      "Like any inbound message it opens PHONE's 24-hour window with that sender: with " +
      'SIM_REQUIRE_TEMPLATE=true a free-form message outside it is refused (422 WINDOW_CLOSED before charging, or error 63016, ' +
      'refunded, with WINDOW_CHECK=off), as WhatsApp does; approved templates always go.',
    example: 'bun run admin simulator inbound 081234567890',
    flags: {
      body: { value: 'TEXT', help: 'what PHONE writes (default: a placeholder text)' },
      sender: { value: 'NUMBER', help: "the stored sender's number it writes to (default: see --account)" },
      account: {
        value: 'ID',
        help: "without --sender: the account whose default sender it writes to (default: the number that last wrote to PHONE, else the deployment's)",
      },
      name: { value: 'NAME', help: "the customer's name, as a provider would give it" },
    },
    async run(ctx) {
      const text = (name: string) => (typeof ctx.flags[name] === 'string' ? (ctx.flags[name] as string) : undefined)
      const w = await ctx.api.call<Inbound>('POST', '/admin/v1/simulator/inbound', {
        phone: ctx.args.PHONE,
        ...(text('body') === undefined ? {} : { body: text('body') }),
        ...(text('sender') === undefined ? {} : { sender: text('sender') }),
        ...(text('name') === undefined ? {} : { name: text('name') }),
        ...(text('account') === undefined ? {} : { account_id: ctx.id('account') }),
      })
      return { data: w, text: () => describeWriteIn(w, text('account') === undefined ? null : ctx.id('account')) }
    },
  },
]

export const deliveryCommands: Command[] = [
  {
    name: 'deliveries',
    args: ['KEY_ID'],
    summary: "a key's webhook deliveries, newest first",
    example: 'bun run admin deliveries "$KEY_ID" --status failed',
    flags: { status: { value: 'STATUS', help: 'only pending, delivered or failed ones' }, ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const query = new URLSearchParams(pageQuery(ctx))
      if (typeof ctx.flags.status === 'string') query.set('status', ctx.flags.status)
      const page = await ctx.api.call<Page<Delivery>>(
        'GET',
        `/admin/v1/keys/${ctx.id('KEY_ID')}/deliveries${query.size ? `?${query}` : ''}`,
      )
      const columns: Column<Delivery>[] = [
        { header: 'ID', value: (d) => String(d.id), right: true },
        { header: 'STATUS', value: (d) => d.status },
        { header: 'ATTEMPTS', value: (d) => String(d.attempts), right: true },
        { header: 'EVENT', value: (d) => (d.payload.data.test === true ? 'test event' : d.event) },
        { header: 'MESSAGE', value: (d) => d.message_sid ?? '-' },
        { header: 'CREATED', value: (d) => d.created_at },
        { header: 'DELIVERED / NEXT TRY', value: (d) => d.delivered_at ?? d.next_attempt_at ?? '-' },
        { header: 'LAST ERROR', value: (d) => cell(d.last_error, 60) },
      ]
      return { data: page, text: () => listing(page, ['delivery', 'deliveries'], columns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'replay',
    args: ['DELIVERY_ID'],
    summary: 'deliver one webhook event again now (same webhook-id)',
    example: 'bun run admin replay "$(bun run admin deliveries "$KEY_ID" --status failed --quiet | head -n 1)"',
    async run(ctx) {
      const d = await ctx.api.call<Delivery>('POST', `/admin/v1/deliveries/${ctx.id('DELIVERY_ID')}/replay`)
      return { data: d, text: () => `delivery ${d.id} queued again (webhook-id ${d.webhook_id}, as before)` }
    },
  },
  {
    name: 'replay-failed',
    args: ['KEY_ID'],
    summary: "deliver again a key's failed events created since TIME",
    example: 'bun run admin replay-failed "$KEY_ID" --since "2026-11-21 00:00:00"',
    flags: {
      since: {
        value: 'TIME',
        required: true,
        help: 'failed deliveries created at or after TIME, "YYYY-MM-DD HH:MM:SS" in the service\'s TIMEZONE',
      },
    },
    async run(ctx) {
      const since = ctx.flags.since
      const result = await ctx.api.call<Replayed>('POST', `/admin/v1/keys/${ctx.id('KEY_ID')}/deliveries/replay`, { since })
      return { data: result, text: () => `${count(result.replayed, 'failed delivery', 'failed deliveries')} queued again` }
    },
  },
]

export const quarantineCommands: Command[] = [
  {
    name: 'quarantine',
    args: [],
    summary: 'messages whose hand-off outcome could not be recorded',
    example: 'bun run admin quarantine',
    flags: { ...PAGE_FLAGS, quiet: QUIET },
    async run(ctx) {
      const page = await ctx.api.call<Page<Quarantined>>('GET', `/admin/v1/quarantine${pageQuery(ctx)}`)
      const columns: Column<Quarantined>[] = [
        { header: 'ID', value: (m) => String(m.id), right: true },
        { header: 'ACCOUNT', value: (m) => String(m.account_id), right: true },
        { header: 'PHONE', value: (m) => m.phone },
        { header: 'COST', value: (m) => amount(m.cost), right: true },
        { header: 'RECOVERIES', value: (m) => String(m.handoff_recoveries), right: true },
        { header: 'QUARANTINED', value: (m) => m.quarantined_at },
      ]
      return { data: page, text: () => listing(page, ['quarantined message'], columns, 'newest first'), quiet: ids(page) }
    },
  },
  {
    name: 'settle',
    args: ['MESSAGE_ID', 'sent|refund'],
    summary: 'settle a quarantined message: sent (the provider has it) or refund',
    details:
      'MESSAGE_ID is one of `bun run admin quarantine`. Check the message with the provider first: `sent` keeps its charge, ' +
      '`refund` marks it failed and refunds it, once.',
    example: 'bun run admin settle 42 refund',
    async run(ctx) {
      const outcome = ctx.args['sent|refund']
      const id = ctx.id('MESSAGE_ID')
      const result = await ctx.api.call<Settled>('POST', `/admin/v1/quarantine/${id}/settle`, { outcome })
      return { data: result, text: () => (outcome === 'refund' ? `message ${id} failed and refunded` : `message ${id} kept as sent`) }
    },
  },
]
