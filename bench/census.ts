// Not a benchmark: the statements a lifecycle costs (as in bench/lifecycle.ts: send, delivered and read
// callbacks, two webhooks), counted from PostgreSQL's own log (log_statement = 'all' on a database of
// its own). `bun bench/census.ts [lifecycles] [workers]` (default 20 lifecycles, 1 worker) with the
// server's log readable (LOG_FILE, default Debian's /var/log/postgresql/postgresql-15-main.log).
// With one worker each statement is one lifecycle's; with 32, the service's group commits share them.

import { createHmac } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { makeTestTls } from '../tests/helpers/receiver'
import {
  apiJson,
  createFreshDatabase,
  DEFAULT_SERVER_URL,
  seedAccounts,
  serverClient,
  sleep,
  startHelperProcess,
  startServiceChild,
  startWebhookReceiver,
} from './lib'

const n = Number(process.argv[2] ?? 20)
const workers = Number(process.argv[3] ?? 1)
const logFile = process.env.LOG_FILE ?? '/var/log/postgresql/postgresql-15-main.log'
const serverUrl = process.env.DATABASE_URL || DEFAULT_SERVER_URL
const AUTH_TOKEN = 'census-auth-token'
const db = await createFreshDatabase(serverUrl, 'census')
const monitor = serverClient(serverUrl)
const tls = makeTestTls()
const receiver = await startWebhookReceiver(tls.certFile, tls.keyFile, tls.caFile)
const twilio = await startHelperProcess('bench/fake-twilio.ts', {})
await monitor.unsafe(`alter database ${db.name} set log_statement = 'all'`)
const service = await startServiceChild({
  databaseUrl: db.url,
  env: {
    PROVIDER: 'twilio',
    TWILIO_ACCOUNT_SID: `AC${'b'.repeat(32)}`,
    TWILIO_AUTH_TOKEN: AUTH_TOKEN,
    TWILIO_FROM: 'whatsapp:+14155238886',
    TWILIO_API_BASE: `http://127.0.0.1:${twilio.port}`,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    NODE_EXTRA_CA_CERTS: tls.caFile,
    WINDOW_CHECK: 'off',
  },
})
try {
  const [account] = await seedAccounts(service, 1, { balance: 1_000_000 })
  await apiJson(`${service.url}/api/v1/webhook`, { token: account!.key, body: { url: `https://localhost:${receiver.port}/hook` } })
  const callbackUrl = `${service.url}/provider/twilio/status`
  const lifecycle = async (i: number) => {
    const res = await fetch(`${service.url}/api/v1/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account!.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: `0813${String(i).padStart(8, '0')}`, body: 'census' }),
    })
    const sid: string = ((await res.json()) as { data: { message_id: string } }).data.message_id
    for (const status of ['delivered', 'read']) {
      const params: Record<string, string> = { MessageSid: sid, MessageStatus: status, AccountSid: `AC${'b'.repeat(32)}` }
      let data = callbackUrl
      for (const key of Object.keys(params).sort()) data += key + params[key]
      const signature = createHmac('sha1', AUTH_TOKEN).update(data, 'utf8').digest('base64')
      const r = await fetch(callbackUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
      })
      if (r.status !== 200) throw new Error(`callback ${r.status} ${await r.text()}`)
      if (workers === 1) await sleep(50) // its webhook goes out before the next step
    }
  }
  for (let i = 0; i < 5; i++) await lifecycle(i)
  await sleep(500)
  const from = statSync(logFile).size
  let next = 0
  await Promise.all(
    Array.from({ length: workers }, async () => {
      for (let i = next++; i < n; i = next++) await lifecycle(100 + i)
    }),
  )
  await sleep(1500)
  const text = readFileSync(logFile, 'utf8').slice(from)
  // A statement's text goes on over the following lines (each begins with a tab).
  const statements: string[] = []
  let open = false
  for (const line of text.split('\n')) {
    if (line.startsWith('\t')) {
      if (open) statements[statements.length - 1] += ' ' + line.trim()
      continue
    }
    const m = line.includes(`@${db.name} `) ? /LOG:\s+(?:statement|execute [^:]*):\s+(.*)$/.exec(line) : null
    open = !!m
    if (m) statements.push(m[1]!)
  }
  const counts = new Map<string, number>()
  const total = statements.length
  for (const st of statements) {
    const key = st.replace(/\s+/g, ' ').slice(0, 140)
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  console.log(`${total} statements for ${n} lifecycles (${workers} at a time): ${(total / n).toFixed(1)} a lifecycle`)
  for (const [key, count] of [...counts].sort((a, b) => b[1] - a[1])) console.log(`${(count / n).toFixed(2).padStart(6)}  ${key}`)
} finally {
  await service.stop()
  await twilio.stop()
  await receiver.stop()
  tls.remove()
  await monitor.end()
  await db.drop()
}
