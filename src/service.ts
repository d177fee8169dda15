// Starting and stopping the whole service: database, migrations, HTTP server and worker loops.

import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import type { Config } from './config'
import type { Deps } from './deps'
import { openDatabase, type Database } from './db/client'
import { migrate } from './db/migrate'
import { createApp } from './app'
import { createProvider } from './providers'
import { createHandoff } from './modules/messages/handoff'
import { createSingleCharger } from './modules/messages/billing'
import { startLoop, type Loop } from './workers/loop'
import * as handoffRecovery from './workers/handoff-recovery'
import * as simulatorReports from './workers/simulator-reports'
import { startWebhookDelivery } from './workers/webhook-delivery'
import { eventsCommitted } from './modules/status/notify'
import * as campaigns from './modules/campaigns/engine'
import { randomBase62 } from './lib/keys'
import { log } from './lib/log'
import { MAX_BODY_BYTES } from './http/shell'

export type Running = {
  url: string
  database: Database
  deps: Deps
  adminTokenFile: string | undefined
  stop(): Promise<void>
}

/** ADMIN_TOKEN from the environment, or the one generated once into DATA_DIR/admin-token (0600). */
export function resolveAdminToken(config: Config): { token: string; file: string | undefined } {
  if (config.adminToken) return { token: config.adminToken, file: undefined }
  const file = resolve(join(config.dataDir, 'admin-token'))
  if (existsSync(file)) return { token: readFileSync(file, 'utf8').trim(), file }
  mkdirSync(config.dataDir, { recursive: true })
  const token = `adm_${randomBase62(40)}`
  writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' })
  chmodSync(file, 0o600)
  return { token, file }
}

export function buildDeps(config: Config, database: Database): { deps: Deps; loops: Map<string, Loop> } {
  const loops = new Map<string, Loop>()
  const provider = createProvider(config)
  const handoff = createHandoff(database.sql, provider, {
    concurrency: config.handoffConcurrency,
    maxPerSecond: config.providerMaxPerSecond,
  })
  const deps: Deps = {
    config,
    sql: database.sql,
    provider,
    handoff,
    chargeOne: createSingleCharger(database.sql),
    wake: (name) => loops.get(name)?.wake(),
  }
  return { deps, loops }
}

export function startWorkers(deps: Deps, loops: Map<string, Loop>): void {
  const add = (loop: Loop) => loops.set(loop.name, loop)
  add(startLoop('handoff-recovery', async () => (await handoffRecovery.runOnce(deps)).claimed, { pollMs: 5_000 }))
  // Woken by eventsCommitted; its stop() finishes and records the deliveries in flight.
  add(startWebhookDelivery(deps))
  add(startLoop('campaigns', async () => (await campaigns.runOnce(deps)).sent, { pollMs: 1_000 }))
  add(
    startLoop(
      'campaign-scheduler',
      async () => {
        const started = await campaigns.startDueCampaigns(deps.sql)
        if (started > 0) deps.wake('campaigns')
        return 0
      },
      { pollMs: 500 },
    ),
  )
  if (deps.provider.name === 'simulator') {
    add(
      startLoop(
        'simulator-reports',
        async () => {
          const { applied, events } = await simulatorReports.runOnce(deps)
          if (events > 0) eventsCommitted(deps)
          return applied
        },
        { pollMs: 100 },
      ),
    )
  }
}

export async function startService(config: Config): Promise<Running> {
  const admin = resolveAdminToken(config)
  const withToken: Config = { ...config, adminToken: admin.token }
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: config.dbPoolMax })
  try {
    const { applied } = await migrate(database.sql)
    if (applied.length > 0) log.info('migrations applied', { migrations: applied })
  } catch (error) {
    await database.close()
    throw error
  }
  const { deps, loops } = buildDeps(withToken, database)
  const app = createApp(deps)
  let server: ReturnType<typeof Bun.serve>
  try {
    server = Bun.serve({
      port: config.port,
      hostname: config.host,
      maxRequestBodySize: MAX_BODY_BYTES + 1024,
      tls: config.tls ? { cert: Bun.file(config.tls.certFile), key: Bun.file(config.tls.keyFile) } : undefined,
      fetch: (request) => app.handle(request),
      error: () => new Response(JSON.stringify({ success: false, error: 'internal error', code: 'INTERNAL_ERROR' }), { status: 500 }),
    })
  } catch (error) {
    // e.g. the port is taken: close the database cleanly before reporting it
    await database.close()
    throw error
  }
  startWorkers(deps, loops)
  const scheme = config.tls ? 'https' : 'http'
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  let stopping: Promise<void> | undefined
  return {
    url: `${scheme}://${host}:${server.port}`,
    database,
    deps,
    adminTokenFile: admin.file,
    stop() {
      stopping ??= (async () => {
        // Stop accepting, let in-flight requests finish, stop the loops, then close the database.
        await server.stop(false)
        await Promise.all([...loops.values()].map((loop) => loop.stop()))
        await database.close()
      })()
      return stopping
    },
  }
}
