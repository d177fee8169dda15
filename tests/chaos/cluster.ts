// The service under chaos: one instance on the embedded database, or two on one PostgreSQL database,
// each a real child process (`bun src/main.ts`) that the runner kills with SIGKILL and restarts.
// A small front proxy gives them one public URL (PUBLIC_BASE_URL, which Twilio's signatures cover)
// and sends each request to an instance that is up, as a load balancer would.

import { startChild, type Child } from '../helpers/child'

/** How long after a killed process is gone the fakes of this process may still read what it wrote. */
const KILL_READ_MARGIN_MS = 250

export type Cluster = {
  /** The front's URL: clients and the fake Twilio's callbacks use it. */
  url: string
  size: number
  /**
   * When each SIGKILL was sent and when its process was gone (ms since the epoch): a request the dying
   * process had already written may reach a fake in between.
   */
  kills: { at: number; until: number; instance: number }[]
  /** SIGKILL one instance, wait `downMs`, start it again. */
  crash(instance: number, downMs: number): Promise<void>
  /** SIGTERM every instance (a graceful stop) and the front, e.g. before reading an embedded database directly. */
  stop(): Promise<void>
  output(): string
  /** Instances that ended on their own (not killed or stopped by the runner): a finding each. */
  exits(): string[]
}

export async function startCluster(size: number, env: Record<string, string>): Promise<Cluster> {
  const instances: (Child | null)[] = new Array(size).fill(null)
  let next = 0
  const front = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    idleTimeout: 120,
    async fetch(request) {
      const up = instances.filter((c): c is Child => c !== null)
      if (up.length === 0) return Response.json({ success: false, error: 'no instance up', code: 'CHAOS_FRONT' }, { status: 503 })
      const target = up[next++ % up.length]!
      const url = new URL(request.url)
      const headers = new Headers(request.headers)
      headers.delete('host')
      try {
        const answer = await fetch(`${target.url}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          body: request.method === 'GET' ? undefined : await request.arrayBuffer(),
          redirect: 'manual',
        })
        return new Response(await answer.arrayBuffer(), { status: answer.status, headers: answer.headers })
      } catch {
        // The instance died with the request in flight: the client sees what a load balancer answers.
        return Response.json({ success: false, error: 'instance went away', code: 'CHAOS_FRONT' }, { status: 502 })
      }
    },
  })
  const url = `http://127.0.0.1:${front.port}`
  const fullEnv = { ...env, PUBLIC_BASE_URL: url }
  let logs = ''
  // An instance that cannot start (its database away for longer than the start waits for it, or the
  // connection cut midway through its first statements) exits; it is started again, as a supervisor
  // would, for a minute at most.
  const exits: string[] = []
  const start = async (i: number) => {
    for (let tries = 1; ; tries++) {
      try {
        const child = await startChild(fullEnv, { readyMs: 90_000 })
        instances[i] = child
        // Still listed as up when it ends: nobody here ended it (a kill or a stop unlists it first).
        void child.proc.exited.then((code) => {
          if (instances[i] !== child) return
          instances[i] = null
          exits.push(`instance ${i} ended on its own (exit ${code}): ${child.output().slice(-600)}`)
          logs += child.output()
          void start(i) // as a supervisor would
        })
        return
      } catch (error) {
        if (tries >= 60) throw error
        logs += `\n[chaos] instance ${i} did not start (${error instanceof Error ? error.message.slice(0, 80) : 'unknown'}); again\n`
        await Bun.sleep(1_000)
      }
    }
  }
  // One at a time: the first applies the migrations.
  for (let i = 0; i < size; i++) await start(i)

  const kills: Cluster['kills'] = []
  return {
    url,
    size,
    kills,
    async crash(i, downMs) {
      const child = instances[i]
      if (!child) return
      instances[i] = null
      const kill = { at: Date.now(), until: Number.MAX_SAFE_INTEGER, instance: i }
      kills.push(kill)
      await child.kill9()
      // What it wrote just before dying is read by the fakes (in this process) a moment later.
      kill.until = Date.now() + KILL_READ_MARGIN_MS
      logs += child.output()
      await Bun.sleep(downMs)
      await start(i)
    },
    async stop() {
      await Promise.all(
        instances.map(async (child, i) => {
          if (!child) return
          instances[i] = null
          // A graceful stop; one that hangs is a finding too, but must not hang the run.
          const exited = await Promise.race([child.stop(), Bun.sleep(20_000).then(() => null)])
          if (exited === null) {
            logs += '\n[chaos] instance did not stop within 20 s after SIGTERM; killed\n'
            await child.kill9()
          }
          logs += child.output()
        }),
      )
      front.stop(true)
    },
    output: () => logs + instances.map((c) => c?.output() ?? '').join(''),
    exits: () => exits,
  }
}
