// The wait for a connection's decisions (src/db/connect-wait.ts), as postgres.js asks them through the
// patched client's connect_retry hook: the waiting itself is the driver's, proven against a real outage
// proxy in tests/db/start.outer.test.ts and the fault test.

import { expect, test } from 'bun:test'
import { connectWait } from '../../src/db/connect-wait'
import { isUnreachable } from '../../src/lib/no-connection'

const failure = (code: string) => Object.assign(new Error(`failed: ${code}`), { code })
const address = { host: '127.0.0.1', port: 5432 }

test('a server that is down, restarting or out of reach is waited for, each try told', () => {
  const told: unknown[] = []
  const retry = connectWait({ seconds: 10, address, onRetry: (error) => told.push(error) })
  const codes = [
    'ECONNREFUSED',
    'ECONNRESET',
    'EPIPE',
    'ETIMEDOUT',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EAI_AGAIN',
    'CONNECTION_CLOSED',
    '57P03',
  ]
  for (const code of codes) expect(retry(failure(code), 9_999)).toBe(true)
  expect(told.map((error) => (error as { code: string }).code)).toEqual(codes)
})

test('past the wait: CONNECT_TIMEOUT, naming and carrying the last try', () => {
  const told: unknown[] = []
  const retry = connectWait({ seconds: 10, address, onRetry: (error) => told.push(error) })
  const last = failure('57P03')
  const error = retry(last, 10_000) as Error & { code: string; cause: unknown; address: string; port: number }
  expect(error).toBeInstanceOf(Error)
  expect(error.code).toBe('CONNECT_TIMEOUT')
  expect(error.message).toBe('write CONNECT_TIMEOUT 127.0.0.1:5432 (57P03)')
  expect(error.cause).toBe(last)
  expect([error.address, error.port]).toEqual(['127.0.0.1', 5432])
  expect(isUnreachable(error)).toBe(true)
  expect(told).toEqual([])
})

test('anything else fails the statement at once, unchanged: a refused login, a missing database, TLS, no error at all', () => {
  const retry = connectWait({ seconds: 10, address })
  for (const error of [failure('28P01'), failure('3D000'), failure('ERR_TLS_CERT_ALTNAME_INVALID'), new Error('no code'), null, undefined])
    expect(retry(error, 0)).toBe(error)
})
