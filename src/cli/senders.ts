// The senders commands (a provider with its own credentials, number and pace; see the README's
// Senders) and `secrets rotate`. Credentials go one way: a command sends them to the admin API, which
// seals them, and no answer holds them again (answers name the fields set, never a value). A secret
// value need not be typed on the command line, where the shell's history would keep it:
// `--credential NAME=-` reads it from standard input, one line per such credential, in the order given
// (a terminal is asked for each, without echo).

// The answers' types are the admin API's own models, imported as types only (see commands.ts).
import type * as senders from '../modules/senders/model'
import type * as budgets from '../modules/budgets/model'
import type { Command, Context, Flag } from './command'
import { QUIET } from './command'
import { amount, cell, count, table, type Column } from './format'
import { program } from './program'

type Sender = typeof senders.Sender.static
type AccountSender = typeof senders.AccountSender.static
type RotateResult = typeof senders.RotateResult.static
type Portfolio = typeof budgets.Portfolio.static
type Use = Sender['budget']

const TIERS = ['250', '2000', '10000', '100000']
/** A budget's use in a few words: "17/250 in 24 h, oldest frees …", or "unlimited". */
const useLine = (u: Use) =>
  u.messaging_limit === null
    ? 'unlimited'
    : `${amount(u.used)}/${amount(u.messaging_limit)} recipients in the last 24 h${u.frees_at ? `, oldest frees ${u.frees_at}` : ''}`

/** --messaging-limit: a tier or `unlimited` (null); --portfolio: a name or `none` (null). */
function limitFlags(ctx: Context, body: Record<string, unknown>) {
  const tier = ctx.flags['messaging-limit']
  if (typeof tier === 'string') {
    if (tier !== 'unlimited' && !TIERS.includes(tier)) {
      throw ctx.usage(`--messaging-limit: expected ${TIERS.join(', ')} or unlimited, got ${JSON.stringify(tier).slice(0, 40)}`)
    }
    body.messaging_limit = tier === 'unlimited' ? null : Number(tier)
  }
  const portfolio = ctx.flags.portfolio
  if (typeof portfolio === 'string') body.portfolio = portfolio === 'none' ? null : portfolio
}

const TIER_FLAG: Flag = {
  value: 'TIER',
  help: 'its WhatsApp messaging limit: 250, 2000, 10000, 100000 or unlimited (unique recipients of business-initiated messages per 24 h; a new number starts at 250)',
}
const PORTFOLIO_FLAG: Flag = {
  value: 'NAME|none',
  help: 'the portfolio whose budget and tier it shares (portfolios create makes one); none: its own tier',
}

/** A name in running text, quoted, with control characters made visible. */
const named = (name: string) => `"${cell(name, Infinity)}"`

const status = (disabled: boolean) => (disabled ? 'disabled' : 'active')

const checkLine = (c: NonNullable<Sender['last_check']>) => `${c.ok ? 'ok' : 'refused'}: ${cell(c.detail, Infinity)}`

const paceLine = (s: Sender) =>
  `${amount(s.rate_per_second)} messages a second, ${s.recipient_gap_ms ? `${amount(s.recipient_gap_ms)} ms` : 'no wait'} between two messages to one recipient`

type Health = Sender['health']
type HealthChange = Health['history'][number]

/** What a sender's health refuses or pauses now, in a few words (Meta's word: issue 32 §4). */
function healthLine(h: Health): string {
  const restrictions = h.restrictions.map((r) => `${r.type}${r.expires_at ? ` until ${r.expires_at}` : ''}`).join(', ')
  return [
    `quality ${h.quality ?? 'not read yet'}`,
    h.flagged ? 'flagged by Meta: its campaigns pause' : null,
    h.restricted === 'all'
      ? 'restricted by Meta: every send refused, its campaigns pause'
      : h.restricted === 'business'
        ? 'restricted by Meta: business-initiated sends refused, its campaigns pause'
        : null,
    restrictions ? `restrictions: ${restrictions}` : null,
    h.throughput ? `${h.throughput} throughput` : null,
    `messaging limit said by ${h.messaging_limit_source === 'meta' ? 'Meta' : 'the operator'}`,
  ]
    .filter((p) => p !== null)
    .join('; ')
}

const historyColumns: Column<HealthChange>[] = [
  { header: 'AT', value: (c) => c.at },
  { header: 'FIELD', value: (c) => c.field },
  { header: 'OLD', value: (c) => cell(c.old, 40) },
  { header: 'NEW', value: (c) => cell(c.new, 40) },
  { header: 'SAID BY', value: (c) => (c.source === 'meta' ? 'Meta (webhook)' : `its ${c.source}`) },
]

