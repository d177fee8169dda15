// The wait for a connection's decisions (src/db/connect-wait.ts), with its time given: which failures
// are waited through, the pause before each try, CONNECT_TIMEOUT past the wait, and the connections
// asked for just after it failing at once. The waiting itself, on real sockets (src/db/wire.ts), is
// proven against a real outage proxy in tests/db/start.outer.test.ts, tests/messages/lost-commit.outer.test.ts
// and the fault test.

import { expect, test } from 'bun:test'
import { ConnectWait, DRAIN_MS, isWaitable, pauseMs, type WaitTime } from '../../src/db/connect-wait'
import { isUnreachable } from '../../src/lib/no-connection'

const failure = (code: string) => Object.assign(new Error(`failed: ${code}`), { code })
const address = { host: '127.0.0.1', port: 5432 }

/** Time that moves only when the wait sleeps, or when the test says. */
function movedTime(): WaitTime & { at: number; slept: number[] } {
  const time = {
    at: 0,
    slept: [] as number[],
    now: () => time.at,
    sleep: async (ms: number) => {
      time.slept.push(ms)
      time.at += ms
    },
  }
  return time
}

test('a server that is down, restarting or out of reach is waited for; anything else is not', () => {
  for (const code of [
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EAI_AGAIN',
    'CONNECTION_CLOSED',
    '57P03',
  ])
    expect(isWaitable(failure(code))).toBe(true)
  for (const error of [failure('28P01'), failure('3D000'), failure('ERR_TLS_CERT_ALTNAME_INVALID'), new Error('no code'), null, undefined])
    expect(isWaitable(error)).toBe(false)
})

test('the first try goes at once; after a failure each try waits its pause, each failure told', async () => {
  const time = movedTime()
  const told: unknown[] = []
  const waits = new ConnectWait({ seconds: 10, address, onRetry: (error) => told.push(error), time })
  const wait = waits.start()
  expect(await waits.beforeTry(wait)).toBe(true)
  expect(time.slept).toEqual([])
  for (const code of ['ECONNREFUSED', '57P03', 'CONNECTION_CLOSED']) {
    waits.failed(wait, failure(code))
    expect(await waits.beforeTry(wait)).toBe(true)
  }
  expect(time.slept).toEqual([pauseMs(1), pauseMs(2), pauseMs(3)])
  expect(time.slept).toEqual([100, 200, 400])
  expect(pauseMs(10)).toBe(500)
  expect(told.map((error) => (error as { code: string }).code)).toEqual(['ECONNREFUSED', '57P03', 'CONNECTION_CLOSED'])
  // Another connection's wait is its own: its first try goes at once.
  expect(await waits.beforeTry(waits.start())).toBe(true)
  expect(time.slept).toHaveLength(3)
})

test('each connection waits from when it was asked for; past it: CONNECT_TIMEOUT, naming and carrying the last try', async () => {
  const time = movedTime()
  const waits = new ConnectWait({ seconds: 10, address, time })
  const first = waits.start()
  time.at = 2_000
  const second = waits.start()
  waits.failed(first, failure('ECONNREFUSED'))
  waits.failed(second, failure('ECONNREFUSED'))
  time.at = 9_000
  expect(await waits.beforeTry(first)).toBe(true)
  const last = failure('57P03')
  waits.failed(first, last)
  time.at = 10_000
  const error = (await waits.beforeTry(first)) as Error & { code: string; cause: unknown; address: string; port: number }
  expect(error).toBeInstanceOf(Error)
  expect(error.code).toBe('CONNECT_TIMEOUT')
  expect(error.message).toBe('write CONNECT_TIMEOUT 127.0.0.1:5432 (57P03)')
  expect(error.cause).toBe(last)
  expect([error.address, error.port]).toEqual(['127.0.0.1', 5432])
  expect(isUnreachable(error)).toBe(true)
  // The second was asked for 2 s later: it still waits.
  expect(await waits.beforeTry(second)).toBe(true)
  time.at = 12_000
  expect(((await waits.beforeTry(second)) as unknown as { code: string }).code).toBe('CONNECT_TIMEOUT')
})

test('just after a wait ran out, a new one fails at once (its statement was queued behind); later, or once a connection was ready, it waits anew', async () => {
  const time = movedTime()
  const waits = new ConnectWait({ seconds: 10, address, time })
  const wait = waits.start()
  waits.failed(wait, failure('ECONNREFUSED'))
  time.at = 10_000
  expect(((await waits.beforeTry(wait)) as unknown as { code: string }).code).toBe('CONNECT_TIMEOUT')
  time.at += DRAIN_MS - 1
  const queued = (await waits.beforeTry(waits.start())) as unknown as { code: string; message: string }
  expect([queued.code, queued.message]).toEqual(['CONNECT_TIMEOUT', 'write CONNECT_TIMEOUT 127.0.0.1:5432 (ECONNREFUSED)'])
  time.at += 1
  expect(await waits.beforeTry(waits.start())).toBe(true)
  // A connection ready ends it at once.
  const again = waits.start()
  waits.failed(again, failure('ECONNREFUSED'))
  time.at += 10_000
  expect(((await waits.beforeTry(again)) as unknown as { code: string }).code).toBe('CONNECT_TIMEOUT')
  waits.ready()
  expect(await waits.beforeTry(waits.start())).toBe(true)
})
