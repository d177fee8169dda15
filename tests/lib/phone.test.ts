import { describe, expect, test } from 'bun:test'
import { normalizePhone } from '../../src/lib/phone'

describe('normalizePhone', () => {
  const accepted: [string, string][] = [
    ['081234567890', '+6281234567890'],
    ['6281234567890', '+6281234567890'],
    ['+6281234567890', '+6281234567890'],
    ['0812 3456 7890', '+6281234567890'],
    ['0812-3456-7890', '+6281234567890'],
    ['0812.3456.7890', '+6281234567890'],
    ['(0812) 3456-7890', '+6281234567890'],
    ['+62 (812) 3456.7890', '+6281234567890'],
    ['62-812-3456-7890', '+6281234567890'],
    [' 081234567890 ', '+6281234567890'],
    ['0812345678', '+62812345678'], // shortest: 8 + 8 digits
    ['+62812345678901', '+62812345678901'], // longest: 8 + 11 digits
  ]
  for (const [input, expected] of accepted) {
    test(`accepts ${JSON.stringify(input)}`, () => expect(normalizePhone(input)).toBe(expected))
  }

  const rejected: [string, string][] = [
    ['', 'empty'],
    ['81234567890', 'no prefix'],
    ['+6581234567890', 'another country code'],
    ['+1 555 123 4567', 'another country'],
    ['0212345678', 'landline (national number not starting with 8)'],
    ['+62021234567', '+62 followed by a leading 0'],
    ['081234567', '8 + 7 digits: too short'],
    ['+628123456789012', '8 + 12 digits: too long'],
    ['0812345678a0', 'a letter'],
    ['0812_3456_7890', 'an underscore is not a separator'],
    ['0812/3456/7890', 'a slash is not a separator'],
    ['++6281234567890', 'two plus signs'],
    ['62+81234567890', 'plus in the middle'],
    ['+', 'just a plus'],
    ['0', 'just a zero'],
    ['０８１２３４５６７８９０', 'full-width digits'],
  ]
  for (const [input, why] of rejected) {
    test(`rejects ${JSON.stringify(input)} (${why})`, () => expect(normalizePhone(input)).toBeNull())
  }
})