/** A Meta sender's health lines: what it is now, and its latest changes (newest first). Other providers say none. */
function healthLines(s: Sender): string[] {
  if (s.provider !== 'meta') return []
  const h = s.health
  if (h.history.length === 0) return [`  health: ${healthLine(h)}`, '  health history: no changes yet']
  const rows = table(historyColumns, h.history)
    .split('\n')
    .map((line) => `    ${line}`)
  return [`  health: ${healthLine(h)}`, `  health history (latest ${h.history.length}, newest first):`, ...rows]
}

function describeSender(s: Sender): string {
  const accounts = s.accounts.map((a) => `${a.account_id}${a.default ? ' (its default)' : ''}`).join(', ')
  return [
    `sender ${s.id} ${named(s.name)}: ${s.provider} ${s.number}, ${status(s.disabled)}`,
    ...(s.identity ? [`  identity: ${cell(s.identity, Infinity)} (what its callbacks name it by)`] : []),
    `  credentials set: ${s.credentials_set.length ? `${s.credentials_set.join(', ')} (their values are never shown)` : 'none'}`,
    `  pace: ${paceLine(s)}`,
    `  late failures: ${s.late_failures === 'refund' ? 'refunded' : 'kept charged'} (reported through its credentials after the provider accepted a message)`,
    `  messaging limit: ${useLine(s.budget)} (${s.portfolio === null ? 'its own tier' : `portfolio ${named(s.portfolio)}'s, shared`})`,
    `  accounts: ${accounts || `none yet (${program.admin} senders assign ACCOUNT_ID ${s.id})`}`,
    `  last check: ${s.last_check ? `${s.last_check.at}, ${checkLine(s.last_check)}` : 'never'}`,
    ...healthLines(s),
    `  created ${s.created_at}`,
  ].join('\n')
}

const senderColumns: Column<Sender>[] = [
  { header: 'ID', value: (s) => String(s.id), right: true },
  { header: 'PROVIDER', value: (s) => s.provider },
  { header: 'NUMBER', value: (s) => s.number },
  { header: 'NAME', value: (s) => cell(s.name, 30) },
  { header: 'ACCOUNTS', value: (s) => cell(s.accounts.map((a) => a.account_id).join(',') || null, 30) },
  { header: 'RATE', value: (s) => `${amount(s.rate_per_second)}/s`, right: true },
  { header: 'GAP', value: (s) => (s.recipient_gap_ms ? `${amount(s.recipient_gap_ms)} ms` : 'none'), right: true },
  {
    header: 'LIMIT',
    value: (s) => (s.budget.messaging_limit === null ? 'unlimited' : `${s.budget.used}/${s.budget.messaging_limit}`),
    right: true,
  },
  { header: 'STATUS', value: (s) => status(s.disabled) },
  { header: 'LAST CHECK', value: (s) => (s.last_check ? `${s.last_check.ok ? 'ok' : 'refused'} ${s.last_check.at}` : 'never') },
]

const accountSenderColumns: Column<AccountSender>[] = [
  { header: 'ID', value: (s) => String(s.id), right: true },
  { header: 'PROVIDER', value: (s) => s.provider },
  { header: 'NUMBER', value: (s) => s.number },
  { header: 'NAME', value: (s) => cell(s.name, 30) },
  { header: 'DEFAULT', value: (s) => (s.default ? 'yes' : '') },
  { header: 'STATUS', value: (s) => status(s.disabled) },
]

function accountSenders(accountId: number, list: AccountSender[]): string {
  if (list.length === 0) return `account ${accountId} has no senders: it sends from the deployment's number (the environment's PROVIDER)`
  return `${table(accountSenderColumns, list)}\n\n${count(list.length, 'sender')} of account ${accountId}, its default first`
}

const CREDENTIAL: Flag = {
  value: 'NAME=VALUE',
  repeat: true,
  help: 'a credential field (twilio: account_sid, auth_token, messaging_service_sid; meta: access_token, phone_number_id, app_secret, business_account_id, verify_token); NAME=- reads the value from standard input',
}
const CREDENTIAL_DETAILS =
  '--credential NAME=- reads that value from standard input instead of the command line, where the shell history would keep ' +
  'it: one line per credential given as -, in their order (a terminal is asked for each, without echo), e.g. ' +
  'printf \'%s\\n\' "$TWILIO_AUTH_TOKEN" | bun run admin senders create ... --credential auth_token=-. Credentials are sealed by ' +
  'the service (SECRETS_KEY) and never shown again: answers name the fields set, never their values.'

