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

/** Parses `YYYY-MM-DD HH:MM:SS` as a wall-clock time in `timeZone`; null when malformed or impossible. */
export function parseTimestamp(text: string, timeZone: string): Date | null {
  const m = TIMESTAMP.exec(text)
  if (!m) return null
  const [year, month, day, hour, minute, second] = m.slice(1).map(Number) as [number, number, number, number, number, number]
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
    return null
  }
  if (timeZone === 'UTC') return check
  // The zone's offset at that wall-clock time: format the UTC guess in the zone and correct by the difference.
  let guess = asUtc
  for (let i = 0; i < 2; i++) {
    const p = parts(new Date(guess), timeZone)
    const shown = Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!)
    guess += asUtc - shown
  }
  return new Date(guess)
}
