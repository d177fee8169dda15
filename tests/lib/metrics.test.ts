// The exposition format as written by the registry: escapes, cumulative buckets, HELP and TYPE, and
// names and labels the format refuses.

import { expect, test } from 'bun:test'
import { exposition, Registry } from '../../src/lib/metrics'
import { parseExposition } from '../helpers/prometheus'

test('label values escape backslash, double quote and newline; HELP escapes backslash and newline', () => {
  const registry = new Registry()
  const counter = registry.counter('x_total', 'a help \\ with\na newline', ['path'])
  counter.inc({ path: 'a"b\\c\nd' }, 2)
  const text = exposition(registry.families())
  expect(text).toBe('# HELP x_total a help \\\\ with\\na newline\n# TYPE x_total counter\nx_total{path="a\\"b\\\\c\\nd"} 2\n')
  expect(parseExposition(text).samples[0]!.labels.path).toBe('a"b\\c\nd')
})

test('histogram buckets are cumulative, with +Inf, _sum and _count; a counter never goes down', () => {
  const registry = new Registry()
  const histogram = registry.histogram('h_seconds', 'h', ['kind'], [0.1, 1])
  for (const value of [0.05, 0.1, 0.5, 3]) histogram.observe({ kind: 'a' }, value)
  const counter = registry.counter('c_total', 'c')
  counter.inc({}, 3)
  counter.inc({}, -1)
  const scrape = parseExposition(exposition(registry.families()))
  expect(scrape.value('h_seconds_bucket', { le: '0.1' })).toBe(2)
  expect(scrape.value('h_seconds_bucket', { le: '1' })).toBe(3)
  expect(scrape.value('h_seconds_bucket', { le: '+Inf' })).toBe(4)
  expect(scrape.value('h_seconds_sum')).toBeCloseTo(3.65)
  expect(scrape.value('h_seconds_count')).toBe(4)
  expect(scrape.value('c_total')).toBe(3)
})

test('names, label names and duplicates the format refuses are refused when the metric is made', () => {
  const registry = new Registry()
  expect(() => registry.counter('bad-name_total', 'x')).toThrow()
  expect(() => registry.counter('ok_total', 'x', ['__reserved'])).toThrow()
  expect(() => registry.histogram('h', 'x', ['le'], [1])).toThrow()
  registry.gauge('g', 'x')
  expect(() => registry.gauge('g', 'x')).toThrow()
})