/** The --credential values as an object, those given as `-` read from standard input. */
async function credentialsOf(ctx: Context): Promise<Record<string, string> | undefined> {
  const given = ctx.values('credential')
  if (given.length === 0) return undefined
  const out: Record<string, string> = {}
  const fromStdin: string[] = []
  for (const entry of given) {
    const at = entry.indexOf('=')
    const name = at < 0 ? '' : entry.slice(0, at).trim()
    // The value is never repeated in the message: it may be a secret typed without its NAME=.
    if (!name) throw ctx.usage('--credential: expected NAME=VALUE (or NAME=- to read the value from standard input), got no NAME=')
    if (name in out) throw ctx.usage(`--credential: ${name} is given twice`)
    out[name] = entry.slice(at + 1)
    if (out[name] === '-') fromStdin.push(name)
  }
  const values = await readLines(fromStdin, ctx)
  fromStdin.forEach((name, i) => (out[name] = values[i]!))
  return out
}

/** One line of standard input for each name: asked for without echo on a terminal, else read as piped. */
async function readLines(names: string[], ctx: Context): Promise<string[]> {
  if (names.length === 0) return []
  const terminal = process.stdin.isTTY === true
  const echo = (on: boolean) => terminal && Bun.spawnSync(['stty', on ? 'echo' : '-echo'], { stdin: 'inherit' })
  const reader = Bun.stdin.stream().getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  let ended = false
  /** The next line without its line end (\n or \r\n); undefined once the input has ended. */
  async function nextLine(): Promise<string | undefined> {
    for (;;) {
      const at = buffered.indexOf('\n')
      if (at >= 0) {
        const line = buffered.slice(0, at)
        buffered = buffered.slice(at + 1)
        return line.replace(/\r$/, '')
      }
      if (ended) {
        const rest = buffered
        buffered = ''
        return rest === '' ? undefined : rest.replace(/\r$/, '')
      }
      const chunk = await reader.read()
      if (chunk.done) {
        buffered += decoder.decode()
        ended = true
      } else buffered += decoder.decode(chunk.value, { stream: true })
    }
  }
  const values: string[] = []
  try {
    echo(false)
    for (const name of names) {
      if (terminal) process.stderr.write(`${name}: `)
      const line = await nextLine()
      if (terminal) process.stderr.write('\n')
      if (line === undefined)
        throw ctx.usage(`--credential ${name}=-: standard input ended before its value (one line for each credential given as -)`)
      values.push(line)
    }
  } finally {
    echo(true)
    await reader.cancel().catch(() => {})
  }
  return values
}

const LATE_FAILURES_FLAG: Flag = {
  value: 'refund|keep',
  help: 'a late failure reported through its credentials: refund it, or keep it charged (default for Twilio and Meta: whoever holds the credentials can report one)',
}

/** --late-failures: refund or keep. */
function lateFailures(ctx: Context, body: Record<string, unknown>) {
  const value = ctx.flags['late-failures']
  if (value === undefined) return
  if (value !== 'refund' && value !== 'keep')
    throw ctx.usage(`--late-failures: expected refund or keep, got ${JSON.stringify(value).slice(0, 40)}`)
  body.late_failures = value
}

/** --rate and --gap: a value, or `default` (update only) for the provider's again. */
function pace(ctx: Context, body: Record<string, unknown>, allowDefault: boolean) {
  if (ctx.flags.rate !== undefined) body.rate_per_second = allowDefault && ctx.flags.rate === 'default' ? null : ctx.decimal('rate')
  if (ctx.flags.gap !== undefined) body.recipient_gap_ms = allowDefault && ctx.flags.gap === 'default' ? null : ctx.integer('gap')
}

const SENDER_ID = ['SENDER_ID']
const senderPath = (ctx: Context) => `/admin/v1/senders/${ctx.id('SENDER_ID')}`

