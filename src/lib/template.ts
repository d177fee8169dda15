// Campaign templates: `{{name}}`, `{{phone}}`, `{{email}}` and `{{city}}` (spaces inside the braces
// allowed) are filled from the contact; a missing value renders as empty. Any other placeholder is
// rejected when the template is saved.

export const PLACEHOLDERS = ['name', 'phone', 'email', 'city'] as const
export type Placeholder = (typeof PLACEHOLDERS)[number]
export type TemplateValues = Partial<Record<Placeholder, string | null>>

const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g

/** Placeholders in `body` that are not known; empty when the template is acceptable. */
export function unknownPlaceholders(body: string): string[] {
  const unknown = new Set<string>()
  for (const match of body.matchAll(PLACEHOLDER)) {
    if (!(PLACEHOLDERS as readonly string[]).includes(match[1]!)) unknown.add(match[1]!)
  }
  return [...unknown]
}

export function renderTemplate(body: string, values: TemplateValues): string {
  return body.replace(PLACEHOLDER, (whole, name: string) =>
    (PLACEHOLDERS as readonly string[]).includes(name) ? (values[name as Placeholder] ?? '') : whole,
  )
}

/** The known placeholders `body` uses, each once, in order of first use. */
export function placeholdersOf(body: string): Placeholder[] {
  const used = new Set<Placeholder>()
  for (const match of body.matchAll(PLACEHOLDER)) {
    if ((PLACEHOLDERS as readonly string[]).includes(match[1]!)) used.add(match[1] as Placeholder)
  }
  return [...used]
}
