// A real PgBouncer (Debian's package) in transaction mode in front of one test database, run in the
// foreground as a child process: a small server pool (default_pool_size 4) so that consecutive
// transactions of one client connection really land on different server sessions.

import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { collectOutput, freePort } from './child'

export const PGBOUNCER = '/usr/sbin/pgbouncer'
export const havePgbouncer = () => existsSync(PGBOUNCER)

export type Bouncer = { url: string; output(): string; stop(): Promise<void> }

/** PgBouncer on 127.0.0.1:<free port> for the database of `directUrl` (same name), trust auth for postgres. */
export async function startPgbouncer(directUrl: string, options: { poolSize?: number } = {}): Promise<Bouncer> {
  const direct = new URL(directUrl)
  const database = direct.pathname.slice(1)
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'pgbouncer-'))
  chmodSync(dir, 0o755) // run as postgres below: it reads its files from here
  writeFileSync(join(dir, 'userlist.txt'), '"postgres" ""\n')
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${direct.hostname} port=${direct.port || 5432} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir =`,
      'pool_mode = transaction',
      'auth_type = trust',
      `auth_file = ${join(dir, 'userlist.txt')}`,
      `default_pool_size = ${options.poolSize ?? 4}`,
      'max_client_conn = 200',
      // Clients wait for a server session rather than fail: the pool is small on purpose.
      'query_wait_timeout = 60',
      '',
    ].join('\n'),
  )
  // PgBouncer refuses to run as root.
  const asRoot = process.getuid?.() === 0
  const proc = Bun.spawn([PGBOUNCER, ...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')], {
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const output = collectOutput(proc)
  const deadline = Date.now() + 10_000
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`pgbouncer exited with ${proc.exitCode}: ${output()}`)
    const up = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } }).then(
      (socket) => (socket.end(), true),
      () => false,
    )
    if (up) break
    if (Date.now() > deadline) {
      proc.kill(9)
      throw new Error(`pgbouncer did not listen in time: ${output()}`)
    }
    await Bun.sleep(50)
  }
  const url = new URL(directUrl)
  url.port = String(port)
  url.hostname = '127.0.0.1'
  return {
    url: url.toString(),
    output,
    async stop() {
      proc.kill('SIGTERM')
      await Promise.race([proc.exited, Bun.sleep(5_000)])
      if (proc.exitCode === null) {
        proc.kill(9)
        await proc.exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
