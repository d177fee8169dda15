// `ready`: the service's readiness (GET /readyz) as an exit code, for a health check that has nothing but the
// binary: the container image's HEALTHCHECK (FROM scratch: no shell, no curl) or a supervisor's probe. It
// needs no admin token: /readyz is open.

import { CliError, serviceRoot, unreachable } from './client'
import type { Command } from './command'

const ready: Command = {
  name: 'ready',
  args: [],
  summary: 'exit 0 when the service answers GET /readyz with 200 (a health check); 1 otherwise',
  details:
    "Asks the running service's /readyz (its database reachable, its migrations applied) and prints its answer. " +
    'No admin token needed. Exit 1 when it is not ready, does not answer within --timeout seconds, or cannot be ' +
    "reached: the container image's HEALTHCHECK runs it.",
  example: 'bun run admin ready --timeout 5',
  flags: { timeout: { value: 'SECONDS', help: 'how long to wait for the answer (default 5)' } },
  async run(ctx) {
    const seconds = ctx.flags.timeout === undefined ? 5 : ctx.decimal('timeout')
    if (seconds <= 0) throw ctx.usage('--timeout: expected a number of seconds above 0')
    const { base, origin } = serviceRoot(ctx.url)
    let response: Response
    try {
      response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(seconds * 1000) })
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') throw new CliError(`${base}/readyz did not answer within ${seconds} s`)
      throw unreachable(base, origin, error)
    }
    const payload = (await response.json().catch(() => null)) as { data?: unknown; error?: string; code?: string } | null
    const isReady = response.status === 200
    return {
      data: { url: `${base}/readyz`, status: response.status, ready: isReady, answer: payload },
      text: () =>
        isReady
          ? `ready: ${base}/readyz answered 200`
          : `not ready: ${base}/readyz answered HTTP ${response.status}${payload?.error ? `: ${payload.code} ${payload.error}` : ''}`,
      exitCode: isReady ? 0 : 1,
    }
  },
}

export const readyCommands: Command[] = [ready]
