// Wall-clock timestamps in a zone with daylight saving: a time the zone skips does not exist (422), a
// time it repeats is its earlier instant, and years before 1000 are refused rather than mis-read.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { formatTimestamp, parseTimestamp, readTimestamp } from '../../src/lib/time'
import { testApp, type TestApp } from '../helpers/app'
import { errorEnvelope } from '../helpers/envelope'

const iso = (text: string, zone: string) => parseTimestamp(text, zone)?.toISOString() ?? null

describe('readTimestamp', () => {
  test('ordinary times in zones with and without daylight saving', () => {
    expect(iso('2026-01-15 09:30:00', 'America/New_York')).toBe('2026-01-15T14:30:00.000Z')
    expect(iso('2026-07-15 09:30:00', 'America/New_York')).toBe('2026-07-15T13:30:00.000Z')
    expect(iso('2026-07-15 09:30:00', 'Europe/Berlin')).toBe('2026-07-15T07:30:00.000Z')
    expect(iso('2026-07-15 09:30:00', 'Asia/Jakarta')).toBe('2026-07-15T02:30:00.000Z')
    expect(iso('2026-07-15 09:30:00', 'UTC')).toBe('2026-07-15T09:30:00.000Z')
  })

  test('the spring gap does not exist; its edges do', () => {
    // New York skips 02:00-02:59 on 2026-03-08, Berlin skips 02:00-02:59 on 2026-03-29.
    for (const [zone, day] of [
      ['America/New_York', '2026-03-08'],
      ['Europe/Berlin', '2026-03-29'],
    ] as const) {
      for (const time of ['02:00:00', '02:30:00', '02:59:59']) expect(readTimestamp(`${day} ${time}`, zone)).toBe('gap')
      for (const time of ['01:59:59', '03:00:00']) {
        const date = parseTimestamp(`${day} ${time}`, zone)
        expect(date).not.toBeNull()
        expect(formatTimestamp(date, zone)).toBe(`${day} ${time}`)
      }
    }
  })

  test('an hour the autumn change repeats is read as its first occurrence', () => {
    // 2026-11-01 01:30 happens twice in New York: at -04:00, then at -05:00.
    expect(iso('2026-11-01 01:30:00', 'America/New_York')).toBe('2026-11-01T05:30:00.000Z')
    expect(iso('2026-10-25 02:30:00', 'Europe/Berlin')).toBe('2026-10-25T00:30:00.000Z')
  })

  test('years before 1000 are refused, not read as 19xx', () => {
    for (const text of ['0099-01-01 00:00:00', '0999-12-31 23:59:59', '0000-01-01 00:00:00']) {
      expect(readTimestamp(text, 'UTC')).toBe('year')
      expect(readTimestamp(text, 'Europe/Berlin')).toBe('year')
    }
    expect(iso('1000-01-01 00:00:00', 'UTC')).toBe('1000-01-01T00:00:00.000Z')
  })

  test('malformed or impossible calendar values', () => {
    for (const text of ['2026-02-29 00:00:00', '2026-01-01 24:00:00', '2026-01-01 00:60:00', '2026-01-01T00:00:00', '2026-01-01', '']) {
      expect(readTimestamp(text, 'America/New_York')).toBe('format')
    }
  })
})

describe('through the API, with TIMEZONE=America/New_York', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await testApp({ env: { TIMEZONE: 'America/New_York' } })
  }, 60_000)
  afterAll(() => t.close())

  test('a time in the spring gap is a 422 naming the field; a year before 1000 too', async () => {
    const { key } = await t.account(0)
    const gap = await t.api('GET', `/messages?date_to=${encodeURIComponent('2026-03-08 02:30:00')}`, key)
    expect(gap.status).toBe(422)
    expect(gap.body).toEqual(
      errorEnvelope(
        gap.headers,
        'VALIDATION_ERROR',
        'date_to: 2026-03-08 02:30:00 does not exist in America/New_York (skipped by a daylight-saving change)',
      ),
    )
    const old = await t.api('GET', `/messages?date_from=${encodeURIComponent('0999-01-01 00:00:00')}`, key)
    expect([old.status, old.body.error]).toEqual([422, 'date_from: the year must be 1000 or later'])
    const fine = await t.api('GET', `/messages?date_from=${encodeURIComponent('2026-03-08 03:00:00')}`, key)
    expect(fine.status).toBe(200)
  })
})