export const senderCommands: Command[] = [
  {
    name: 'senders list',
    args: [],
    summary: "every sender (its provider, number, accounts, pace, state and last check), oldest first; or one account's",
    details:
      "With --account: that account's senders as its members see them, its default first (the one a send without `from` goes " +
      "from). An account without senders sends from the deployment's number, the environment's PROVIDER settings.",
    example: 'bun run admin senders list',
    flags: { account: { value: 'ACCOUNT_ID', help: "only this account's senders" }, quiet: QUIET },
    async run(ctx) {
      if (ctx.flags.account !== undefined) {
        const accountId = ctx.id('account')
        const list = await ctx.api.call<AccountSender[]>('GET', `/admin/v1/accounts/${accountId}/senders`)
        return { data: list, text: () => accountSenders(accountId, list), quiet: () => list.map((s) => s.id) }
      }
      const list = await ctx.api.call<Sender[]>('GET', '/admin/v1/senders')
      return {
        data: list,
        text: () =>
          list.length === 0
            ? "no senders: every account sends from the deployment's number (the environment's PROVIDER)"
            : `${table(senderColumns, list)}\n\n${count(list.length, 'sender')}, oldest first`,
        quiet: () => list.map((s) => s.id),
      }
    },
  },
  {
    name: 'senders show',
    args: SENDER_ID,
    summary:
      'one sender: provider, number, which credentials are set (never their values), pace, accounts, last check; a Meta sender its health',
    details:
      "A Meta sender's health is what Meta said of it (webhooks, and its number's quality read at each check and template sync): " +
      'its quality rating, a flag, restrictions and what they refuse, its throughput, who set its messaging limit, and its latest ' +
      'changes, newest first. --json gives them as `health`.',
    example: 'bun run admin senders show "$SENDER_ID"',
    async run(ctx) {
      const s = await ctx.api.call<Sender>('GET', senderPath(ctx))
      return { data: s, text: () => describeSender(s) }
    },
  },
  {
    name: 'senders create',
    args: [],
    summary: 'a sender: a provider (twilio, meta or simulator), its credentials, a WhatsApp number and a display name',
    details:
      "Nothing is sent to the provider: `senders check` tries the credentials. --rate and --gap set its own pace (default: the provider's). " +
      CREDENTIAL_DETAILS,
    example:
      'bun run admin senders create --provider twilio --name "Toko Maju" --number +6281234567890 ' +
      '--credential account_sid=AC0123456789abcdef0123456789abcdef --credential auth_token=-',
    flags: {
      provider: { value: 'PROVIDER', required: true, help: 'twilio, meta or simulator' },
      name: { value: 'NAME', required: true, help: 'the display name (the business name customers see)' },
      number: { value: '+E164', required: true, help: 'the WhatsApp number, e.g. +6281234567890' },
      credential: CREDENTIAL,
      rate: { value: 'N', help: "messages a second it takes (default: the provider's, 80 for Twilio and Meta)" },
      gap: { value: 'MS', help: "least milliseconds between two messages to one recipient (default: the provider's)" },
      'messaging-limit': TIER_FLAG,
      portfolio: PORTFOLIO_FLAG,
      'late-failures': LATE_FAILURES_FLAG,
      quiet: QUIET,
    },
    async run(ctx) {
      const body: Record<string, unknown> = { provider: ctx.flags.provider, name: ctx.flags.name, number: ctx.flags.number }
      pace(ctx, body, false)
      limitFlags(ctx, body)
      lateFailures(ctx, body)
      const credentials = await credentialsOf(ctx)
      if (credentials) body.credentials = credentials
      const s = await ctx.api.call<Sender>('POST', '/admin/v1/senders', body)
      return {
        data: s,
        text: () =>
          [
            `sender ${s.id} ${named(s.name)} created: ${s.provider} ${s.number}; ${
              s.credentials_set.length ? `credentials set: ${s.credentials_set.join(', ')} (sealed, never shown again)` : 'no credentials'
            }`,
            `check it with its provider: ${program.admin} senders check ${s.id}`,
            `give it to an account: ${program.admin} senders assign ACCOUNT_ID ${s.id}`,
          ].join('\n'),
        quiet: () => [s.id],
      }
    },
  },
  {
    name: 'senders update',
    args: SENDER_ID,
    summary: "change a sender's name, pace, messaging limit, portfolio or credentials (its provider and number never change)",
    details:
      'Each --credential replaces that field (the others stay; NAME= with nothing removes an optional one); --rate default and ' +
      "--gap default go back to the provider's pace. " +
      CREDENTIAL_DETAILS,
    example: 'bun run admin senders update "$SENDER_ID" --rate 200 --credential auth_token=-',
    flags: {
      name: { value: 'NAME', help: 'the display name' },
      credential: CREDENTIAL,
      rate: { value: 'N|default', help: "messages a second, or default (the provider's)" },
      gap: { value: 'MS|default', help: "least milliseconds between two messages to one recipient, or default (the provider's)" },
      'messaging-limit': TIER_FLAG,
      portfolio: PORTFOLIO_FLAG,
      'late-failures': LATE_FAILURES_FLAG,
    },
    async run(ctx) {
      const path = senderPath(ctx)
      const body: Record<string, unknown> = {}
      if (typeof ctx.flags.name === 'string') body.name = ctx.flags.name
      pace(ctx, body, true)
      limitFlags(ctx, body)
      lateFailures(ctx, body)
      const credentials = await credentialsOf(ctx)
      if (credentials) body.credentials = credentials
      if (Object.keys(body).length === 0) {
        throw ctx.usage(
          'senders update: nothing to change (give --name, --rate, --gap, --messaging-limit, --portfolio, --late-failures or --credential)',
        )
      }
      const s = await ctx.api.call<Sender>('PATCH', path, body)
      return { data: s, text: () => describeSender(s) }
    },
  },
  {
    name: 'senders check',
    args: SENDER_ID,
    summary: "try a sender's credentials with one harmless call to its provider, and print its answer",
    details:
      "Twilio: the account resource; Meta: the phone number's node (display number, verified name, quality rating); the simulator takes " +
      "any. The answer is kept as the sender's last check. Exit code 1 when the provider refused them, so a script can stop there.",
    example: 'bun run admin senders check "$SENDER_ID"',
    async run(ctx) {
      const s = await ctx.api.call<Sender>('POST', `${senderPath(ctx)}/check`)
      const check = s.last_check!
      return {
        data: s,
        text: () => `sender ${s.id} ${named(s.name)} (${s.provider} ${s.number}) checked: ${checkLine(check)}`,
        exitCode: check.ok ? 0 : 1,
      }
    },
  },
  {
    name: 'senders disable',
    args: SENDER_ID,
    summary: 'disable a sender: new sends from it are refused (422 SENDER_DISABLED, nothing charged), its running campaigns pause',
    details: 'Messages already charged still go through it, and its callbacks are still verified. `senders enable` undoes it.',
    example: 'bun run admin senders disable "$SENDER_ID"',
    async run(ctx) {
      const s = await ctx.api.call<Sender>('POST', `${senderPath(ctx)}/disable`)
      return {
        data: s,
        text: () =>
          `sender ${s.id} ${named(s.name)} (${s.provider} ${s.number}) is now disabled: new sends from it are refused (422 SENDER_DISABLED, nothing charged)`,
      }
    },
  },
  {
    name: 'senders enable',
    args: SENDER_ID,
    summary: 'enable a disabled sender (its paused campaigns are resumed with campaign resume)',
    example: 'bun run admin senders enable "$SENDER_ID"',
    async run(ctx) {
      const s = await ctx.api.call<Sender>('POST', `${senderPath(ctx)}/enable`)
      return { data: s, text: () => `sender ${s.id} ${named(s.name)} (${s.provider} ${s.number}) is now active` }
    },
  },
  {
    name: 'senders assign',
    args: ['ACCOUNT_ID', 'SENDER_ID'],
    summary: 'give a sender to an account (its first sender is its default; --default makes this one the default)',
    details:
      "The account's sends, bulks and campaigns may then name it in `from` (its id or number); those without `from` go from the " +
      "account's default sender. Prints the account's senders.",
    example: 'bun run admin senders assign "$ACCOUNT_ID" "$SENDER_ID" --default',
    flags: { default: { help: "make it the account's default sender" } },
    async run(ctx) {
      const accountId = ctx.id('ACCOUNT_ID')
      const senderId = ctx.id('SENDER_ID')
      const list = await ctx.api.call<AccountSender[]>(
        'PUT',
        `/admin/v1/accounts/${accountId}/senders/${senderId}`,
        ctx.flags.default ? { default: true } : {},
      )
      const own = list.find((s) => s.id === senderId)
      return {
        data: list,
        text: () =>
          `sender ${senderId} sends for account ${accountId}${own?.default ? ' (its default)' : ''}\n\n${accountSenders(accountId, list)}`,
      }
    },
  },
  {
    name: 'senders unassign',
    args: ['ACCOUNT_ID', 'SENDER_ID'],
    summary: 'take a sender from an account (when it was its default, the other sender it was given first becomes it)',
    example: 'bun run admin senders unassign "$ACCOUNT_ID" "$SENDER_ID"',
    async run(ctx) {
      const accountId = ctx.id('ACCOUNT_ID')
      const senderId = ctx.id('SENDER_ID')
      const list = await ctx.api.call<AccountSender[]>('DELETE', `/admin/v1/accounts/${accountId}/senders/${senderId}`)
      return {
        data: list,
        text: () => `sender ${senderId} no longer sends for account ${accountId}\n\n${accountSenders(accountId, list)}`,
      }
    },
  },
]

