// A sender's WhatsApp templates from the command line (issue 30; see the README's "Creating,
// submitting and syncing"): `template sync` brings them in line with the provider, `template submit`
// creates one from the Cloud API's template JSON (a file, or - for standard input), `template edit`
// changes one's components (and category) as the provider allows, `template delete` deletes one at its
// provider and here, and `template list --sender` lists them. Sender 0 is the deployment's default sender.

import { readFileSync } from 'node:fs'
// The answers' types are the admin API's own models, imported as types only (see commands.ts).
import type * as wa from '../modules/templates/wa-admin'
import type { Command, Context } from './command'
import { QUIET } from './command'
import { amount, cell, count, table, type Column } from './format'

type WaTemplate = typeof wa.WaTemplateModel.static
type SyncResult = typeof wa.SyncModel.static

/** A sender id of a command: a positive id, or 0 for the deployment's default sender. */
export function senderOf(ctx: Context, name: string): number {
  const raw = ctx.args[name] ?? ctx.flags[name]
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw)) {
    throw ctx.usage(`${name in ctx.args ? name : `--${name}`}: expected a sender id, or 0 for the deployment's default sender`)
  }
  return Number(raw)
}

const columns: Column<WaTemplate>[] = [
  { header: 'ID', value: (t) => String(t.id), right: true },
  { header: 'NAME', value: (t) => cell(t.name, 40) },
  { header: 'LANGUAGE', value: (t) => cell(t.language, 10) },
  { header: 'CATEGORY', value: (t) => t.category },
  { header: 'STATUS', value: (t) => t.status },
  { header: 'QUALITY', value: (t) => t.quality },
  { header: 'REASON', value: (t) => cell(t.reason, 40) },
]

/** The sender's WhatsApp templates as a table (`template list --sender`). */
export async function senderTemplateList(ctx: Context) {
  const sender = senderOf(ctx, 'sender')
  const list = await ctx.api.call<WaTemplate[]>('GET', `/admin/v1/senders/${sender}/templates`)
  const whose = sender === 0 ? "the deployment's default sender" : `sender ${sender}`
  return {
    data: list,
    text: () =>
      list.length === 0
        ? `${whose} has no WhatsApp templates (bun run admin template sync ${sender} reads them from its provider)`
        : `${table(columns, list)}\n\n${count(list.length, 'WhatsApp template')} of ${whose}, by name and language`,
    quiet: () => list.map((t) => t.id),
  }
}

const syncText = (r: SyncResult) =>
  [
    `${r.sender_id === 0 ? "the deployment's default sender" : `sender ${r.sender_id}`} (${r.provider}): ${amount(r.listed)} listed, ` +
      `${amount(r.created)} new, ${amount(r.changed)} changed, ${amount(r.unchanged)} unchanged, ${amount(r.gone)} no longer listed (now deleted)`,
    ...r.skipped.map((s) => `  skipped ${cell(s.name, 60)} (${cell(s.language, 10)}): ${cell(s.why, Infinity)}`),
  ].join('\n')

/** A WhatsApp template id of a command. */
function templateOf(ctx: Context): number {
  const raw = ctx.args.TEMPLATE_ID
  if (typeof raw !== 'string' || !/^\d{1,15}$/.test(raw) || Number(raw) === 0)
    throw ctx.usage('TEMPLATE_ID: expected a WhatsApp template id')
  return Number(raw)
}

const stored = (t: WaTemplate, what: string) =>
  `WhatsApp template ${t.id} ${cell(t.name, Infinity)} (${cell(t.language, 10)}, ${t.category}) ${what}: ${t.status}`

/** The definition of `template submit` and `template edit`: the JSON of FILE, or of standard input for -. */
async function definitionOf(ctx: Context): Promise<unknown> {
  const file = ctx.args.FILE!
  let text: string
  if (file === '-') text = await new Response(Bun.stdin.stream()).text()
  else {
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      throw ctx.usage(`FILE ${cell(file, 60)}: cannot read the file`)
    }
  }
  try {
    return JSON.parse(text)
  } catch {
    throw ctx.usage(`FILE ${cell(file, 60)}: not JSON (a template in the Cloud API's JSON: name, language, category, components)`)
  }
}

