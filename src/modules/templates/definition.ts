// The first check of a template definition in the Cloud API's JSON (`name`, `language`, `category`,
// `parameter_format`, `components`) before it is stored and submitted: what the service needs to keep
// it (its name, language, category and parameter format) and the rules Meta refuses most, each a 422
// naming the part. The full rules of each component (lengths, examples, buttons) are components.ts's.

import { badValue } from '../../http/errors'
import { TEMPLATE_CATEGORIES, type TemplateCategory } from './catalog'

export type Definition = {
  name: string
  language: string
  category: TemplateCategory
  parameterFormat: 'positional' | 'named'
  components: Record<string, unknown>[]
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v)

export function checkDefinition(body: Record<string, unknown>): Definition {
  const { name, language, category, parameter_format: format, components } = body
  if (typeof name !== 'string' || !/^[a-z0-9_]{1,512}$/.test(name)) {
    throw badValue('name: must be 1 to 512 lowercase letters, digits and underscores')
  }
  if (typeof language !== 'string' || !/^[a-z]{2,3}(_[A-Za-z0-9]{2,4})?$/.test(language)) {
    throw badValue('language: must be a WhatsApp language code (en, en_US, id, pt_BR…)')
  }
  const cat = typeof category === 'string' ? category.toLowerCase() : ''
  if (!(TEMPLATE_CATEGORIES as readonly string[]).includes(cat)) throw badValue('category: must be MARKETING, UTILITY or AUTHENTICATION')
  if (format !== undefined && format !== 'POSITIONAL' && format !== 'NAMED') {
    throw badValue('parameter_format: must be POSITIONAL or NAMED')
  }
  if (!Array.isArray(components) || components.length === 0) throw badValue('components: must be a list of components')
  let bodies = 0
  for (const [i, c] of components.entries()) {
    if (!isObject(c) || typeof c.type !== 'string') throw badValue(`components[${i}].type: is required`)
    const type = c.type.toUpperCase()
    if (!['HEADER', 'BODY', 'FOOTER', 'BUTTONS'].includes(type))
      throw badValue(`components[${i}].type: must be HEADER, BODY, FOOTER or BUTTONS`)
    if (type !== 'BODY') continue
    bodies++
    const text = c.text
    if (text === undefined && cat === 'authentication') continue
    if (typeof text !== 'string' || text.length === 0 || text.length > 1024)
      throw badValue(`components[${i}].text: must be 1 to 1024 characters`)
    if (format !== 'NAMED' && /\{\{\s*[a-z_][a-z0-9_]*\s*\}\}/.test(text)) {
      throw badValue(`components[${i}].text: named parameters ({{order_id}}) need parameter_format NAMED`)
    }
  }
  if (bodies !== 1) throw badValue('components: must have exactly one BODY')
  return {
    name,
    language,
    category: cat as TemplateCategory,
    parameterFormat: format === 'NAMED' ? 'named' : 'positional',
    components: components as Record<string, unknown>[],
  }
}
