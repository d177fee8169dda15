// One CSV writer for every export (the ledger, opt-outs): one rule against formula injection, and what
// it writes reads back the same.

import { expect, test } from 'bun:test'
import { csvField, csvText, parseCsv } from '../../src/lib/csv'

test('a formula gets a leading quote; a phone number or a negative number stays as it is, so an export imports again', () => {
  for (const text of ['=SUM(A1)', '@cmd', '\tx', '+1+cmd|calc', '-2+3', '+', '-x']) expect(csvField(text)).toStartWith(`"'`)
  for (const text of ['+6281234567890', '-500', '+62 812-3456-7890', '081234567890']) expect(csvField(text)).toBe(text)
  expect(csvField(-7)).toBe('-7')
})

test('csvText writes CRLF lines that parseCsv reads back field for field', () => {
  const rows = [
    ['+6281234567890', 'say "hi", twice', null],
    ['=cmd', 'two\nlines', 3],
  ]
  const text = csvText(['phone', 'note', 'n'], rows)
  expect(text.endsWith('\r\n')).toBe(true)
  const read = parseCsv(text)
  if ('error' in read) throw new Error(read.error)
  expect(read.map((r) => r.fields)).toEqual([
    ['phone', 'note', 'n'],
    ['+6281234567890', 'say "hi", twice', ''],
    ["'=cmd", 'two\nlines', '3'],
  ])
})