const portfolioLine = (p: Portfolio) =>
  `portfolio ${p.id} ${named(p.name)}: ${useLine(p)}; senders: ${p.senders.length ? p.senders.join(', ') : 'none yet'}`

export const portfolioCommands: Command[] = [
  {
    name: 'portfolios list',
    args: [],
    summary: 'every portfolio: its tier, its use (recipients counted in the last 24 h) and its senders',
    example: 'bun run admin portfolios list',
    async run(ctx) {
      const list = await ctx.api.call<Portfolio[]>('GET', '/admin/v1/portfolios')
      return {
        data: list,
        text: () => (list.length === 0 ? 'no portfolios: each sender counts its own messaging limit' : list.map(portfolioLine).join('\n')),
      }
    },
  },
  {
    name: 'portfolios create',
    args: [],
    summary: 'a portfolio: senders put in it (senders update --portfolio NAME) share one messaging-limit budget, under its tier',
    details:
      'WhatsApp counts the unique recipients of business-initiated messages per business portfolio since October 2025: give the ' +
      "portfolio the tier Meta's WhatsApp Manager shows for it.",
    example: 'bun run admin portfolios create --name "Toko Maju group" --messaging-limit 2000',
    flags: {
      name: { value: 'NAME', required: true, help: "its name (say, the business portfolio's in Meta's Business Manager)" },
      'messaging-limit': { ...TIER_FLAG, help: 'its tier: 250, 2000, 10000, 100000 or unlimited (the default)' },
    },
    async run(ctx) {
      const body: Record<string, unknown> = { name: ctx.flags.name }
      limitFlags(ctx, body)
      const p = await ctx.api.call<Portfolio>('POST', '/admin/v1/portfolios', body)
      return {
        data: p,
        text: () =>
          `${portfolioLine(p)}\nput a sender in it: ${program.admin} senders update SENDER_ID --portfolio ${JSON.stringify(p.name)}`,
      }
    },
  },
  {
    name: 'portfolios update',
    args: ['PORTFOLIO_ID'],
    summary: "change a portfolio's name or tier (the recipients counted stay counted)",
    example: 'bun run admin portfolios update "$PORTFOLIO_ID" --messaging-limit 10000',
    flags: { name: { value: 'NAME', help: 'a new name' }, 'messaging-limit': TIER_FLAG },
    async run(ctx) {
      const body: Record<string, unknown> = {}
      if (typeof ctx.flags.name === 'string') body.name = ctx.flags.name
      limitFlags(ctx, body)
      if (Object.keys(body).length === 0) throw ctx.usage('portfolios update: nothing to change (give --name or --messaging-limit)')
      const p = await ctx.api.call<Portfolio>('PATCH', `/admin/v1/portfolios/${ctx.id('PORTFOLIO_ID')}`, body)
      return { data: p, text: () => portfolioLine(p) }
    },
  },
]

export const secretsCommands: Command[] = [
  {
    name: 'secrets rotate',
    args: [],
    summary: 'seal every stored credential again under the current SECRETS_KEY (after a key change)',
    details:
      'The rotation: set the new key as SECRETS_KEY and the old one as SECRETS_KEY_PREVIOUS, restart every instance, run this, ' +
      'then drop SECRETS_KEY_PREVIOUS (and restart again). Safe to repeat, and to run while the service sends.',
    example: 'bun run admin secrets rotate',
    async run(ctx) {
      const r = await ctx.api.call<RotateResult>('POST', '/admin/v1/secrets/rotate')
      return {
        data: r,
        text: () =>
          r.rotated === 0
            ? `every stored credential is sealed under key ${r.key_id} (SECRETS_KEY) already: ${count(r.current, 'sender')}, nothing to do`
            : [
                `the credentials of ${count(r.rotated, 'sender')} sealed again under key ${r.key_id} (SECRETS_KEY); ${amount(r.current)} already were`,
                'SECRETS_KEY_PREVIOUS can now be dropped from every instance',
              ].join('\n'),
      }
    },
  },
]
