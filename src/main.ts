// Entry point: read the configuration, start the service, print one short banner, drain on SIGTERM.

import { ConfigError, readConfig } from './config'
import { MigrationError } from './db/migrate'
import { startService } from './service'
import { setLogLevel } from './lib/log'

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
setLogLevel(config.logLevel)

let running
try {
  running = await startService(config)
} catch (error) {
  if (error instanceof MigrationError) console.error(`cannot start: ${error.message}`)
  else console.error(`cannot start: ${error instanceof Error ? error.message : String(error)}`)
  process.exit(1)
}

const tokenWhere = running.adminTokenFile ? `in ${running.adminTokenFile}` : 'from ADMIN_TOKEN'
console.log(
  [
    `messaging-api listening on ${running.url}`,
    `  docs      ${running.url}/docs`,
    `  database  ${running.database.describe}`,
    `  provider  ${config.provider}`,
    `  admin     token ${tokenWhere}`,
  ].join('\n'),
)

let shuttingDown = false
async function shutdown(signal: string) {
  if (shuttingDown) return
  shuttingDown = true
  console.log(`${signal}: finishing in-flight requests and closing the database`)
  const force = setTimeout(() => process.exit(1), 20_000)
  await running!.stop()
  clearTimeout(force)
  process.exit(0)
}
process.on('SIGTERM', () => void shutdown('SIGTERM'))
process.on('SIGINT', () => void shutdown('SIGINT'))