export const waTemplateCommands: Command[] = [
  {
    name: 'template edit',
    args: ['TEMPLATE_ID', 'FILE'],
    summary: "edit a WhatsApp template's components (and category) from the Cloud API's JSON (FILE, or - for standard input)",
    details:
      'The JSON holds the new components (all of them) and, for a rejected or paused template, a new category; the name and language ' +
      'never change. Meta edits approved, rejected and paused templates only (an approved one once a day, ten times a month) and ' +
      'reviews the edit: the template is pending until then. Twilio edits none (exit 1: create a new template and delete this one).',
    example: 'bun run admin template edit "$TEMPLATE_ID" invoice_due_edit.json',
    async run(ctx) {
      const t = await ctx.api.call<WaTemplate>('PATCH', `/admin/v1/whatsapp-templates/${templateOf(ctx)}`, await definitionOf(ctx))
      return { data: t, text: () => stored(t, `edited, submitted to ${t.provider} again`) }
    },
  },
  {
    name: 'template delete',
    args: ['TEMPLATE_ID'],
    summary: 'delete a WhatsApp template at its provider, then here (it stops sending; campaigns of it pause)',
    details:
      'Meta: that language only (its name and id); Meta keeps the name from being used again for 30 days. Twilio: the Content ' +
      'template. It stays listed as deleted, with its history.',
    example: 'bun run admin template delete "$TEMPLATE_ID"',
    async run(ctx) {
      const t = await ctx.api.call<WaTemplate>('DELETE', `/admin/v1/whatsapp-templates/${templateOf(ctx)}`)
      return { data: t, text: () => stored(t, `deleted at ${t.provider}`) }
    },
  },
  {
    name: 'template sync',
    args: ['SENDER_ID'],
    summary: "read a sender's WhatsApp templates from its provider (every page) and bring them in line here",
    details:
      "Meta: every template of the sender's WhatsApp Business Account, by name and language: new ones stored, each change of " +
      "status, category or quality recorded (source sync), ones no longer listed marked deleted. SENDER_ID 0 is the deployment's " +
      'default sender (with META_BUSINESS_ACCOUNT_ID).',
    example: 'bun run admin template sync "$SENDER_ID"',
    async run(ctx) {
      const result = await ctx.api.call<SyncResult>('POST', `/admin/v1/senders/${senderOf(ctx, 'SENDER_ID')}/templates/sync`)
      return { data: result, text: () => syncText(result) }
    },
  },
  {
    name: 'template submit',
    args: ['SENDER_ID', 'FILE'],
    summary: "create a WhatsApp template from the Cloud API's template JSON (FILE, or - for standard input) and submit it",
    details:
      "The JSON is Meta's own (name, language, category, parameter_format, components), checked with Meta's rules and, for a Meta " +
      'sender, submitted as given to its WhatsApp Business Account; it is stored pending until Meta decides (template sync, or its webhook).',
    example: 'bun run admin template submit "$SENDER_ID" invoice_due.json',
    flags: { quiet: QUIET },
    async run(ctx) {
      const sender = senderOf(ctx, 'SENDER_ID')
      const t = await ctx.api.call<WaTemplate>('POST', `/admin/v1/senders/${sender}/templates`, await definitionOf(ctx))
      return {
        data: t,
        text: () =>
          `WhatsApp template ${t.id} ${cell(t.name, Infinity)} (${cell(t.language, 10)}, ${t.category}) stored ${t.status}` +
          (t.provider_ref ? `: submitted to ${t.provider} as ${cell(t.provider_ref, 40)}` : ''),
        quiet: () => [t.id],
      }
    },
  },
]
