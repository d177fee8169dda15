// The opt-out commands: an account's opted-out phones (see the README's Opt-outs), added and removed
// by hand, imported from and exported to CSV. Each change is audited as the admin token's.

import { readFileSync } from 'node:fs'
// The answers' types are the admin API's own models, imported as types only (see commands.ts).
import type * as optouts from '../modules/optouts/model'
import type { Command, Context } from './command'
import { QUIET } from './command'
import { amount, cell, listing, type Column, type Page } from './format'

type OptOut = typeof optouts.OptOut.static
type Added = typeof optouts.OptOutAdded.static
type Report = typeof optouts.ImportReport.static
type Exported = typeof optouts.ExportAnswer.static

const columns: Column<OptOut>[] = [
  { header: 'PHONE', value: (o) => o.phone },
  { header: 'OPTED OUT', value: (o) => o.opted_out_at },
  { header: 'SOURCE', value: (o) => o.source },
  { header: 'DETAIL', value: (o) => cell(o.detail, 24) },
  { header: 'BY', value: (o) => cell(o.by, 30) },
]

const ACCOUNT = { value: 'ACCOUNT_ID', required: true as const, help: 'the account' }
const base = (ctx: Context) => `/admin/v1/accounts/${ctx.id('account')}/opt-outs`

/** The CSV of --file (a path, or - for standard input). */
async function csvOf(ctx: Context): Promise<string> {
  const file = ctx.flags.file
  if (typeof file !== 'string') throw ctx.usage('opt-outs import: give --file PATH (or --file - to read standard input)')
  if (file === '-') return await new Response(Bun.stdin.stream()).text()
  try {
    return readFileSync(file, 'utf8')
  } catch {
    throw ctx.usage(`--file ${file}: cannot read the file`)
  }
}

export const optOutCommands: Command[] = [
  {
    name: 'opt-outs list',
    args: [],
    summary: "an account's opted-out phones, newest first, with when, how and by whom",
    details: 'A phone opted out is refused before anything is charged (422 RECIPIENT_OPTED_OUT); campaigns skip it and count it.',
    example: 'bun run admin opt-outs list --account "$ACCOUNT_ID"',
    flags: {
      account: ACCOUNT,
      phone: { value: 'PHONE', help: 'only this phone' },
      limit: { value: 'N', help: 'rows per page (default 50, at most 200)' },
      offset: { value: 'N', help: 'rows to skip' },
      quiet: QUIET,
    },
    async run(ctx) {
      const query = new URLSearchParams()
      if (typeof ctx.flags.phone === 'string') query.set('phone', ctx.flags.phone)
      if (ctx.flags.limit !== undefined) query.set('limit', String(ctx.integer('limit')))
      if (ctx.flags.offset !== undefined) query.set('offset', String(ctx.integer('offset')))
      const page = await ctx.api.call<Page<OptOut>>('GET', `${base(ctx)}${query.size ? `?${query}` : ''}`)
      return {
        data: page,
        text: () => listing(page, ['opted-out phone'], columns, 'newest first'),
        quiet: () => page.items.map((o) => o.phone),
      }
    },
  },
  {
    name: 'opt-outs add',
    args: ['PHONE'],
    summary: "opt a phone out of an account's messages (audited)",
    example: 'bun run admin opt-outs add 081234567890 --account "$ACCOUNT_ID"',
    flags: { account: ACCOUNT },
    async run(ctx) {
      const o = await ctx.api.call<Added>('POST', base(ctx), { phone: ctx.args.PHONE })
      return {
        data: o,
        text: () =>
          o.created
            ? `${o.phone} is now opted out of account ${ctx.id('account')}: sends to it are refused (422 RECIPIENT_OPTED_OUT)`
            : `${o.phone} was opted out already (${o.opted_out_at}, ${o.source}): nothing changed`,
      }
    },
  },
  {
    name: 'opt-outs remove',
    args: ['PHONE'],
    summary: 'opt a phone back in: the account may send to it again (audited; the history keeps both)',
    example: 'bun run admin opt-outs remove 081234567890 --account "$ACCOUNT_ID"',
    flags: { account: ACCOUNT },
    async run(ctx) {
      const r = await ctx.api.call<{ phone: string }>('DELETE', `${base(ctx)}/${encodeURIComponent(ctx.args.PHONE!)}`)
      return { data: r, text: () => `${r.phone} is opted back in to account ${ctx.id('account')}` }
    },
  },
  {
    name: 'opt-outs import',
    args: [],
    summary: 'opt out every phone of a CSV file (a "phone" column, or one phone a line); prints what was accepted and each bad line',
    details:
      'Phones opted out already, or repeated in the file, are duplicates; a line that is not a phone is reported with its number and ' +
      'skipped, the rest imported. An export (opt-outs export) imports again as it is. Exit code 1 when a line was bad.',
    example: 'bun run admin opt-outs import --account "$ACCOUNT_ID" --file opt-outs.csv',
    flags: { account: ACCOUNT, file: { value: 'PATH', required: true, help: 'the CSV file, or - for standard input' } },
    async run(ctx) {
      const r = await ctx.api.call<Report>('POST', `${base(ctx)}-csv`, { csv: await csvOf(ctx) })
      return {
        data: r,
        text: () =>
          [
            `${amount(r.accepted)} accepted, ${amount(r.duplicates)} duplicates, ${amount(r.invalid.length)} invalid`,
            ...r.invalid.map((bad) => `  line ${bad.line}: ${cell(bad.error, Infinity)}`),
          ].join('\n'),
        exitCode: r.invalid.length > 0 ? 1 : 0,
      }
    },
  },
  {
    name: 'opt-outs export',
    args: [],
    summary: "print an account's opt-outs as CSV (phone, opted_out_at, source, detail, by), newest first",
    details: 'Redirect it to a file to keep it: it imports again as it is (opt-outs import --file).',
    example: 'bun run admin opt-outs export --account "$ACCOUNT_ID"',
    flags: { account: ACCOUNT },
    async run(ctx) {
      const r = await ctx.api.call<Exported>('GET', `${base(ctx)}-csv`)
      return { data: r, text: () => r.csv.replace(/\r\n$/, '') }
    },
  },
]
