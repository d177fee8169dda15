// CSV as RFC 4180 writes it: comma-separated, fields in double quotes may hold commas, quotes ("")
// and line breaks; CRLF or LF line ends; a leading byte-order mark is ignored. Each record comes
// with the line it starts on (1 = the first line), so errors can name it. Blank lines are skipped.
// Written with CRLF line ends, and one rule against formula injection for every export (csvField).

export type CsvRecord = { line: number; fields: string[] }

export function parseCsv(text: string): CsvRecord[] | { error: string } {
  const records: CsvRecord[] = []
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0
  let line = 1
  while (i < text.length) {
    const start = line
    const fields: string[] = []
    let field = ''
    let atEnd = false
    while (!atEnd) {
      if (text[i] === '"') {
        i++
        for (;;) {
          if (i >= text.length) return { error: `line ${start}: a quoted field is not closed` }
          const c = text[i]!
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"'
              i += 2
              continue
            }
            i++
            break
          }
          if (c === '\n') line++
          field += c
          i++
        }
      }
      while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') field += text[i++]
      fields.push(field)
      field = ''
      if (text[i] === ',') {
        i++
        continue
      }
      if (text[i] === '\r') i++
      if (text[i] === '\n') i++
      line++
      atEnd = true
    }
    if (fields.length === 1 && fields[0]!.trim() === '') continue
    records.push({ line: start, fields })
  }
  return records
}

/**
 * One CSV field as every export writes it: quoted when it holds a quote, comma or line break. Text a
 * spreadsheet would run as a formula gets a leading ' (OWASP's CSV injection rule): one starting with
 * = @ tab or carriage return, or with + or - unless it is a plain number or phone number (+6281234567890,
 * -500 stay as they are, so an export imports again). Numbers are written as they are.
 */
export function csvField(value: string | number | null): string {
  if (value === null) return ''
  if (typeof value === 'number') return String(value)
  const formula = /^[=@\t\r]/.test(value) || (/^[+-]/.test(value) && !/^[+-]\d[\d ().-]*$/.test(value))
  const text = formula ? `'${value}` : value
  return /[",\r\n]/.test(text) || formula ? `"${text.replaceAll('"', '""')}"` : text
}

/** A whole CSV text: a header row and the rows, each field through csvField, CRLF line ends. */
export const csvText = (header: readonly string[], rows: (string | number | null)[][]): string =>
  [header.join(','), ...rows.map((row) => row.map(csvField).join(','))].join('\r\n') + '\r\n'
