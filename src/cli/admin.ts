// `bun run admin <command>`: a thin client of the admin API. It finds the server from the same
// configuration as the service (HOST, PORT, TLS) or --url, and the token from ADMIN_TOKEN or
// DATA_DIR/admin-token. Every command prints a short human summary, or the raw JSON with --json.

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ConfigError, readConfig } from '../config'
import { webhookListen, webhookTest } from './webhook'

const USAGE = `usage: bun run admin <command> [options]

  quickstart [--name NAME] [--balance N]   demo account with a balance and a key, plus a ready curl line
                                           and a dashboard link for a member of the account
  operator create EMAIL                    a dashboard operator; prints the one-time link to set the password
  member invite ACCOUNT_ID EMAIL           a dashboard member of the account; prints the one-time link
  account create NAME [--balance N]        create an account
  account list                             list accounts
  key create ACCOUNT_ID LABEL              create an API key (shown once)
  key list ACCOUNT_ID                      list an account's keys
  key activate KEY_ID | key deactivate KEY_ID
  topup ACCOUNT_ID AMOUNT [--note TEXT]    add to a balance
  price set AMOUNT [--account ACCOUNT_ID]  set the global price, or one account's override
  ledger ACCOUNT_ID [--limit N]            an account's ledger, newest first
  template create ACCOUNT_ID NAME BODY     a campaign template ({{name}}, {{phone}}, {{email}}, {{city}})
  template list ACCOUNT_ID
  segment create ACCOUNT_ID NAME TAG       the account's contacts carrying TAG
  segment list ACCOUNT_ID
  campaign list ACCOUNT_ID | campaign show CAMPAIGN_ID
  campaign run|resume|cancel CAMPAIGN_ID   run a draft (now, or at its schedule_at), resume, cancel
  deliveries KEY_ID [--status S]           a key's webhook deliveries (pending, delivered, failed)
  replay DELIVERY_ID                       deliver one webhook event again
  replay-failed KEY_ID --since "YYYY-MM-DD HH:MM:SS"   deliver a key's failed events again
  webhook listen KEY_ID [--forward-to URL]  stream a key's events as they happen, forwarded (signed) to a local URL
  webhook test KEY_ID [--forward-to URL]    a test event to the key's URL (or to --forward-to), and its answer
  quarantine                               messages whose hand-off outcome could not be recorded
  settle MESSAGE_ID sent|refund            settle a quarantined message (the provider has it, or refund it)

options: --json (raw JSON answers), --url URL (service root, default from HOST/PORT)`

type Args = { positional: string[]; flags: Map<string, string | true> }

function parseArgs(argv: string[]): Args {
  const positional: string[] = []
  const flags = new Map<string, string | true>()
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg.startsWith('--')) {
      const name = arg.slice(2)
      const next = argv[i + 1]
      if (name === 'json' || name === 'help' || next === undefined || next.startsWith('--')) flags.set(name, true)
      else flags.set(name, argv[++i]!)
    } else positional.push(arg)
  }
  return { positional, flags }
}

class CliError extends Error {}

function fail(message: string): never {
  throw new CliError(message)
}

function integerArg(value: string | true | undefined, name: string): number {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value)) fail(`${name}: expected an integer`)
  return Number(value)
}

