// Entry point. `--help` and `--version` answer from what is compiled in and exit: no configuration
// read, no file touched. `admin <command>` is the operator's command line (src/cli, the same one as
// `bun run admin`), so the single binary is the whole product. Otherwise: read the configuration,
// start the service, print one short banner, drain on SIGTERM.

import { basename } from 'node:path'
import { version } from '../package.json'
import { ConfigError, VARIABLES, readConfig } from './config'
import { commandIndex } from './cli/help'
import { commands, runAdmin } from './cli/run'

/** How this program is started, for the command line's usage lines: the binary by its file name. */
const SELF = Bun.isStandaloneExecutable ? basename(process.execPath) : 'bun src/main.ts'

function help(): string {
  const rows = Object.entries(VARIABLES).map(([name, v]) => [name, 'default' in v ? v.default : v.shown, v.meaning] as const)
  const nameWidth = Math.max(...rows.map((r) => r[0].length))
  const defaultWidth = Math.max(...rows.map((r) => r[1].length))
  const indent = 2 + nameWidth + 2 + defaultWidth + 2
  // Meanings wrap at 100 columns, continued under their own column.
  const wrap = (text: string) => {
    const lines = ['']
    for (const word of text.split(' ')) {
      const last = lines.length - 1
      if (lines[last] && indent + lines[last]!.length + 1 + word.length > 100) lines.push(word)
      else lines[last] = lines[last] ? `${lines[last]} ${word}` : word
    }
    return lines.join(`\n${' '.repeat(indent)}`)
  }
  return [
    `messaging-api ${version}: a prepaid messaging API (JSON over HTTP)`,
    '',
    'usage: messaging-api [--help | --version]      (from source: bun src/main.ts [--help | --version])',
    '       messaging-api admin <command> [arguments] [options]',
    '',
    'Without arguments it starts the service, configured only by the environment variables below. It serves,',
    'on http://HOST:PORT (127.0.0.1:3000 by default):',
    '  /api/v1        the JSON API (an API key); /admin/v1 the admin API (the admin token)',
    '  /dashboard     the web dashboard for operators and account members (messaging-api admin operator',
    '                 create EMAIL makes the first operator, with a one-time link to sign in)',
    '  /docs          the API reference (OpenAPI at /docs/json); /docs/admin the admin API and callbacks',
    '',
    "With admin, it is the operator's command line (from source: bun run admin): a client of the running",
    "service's admin API, which finds the service from --url, or from HOST and PORT, and the admin token in",
    'ADMIN_TOKEN, or in DATA_DIR/admin-token. Its commands (messaging-api admin help lists them with their',
    "arguments; messaging-api admin <command> --help shows one's usage, options and an example):",
    commandIndex(commands),
    '',
    'Database, one of two modes:',
    '  embedded     DATABASE_URL unset: PGlite (PostgreSQL in WebAssembly) keeps the database in',
    '               DATA_DIR/pgdata. One process at a time: DATA_DIR/lock names the holder, and a',
    '               second start on the same DATA_DIR refuses and exits 1.',
    '  PostgreSQL   DATABASE_URL=postgres://...: a PostgreSQL 15+ database, which any number of',
    '               instances may share.',
    '',
    'Environment (name, default, meaning):',
    ...rows.map(([name, shown, meaning]) => `  ${name.padEnd(nameWidth)}  ${shown.padEnd(defaultWidth)}  ${wrap(meaning)}`),
    '',
    'Options:',
    '  --help, -h     this text',
    '  --version, -v  the version',
    '',
  ].join('\n')
}

/** The exit code when the arguments are answered without starting, or undefined to start. */
function answer(args: string[]): number | undefined {
  const unknown = args.find((arg) => !['--help', '-h', '--version', '-v'].includes(arg))
  if (unknown !== undefined) {
    console.error(`messaging-api: unknown argument "${unknown}" (see --help)`)
    return 2
  }
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(help())
    return 0
  }
  if (args.length > 0) {
    console.log(version)
    return 0
  }
  return undefined
}

async function serve(): Promise<void> {
  let config
  try {
    config = readConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`configuration error: ${error.message}`)
      process.exit(2)
    }
    throw error
  }

  // Loaded only here, so --help and --version load nothing of the service.
  const { startService } = await import('./server')
  const { configureLog, log } = await import('./lib/log')
  configureLog({ level: config.logLevel, format: config.logFormat })

  let running: Awaited<ReturnType<typeof startService>>
  try {
    running = await startService(config)
  } catch (error) {
    console.error(`cannot start: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  }

  const tokenWhere = running.adminTokenFile ? `in ${running.adminTokenFile}` : 'from ADMIN_TOKEN'
  // The banner is for a person at a terminal; a log shipper gets the same facts as one event.
  if (config.logFormat === 'json') {
    log.info('listening', {
      url: running.url,
      dashboard_url: `${running.url}/dashboard`,
      docs_url: `${running.url}/docs`,
      database: running.database.describe,
      provider: config.provider,
      admin_token_source: running.adminTokenFile ?? 'ADMIN_TOKEN',
      metrics_url: running.metricsUrl,
    })
  } else {
    console.log(
      [
        `messaging-api listening on ${running.url}`,
        `  dashboard ${running.url}/dashboard`,
        `  docs      ${running.url}/docs (admin API: ${running.url}/docs/admin)`,
        `  database  ${running.database.describe}`,
        `  provider  ${config.provider}`,
        `  admin     token ${tokenWhere}`,
        ...(running.metricsUrl ? [`  metrics   ${running.metricsUrl} (no credentials, loopback only)`] : []),
      ].join('\n'),
    )
  }

  let shuttingDown = false
  async function shutdown(signal: string) {
    if (shuttingDown) return
    shuttingDown = true
    log.info('shutting down: finishing in-flight requests and closing the database', { signal })
    const force = setTimeout(() => process.exit(1), 20_000)
    await running.stop()
    clearTimeout(force)
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

// Answered arguments end with an exit code set, not process.exit, so the text is flushed to a pipe.
const args = process.argv.slice(2)
if (args[0] === 'admin') {
  process.exitCode = await runAdmin(args.slice(1), { admin: `${SELF} admin`, start: SELF })
} else {
  const code = answer(args)
  if (code === undefined) await serve()
  else process.exitCode = code
}
