// Timestamps cross the API as `YYYY-MM-DD HH:MM:SS` in the configured TIMEZONE; the database keeps
// timestamptz. These two functions are the only conversion between the two.

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    })
    formatters.set(timeZone, f)
  }
  return f
}

function parts(date: Date, timeZone: string): Record<string, number> {
  const out: Record<string, number> = {}
  for (const p of formatter(timeZone).formatToParts(date)) if (p.type !== 'literal') out[p.type] = Number(p.value)
  return out
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0')

export function formatTimestamp(date: Date | null | undefined, timeZone: string): string | null {
  if (!date) return null
  if (timeZone === 'UTC') return date.toISOString().slice(0, 19).replace('T', ' ')
  const p = parts(date, timeZone)
  return `${pad(p.year!, 4)}-${pad(p.month!)}-${pad(p.day!)} ${pad(p.hour!)}:${pad(p.minute!)}:${pad(p.second!)}`
}

export type TimestampProblem = 'format' | 'year' | 'gap'

/**
 * Reads `YYYY-MM-DD HH:MM:SS` as a wall-clock time in `timeZone`. Years before 1000 are refused
 * (`Date.UTC` reads 0099 as 1999); a time the zone skips (the spring-forward gap of daylight saving)
 * does not exist; a time it repeats (autumn) is the earlier of the two instants.
 */
export function readTimestamp(text: string, timeZone: string): Date | TimestampProblem {
  const m = TIMESTAMP.exec(text)
  if (!m) return 'format'
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number]
  if (year < 1000) return 'year'
  const asUtc = Date.UTC(year, month - 1, day, hour, minute, second)
  const check = new Date(asUtc)
  if (
    check.getUTCFullYear() !== year ||
    check.getUTCMonth() !== month - 1 ||
    check.getUTCDate() !== day ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  ) {
    return 'format'
  }
  if (timeZone === 'UTC') return check
  // The zone's offsets a day either side cover any one transition: each gives a candidate instant,
  // and a candidate counts only if the zone shows it as the requested wall-clock time.
  const candidates = [...new Set([offsetAt(asUtc - DAY_MS, timeZone), offsetAt(asUtc + DAY_MS, timeZone)])]
    .map((offset) => asUtc - offset)
    .filter((instant) => offsetAt(instant, timeZone) === asUtc - instant)
    .sort((a, b) => a - b)
  return candidates.length === 0 ? 'gap' : new Date(candidates[0]!)
}

/** `readTimestamp` without the reason: null when malformed, before year 1000, or skipped by the zone. */
export function parseTimestamp(text: string, timeZone: string): Date | null {
  const result = readTimestamp(text, timeZone)
  return result instanceof Date ? result : null
}

const DAY_MS = 86_400_000

/** The zone's offset from UTC at `instant`, in milliseconds (whole seconds: the formatter shows no more). */
function offsetAt(instant: number, timeZone: string): number {
  const p = parts(new Date(instant), timeZone)
  const shown = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!)
  return shown - Math.floor(instant / 1000) * 1000
}

/**
 * A service's answer as the edge shows it: every Date in it (in plain objects and arrays, at any depth)
 * becomes `formatTimestamp` text in `timeZone`. Services return Dates; routes, pages, CSV and the CLI
 * call this, so the time zone stays at the edge.
 */
export function formatTimes<T>(value: T, timeZone: string): Formatted<T> {
  return formatAny(value, timeZone) as Formatted<T>
}

function formatAny(value: unknown, timeZone: string): unknown {
  if (value instanceof Date) return formatTimestamp(value, timeZone)
  if (Array.isArray(value)) return Array.from(value, (v) => formatAny(v, timeZone))
  if (value instanceof Map) return new Map([...value].map(([k, v]) => [k, formatAny(v, timeZone)]))
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, formatAny(v, timeZone)]))
  }
  return value
}

/** `T` with each Date shown as text (`formatTimes`); `any` (a parsed JSON payload) stays as it is. */
export type Formatted<T> = 0 extends 1 & T
  ? T
  : T extends Date
    ? string
    : T extends Map<infer K, infer V>
      ? Map<K, Formatted<V>>
      : T extends object
        ? { [K in keyof T]: Formatted<T[K]> } // arrays and tuples map element by element
        : T