async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv)
  if (args.flags.has('help') || args.positional.length === 0) {
    console.log(USAGE)
    return args.positional.length === 0 && !args.flags.has('help') ? 2 : 0
  }
  const config = readConfig()
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
  const base = (
    typeof args.flags.get('url') === 'string'
      ? (args.flags.get('url') as string)
      : `${config.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${config.port}`
  ).replace(/\/+$/, '')
  const tokenFile = join(config.dataDir, 'admin-token')
  const token = config.adminToken ?? (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined)
  if (!token) fail(`no admin token: set ADMIN_TOKEN or start the service once so it writes ${tokenFile}`)
  const json = args.flags.has('json')

  async function call(method: string, path: string, body?: unknown): Promise<any> {
    let response: Response
    try {
      response = await fetch(`${base}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
    } catch {
      fail(`cannot reach the service at ${base} (is it running? start it with: bun run start)`)
    }
    const payload = (await response.json().catch(() => null)) as { success?: boolean; data?: unknown; error?: string; code?: string } | null
    if (!payload?.success) fail(`${response.status} ${payload?.code ?? ''}: ${payload?.error ?? 'unexpected answer'}`)
    return payload.data
  }
  const print = (data: unknown, human: () => string) => console.log(json ? JSON.stringify(data, null, 2) : human())
  const [command, sub, ...rest] = args.positional

  switch (command) {
    case 'quickstart': {
      const name = typeof args.flags.get('name') === 'string' ? (args.flags.get('name') as string) : 'Demo account'
      const balance = args.flags.has('balance') ? integerArg(args.flags.get('balance'), '--balance') : 100_000
      const account = await call('POST', '/admin/v1/accounts', { name, balance })
      const key = await call('POST', `/admin/v1/accounts/${account.id}/keys`, { label: 'quickstart' })
      const member = await call('POST', `/admin/v1/accounts/${account.id}/members`, { email: `demo-${account.id}@example.com` })
      print({ account, key, member }, () =>
        [
          `account ${account.id} "${account.name}" with wa_balance ${account.wa_balance}`,
          `API key (shown once, keep it now): ${key.key}`,
          '',
          'send a message:',
          `curl -s ${base}/api/v1/messages/send -H 'Authorization: Bearer ${key.key}' -H 'Content-Type: application/json' -d '{"to":"081234567890","body":"Hello from the messaging API"}'`,
          '',
          'check the balance:',
          `curl -s ${base}/api/v1/balance -H 'Authorization: Bearer ${key.key}'`,
          '',
          `the dashboard, as ${member.email} (a one-time link to set the password, valid 72 hours):`,
          member.link,
        ].join('\n'),
      )
      return 0
    }
    case 'operator': {
      if (sub !== 'create') fail('operator create EMAIL')
      const email = rest[0] ?? fail('operator create EMAIL')
      const user = await call('POST', '/admin/v1/operators', { email })
      print(user, () => [`operator ${user.email} created`, 'set the password (one-time link, valid 72 hours):', user.link].join('\n'))
      return 0
    }
    case 'member': {
      if (sub !== 'invite') fail('member invite ACCOUNT_ID EMAIL')
      const accountId = rest[0] ?? fail('member invite ACCOUNT_ID EMAIL')
      const email = rest[1] ?? fail('member invite ACCOUNT_ID EMAIL')
      const user = await call('POST', `/admin/v1/accounts/${encodeURIComponent(accountId)}/members`, { email })
      print(user, () =>
        [`member ${user.email} of account ${user.account_id} invited`, 'pass on this one-time link (valid 72 hours):', user.link].join(
          '\n',
        ),
      )
      return 0
    }
    case 'account': {
      if (sub === 'create') {
        const name = rest[0] ?? fail('account create NAME [--balance N]')
        const body: Record<string, unknown> = { name }
        if (args.flags.has('balance')) body.balance = integerArg(args.flags.get('balance'), '--balance')
        const account = await call('POST', '/admin/v1/accounts', body)
        print(account, () => `account ${account.id} "${account.name}" wa_balance ${account.wa_balance}`)
        return 0
      }
      if (sub === 'list') {
        const list = await call('GET', '/admin/v1/accounts?limit=200')
        print(
          list,
          () =>
            list.items.map((a: any) => `${a.id}\t${a.name}\twa_balance ${a.wa_balance}\tprice ${a.cost_per_message}`).join('\n') ||
            'no accounts',
        )
        return 0
      }
      fail('account create|list')
    }
    case 'key': {
      if (sub === 'create') {
        const accountId = integerArg(rest[0], 'ACCOUNT_ID')
        const label = rest[1] ?? fail('key create ACCOUNT_ID LABEL')
        const key = await call('POST', `/admin/v1/accounts/${accountId}/keys`, { label })
        print(key, () => `key ${key.id} "${key.label}" (shown once, keep it now): ${key.key}`)
        return 0
      }
      if (sub === 'list') {
        const list = await call('GET', `/admin/v1/accounts/${integerArg(rest[0], 'ACCOUNT_ID')}/keys`)
        print(
          list,
          () =>
            list.items
              .map(
                (k: any) =>
                  `${k.id}\t${k.prefix}…\t${k.label}\t${k.active ? 'active' : 'inactive'}\tlast used ${k.last_used_at ?? 'never'}`,
              )
              .join('\n') || 'no keys',
        )
        return 0
      }
      if (sub === 'activate' || sub === 'deactivate') {
        const key = await call('PATCH', `/admin/v1/keys/${integerArg(rest[0], 'KEY_ID')}`, { active: sub === 'activate' })
        print(key, () => `key ${key.id} "${key.label}" is now ${key.active ? 'active' : 'inactive'}`)
        return 0
      }
      fail('key create|list|activate|deactivate')
    }
    case 'topup': {
      const accountId = integerArg(sub, 'ACCOUNT_ID')
      const amount = integerArg(rest[0], 'AMOUNT')
      const note = args.flags.get('note')
      const result = await call('POST', `/admin/v1/accounts/${accountId}/topups`, { amount, ...(typeof note === 'string' ? { note } : {}) })
      print(result, () => `account ${accountId} wa_balance ${result.wa_balance}`)
      return 0
    }
    case 'price': {
      if (sub !== 'set') fail('price set AMOUNT [--account ACCOUNT_ID]')
      const cost = integerArg(rest[0], 'AMOUNT')
      const body: Record<string, unknown> = { cost_per_message: cost }
      if (args.flags.has('account')) body.account_id = integerArg(args.flags.get('account'), '--account')
      const price = await call('PUT', '/admin/v1/price', body)
      print(price, () => `cost_per_message ${price.cost_per_message} ${price.account_id ? `for account ${price.account_id}` : 'globally'}`)
      return 0
    }
    case 'ledger': {
      const accountId = integerArg(sub, 'ACCOUNT_ID')
      const limit = args.flags.has('limit') ? integerArg(args.flags.get('limit'), '--limit') : 50
      const list = await call('GET', `/admin/v1/accounts/${accountId}/ledger?limit=${limit}`)
      print(list, () =>
        [
          `${list.total} rows (newest first)`,
          ...list.items.map(
            (r: any) =>
              `${r.id}\t${r.created_at}\t${r.kind}\t${r.amount > 0 ? '+' : ''}${r.amount}\t→ ${r.balance_after}${r.message_id ? `\tmessage ${r.message_id}` : ''}${r.note ? `\t${r.note}` : ''}`,
          ),
        ].join('\n'),
      )
      return 0
    }
    case 'template': {
      const accountId = integerArg(rest[0], 'ACCOUNT_ID')
      if (sub === 'create') {
        const [name, body] = [rest[1], rest[2]]
        if (!name || body === undefined) fail('template create ACCOUNT_ID NAME BODY')
        const template = await call('POST', `/admin/v1/accounts/${accountId}/templates`, { name, body })
        print(template, () => `template ${template.id} "${template.name}": ${template.body}`)
        return 0
      }
      if (sub === 'list') {
        const list = await call('GET', `/admin/v1/accounts/${accountId}/templates?limit=200`)
        print(list, () => list.items.map((x: any) => `${x.id}\t${x.name}\t${x.body}`).join('\n') || 'no templates')
        return 0
      }
      fail('template create|list')
    }
    case 'segment': {
      const accountId = integerArg(rest[0], 'ACCOUNT_ID')
      if (sub === 'create') {
        const [name, tag] = [rest[1], rest[2]]
        if (!name || !tag) fail('segment create ACCOUNT_ID NAME TAG')
        const segment = await call('POST', `/admin/v1/accounts/${accountId}/segments`, { name, tag })
        print(segment, () => `segment ${segment.id} "${segment.name}": tag "${segment.tag}", ${segment.contact_count} contacts now`)
        return 0
      }
      if (sub === 'list') {
        const list = await call('GET', `/admin/v1/accounts/${accountId}/segments?limit=200`)
        print(
          list,
          () => list.items.map((x: any) => `${x.id}\t${x.name}\ttag ${x.tag}\t${x.contact_count} contacts`).join('\n') || 'no segments',
        )
        return 0
      }
      fail('segment create|list')
    }
    case 'campaign': {
      const describe = (d: any) =>
        `campaign ${d.campaign.id} "${d.campaign.name}" ${d.campaign.status}${d.campaign.pause_reason ? ` (${d.campaign.pause_reason})` : ''}\n` +
        `  total ${d.stats.total}, sent ${d.stats.sent}, delivered ${d.stats.delivered}, read ${d.stats.read}, failed ${d.stats.failed}`
      if (sub === 'list') {
        const list = await call('GET', `/admin/v1/accounts/${integerArg(rest[0], 'ACCOUNT_ID')}/campaigns?limit=200`)
        print(
          list,
          () =>
            list.items.map((c: any) => `${c.id}\t${c.status}\t${c.name}\tschedule ${c.schedule_at ?? '-'}`).join('\n') || 'no campaigns',
        )
        return 0
      }
      if (sub === 'show') {
        const detail = await call('GET', `/admin/v1/campaigns/${integerArg(rest[0], 'CAMPAIGN_ID')}`)
        print(detail, () => describe(detail))
        return 0
      }
      if (sub === 'run' || sub === 'resume' || sub === 'cancel') {
        const detail = await call('POST', `/admin/v1/campaigns/${integerArg(rest[0], 'CAMPAIGN_ID')}/${sub}`)
        print(detail, () => describe(detail))
        return 0
      }
      fail('campaign list|show|run|resume|cancel')
    }
    case 'deliveries': {
      const keyId = integerArg(sub, 'KEY_ID')
      const status = args.flags.get('status')
      const list = await call(
        'GET',
        `/admin/v1/keys/${keyId}/deliveries?limit=50${typeof status === 'string' ? `&status=${encodeURIComponent(status)}` : ''}`,
      )
      print(list, () =>
        [
          `${list.total} deliveries (newest first)`,
          ...list.items.map(
            (d: any) =>
              `${d.id}\t${d.status}\tattempts ${d.attempts}\t${d.webhook_id}\t${d.message_sid ?? ''}${d.last_error ? `\t${d.last_error}` : ''}`,
          ),
        ].join('\n'),
      )
      return 0
    }
    case 'replay': {
      const result = await call('POST', `/admin/v1/deliveries/${integerArg(sub, 'DELIVERY_ID')}/replay`)
      print(result, () => `delivery ${sub} queued again`)
      return 0
    }
    case 'replay-failed': {
      const since = args.flags.get('since')
      if (typeof since !== 'string') fail('replay-failed KEY_ID --since "YYYY-MM-DD HH:MM:SS"')
      const result = await call('POST', `/admin/v1/keys/${integerArg(sub, 'KEY_ID')}/deliveries/replay`, { since })
      print(result, () => `${result.replayed} failed deliveries queued again`)
      return 0
    }
    case 'webhook': {
      const command = { base, token, json, keyId: rest[0], forwardTo: args.flags.get('forward-to') }
      if (sub === 'listen') return webhookListen(command)
      if (sub === 'test') return webhookTest(command)
      fail('webhook listen|test KEY_ID [--forward-to URL]')
    }
    case 'quarantine': {
      const list = await call('GET', '/admin/v1/quarantine?limit=200')
      print(list, () =>
        [
          `${list.total} quarantined messages`,
          ...list.items.map(
            (m: any) => `${m.id}	account ${m.account_id}	${m.phone}	cost ${m.cost}	recovered ${m.handoff_recoveries}x	${m.quarantined_at}`,
          ),
        ].join('\n'),
      )
      return 0
    }
    case 'settle': {
      const outcome = args.positional[2]
      if (outcome !== 'sent' && outcome !== 'refund') fail('settle MESSAGE_ID sent|refund')
      const result = await call('POST', `/admin/v1/quarantine/${integerArg(sub, 'MESSAGE_ID')}/settle`, { outcome })
      print(result, () => (outcome === 'refund' ? `message ${sub} failed and refunded` : `message ${sub} kept as sent`))
      return 0
    }
  }
  fail(`unknown command "${args.positional.join(' ')}"\n\n${USAGE}`)
}

try {
  process.exit(await main(process.argv.slice(2)))
} catch (error) {
  if (error instanceof CliError || error instanceof ConfigError) {
    console.error(`admin: ${error.message}`)
    process.exit(1)
  }
  throw error
}
