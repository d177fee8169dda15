// One line per event: info and debug on stdout, warn and error on stderr. LOG_FORMAT=text (the
// default) writes `time LEVEL msg key=value ...` for a terminal, LOG_FORMAT=json one JSON object per
// line for log shippers. Callers pass facts, never secrets, message bodies, SQL text or stacks.

export type Level = 'debug' | 'info' | 'warn' | 'error'
export type Format = 'text' | 'json'
type Fields = Record<string, unknown>

const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 }
let threshold: number = ORDER.info
let format: Format = 'text'

export function configureLog(options: { level: Level; format: Format }): void {
  threshold = ORDER[options.level]
  format = options.format
}

/** A value of a text line: bare when it is one plain word, else JSON (quoted, escaped: never a line break). */
function textValue(value: unknown): string {
  if (typeof value === 'string') return /^[\w.:/@+,&%[\]-]+$/.test(value) ? value : JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value)
  return JSON.stringify(value) ?? String(value)
}

export function formatLine(f: Format, time: Date, level: Level, msg: string, fields: Fields = {}): string {
  const defined = Object.entries(fields).filter(([, value]) => value !== undefined)
  if (f === 'json') return JSON.stringify({ time: time.toISOString(), level, msg, ...Object.fromEntries(defined) })
  const head = `${time.toISOString()} ${level.toUpperCase().padEnd(5)} ${msg.replace(/[\r\n]+/g, ' ')}`
  return [head, ...defined.map(([key, value]) => `${key}=${textValue(value)}`)].join(' ')
}

function write(level: Level, msg: string, fields?: Fields): void {
  if (ORDER[level] < threshold) return
  const line = formatLine(format, new Date(), level, msg, fields)
  if (ORDER[level] >= ORDER.warn) console.error(line)
  else console.log(line)
}

export const log = {
  debug: (msg: string, fields?: Fields) => write('debug', msg, fields),
  info: (msg: string, fields?: Fields) => write('info', msg, fields),
  warn: (msg: string, fields?: Fields) => write('warn', msg, fields),
  error: (msg: string, fields?: Fields) => write('error', msg, fields),
}

/**
 * What kind of error this was, safe for a log line: its class and, when it has one, its code (a
 * SQLSTATE like 40P01, a driver's CONNECTION_ENDED, a system ECONNRESET). Never the message, which
 * may hold SQL, values or secrets.
 */
export function errorKind(error: unknown): string {
  if (!(error instanceof Error)) return 'unknown'
  const code = (error as Error & { code?: unknown }).code
  return typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? `${error.name}:${code}` : error.name
}

/**
 * Where in the service's own code an error was thrown: the first frame of its stack inside `src/`, as
 * `path:line` (e.g. `modules/messages/bulk.ts:111`), or undefined. One location, never the trace, so that
 * an unexpected error's log line says where to look without carrying anything of the request.
 */
export function errorSite(error: unknown): string | undefined {
  if (!(error instanceof Error) || typeof error.stack !== 'string') return undefined
  const frame = /\/src\/([\w./-]+\.tsx?):(\d+)/.exec(error.stack)
  return frame ? `${frame[1]}:${frame[2]}` : undefined
}
