import { expect, test } from 'bun:test'
import { renderTemplate, unknownPlaceholders } from '../../src/lib/template'

test('fills every known placeholder from the contact, spaces inside the braces allowed', () => {
  const body = 'Hi {{name}} ({{ phone }}), mail {{email}}, city {{city}}. Bye {{name}}!'
  expect(renderTemplate(body, { name: 'Sari', phone: '+6281234567890', email: 's@x.id', city: 'Bandung' })).toBe(
    'Hi Sari (+6281234567890), mail s@x.id, city Bandung. Bye Sari!',
  )
})

test('a missing value renders as empty', () => {
  expect(renderTemplate('Hi {{name}} from {{city}}.', { name: 'Budi', city: null })).toBe('Hi Budi from .')
  expect(renderTemplate('{{email}}', {})).toBe('')
})

test('text without placeholders and single braces stay as they are', () => {
  expect(renderTemplate('Promo {50%} off {{name}}', { name: 'A' })).toBe('Promo {50%} off A')
})

test('unknown placeholders are reported (and so rejected at save)', () => {
  expect(unknownPlaceholders('Hi {{name}} {{ phone }}')).toEqual([])
  expect(unknownPlaceholders('Hi {{first_name}} {{Name}} {{}} {{name}} {{first_name}}')).toEqual(['first_name', 'Name', ''])
})
