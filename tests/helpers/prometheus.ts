// A strict reader of the Prometheus text exposition format (0.0.4), for tests: every line must be a
// HELP, a TYPE or a sample of the family its TYPE announced, with label values unescaped as the
// format says. Throws naming the first line that is not.

export type Sample = { name: string; labels: Record<string, string>; value: number }
export type Scrape = {
  samples: Sample[]
  types: Map<string, string>
  helps: Map<string, string>
  /** The value of the sample `name` whose labels include `labels` (summed over the rest); 0 when none. */
  value(name: string, labels?: Record<string, string>): number
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*'
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`)
const SUFFIXES: Record<string, string[]> = { counter: [''], gauge: [''], histogram: ['_bucket', '_sum', '_count'] }

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {}
  let i = 0
  while (i < text.length) {
    const name = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(text.slice(i))
    if (!name) throw new Error(`bad label at ${i}: ${line}`)
    i += name[0].length
    let value = ''
    for (;;) {
      const c = text[i]
      if (c === undefined) throw new Error(`unterminated label value: ${line}`)
      if (c === '"') break
      if (c === '\\') {
        const next = text[i + 1]
        if (next === '\\') value += '\\'
        else if (next === '"') value += '"'
        else if (next === 'n') value += '\n'
        else throw new Error(`bad escape \\${next}: ${line}`)
        i += 2
      } else {
        value += c
        i++
      }
    }
    if (name[1]! in labels) throw new Error(`label ${name[1]} twice: ${line}`)
    labels[name[1]!] = value
    i++ // the closing quote
    if (i < text.length) {
      if (text[i] !== ',') throw new Error(`expected , at ${i}: ${line}`)
      i++
    }
  }
  return labels
}

function parseValue(raw: string, line: string): number {
  if (raw === '+Inf') return Infinity
  if (raw === '-Inf') return -Infinity
  if (raw === 'NaN') return NaN
  if (!/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i.test(raw)) throw new Error(`bad value ${raw}: ${line}`)
  return Number(raw)
}

export function parseExposition(text: string): Scrape {
  if (!text.endsWith('\n')) throw new Error('the exposition must end with a newline')
  const samples: Sample[] = []
  const types = new Map<string, string>()
  const helps = new Map<string, string>()
  let current: string | undefined
  for (const line of text.slice(0, -1).split('\n')) {
    const comment = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line)
    if (comment) {
      const [, kind, name, rest] = comment
      if (kind === 'HELP') {
        if (helps.has(name!)) throw new Error(`HELP twice for ${name}`)
        helps.set(name!, rest!)
      } else {
        if (!(rest! in SUFFIXES)) throw new Error(`unknown type ${rest}: ${line}`)
        if (types.has(name!)) throw new Error(`TYPE twice for ${name}`)
        types.set(name!, rest!)
        current = name
      }
      continue
    }
    const match = SAMPLE.exec(line)
    if (!match) throw new Error(`not a sample line: ${JSON.stringify(line)}`)
    const [, name, labelText, raw] = match
    const family = current
    if (!family || !SUFFIXES[types.get(family)!]!.some((suffix) => name === `${family}${suffix}`)) {
      throw new Error(`sample ${name} outside its family's TYPE (current ${family}): ${line}`)
    }
    samples.push({ name: name!, labels: labelText ? parseLabels(labelText, line) : {}, value: parseValue(raw!, line) })
  }
  return {
    samples,
    types,
    helps,
    value(name, labels = {}) {
      return samples
        .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
        .reduce((sum, s) => sum + s.value, 0)
    },
  }
}
