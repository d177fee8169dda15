// The dashboard's JSX runtime: TSX compiles to h() calls (tsconfig: jsxFactory h), which build HTML
// strings. Every string child and attribute value is escaped; only an Html value (what h() returns,
// or raw() for markup the server built itself, such as a chart) goes out as it is. No React.

export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value
  }
}

export type Child = Html | string | number | boolean | null | undefined | Child[]
type Props = Record<string, unknown> & { children?: Child }
type Component = (props: any) => Html

const VOID = new Set(['area', 'br', 'col', 'hr', 'img', 'input', 'link', 'meta', 'source', 'wbr'])
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!)
}

/** Markup the server itself built: not escaped. Never pass it anything a user typed. */
export const raw = (markup: string) => new Html(markup)

function render(child: Child): string {
  if (child === null || child === undefined || child === false || child === true) return ''
  if (child instanceof Html) return child.value
  if (Array.isArray(child)) return child.map(render).join('')
  return escapeHtml(String(child))
}

function attributes(props: Props | null): string {
  if (!props) return ''
  let out = ''
  for (const [name, value] of Object.entries(props)) {
    if (name === 'children' || value === false || value === null || value === undefined) continue
    if (!/^[a-zA-Z][\w:-]*$/.test(name)) throw new Error(`not an attribute name: ${name}`)
    out += value === true ? ` ${name}` : ` ${name}="${escapeHtml(String(value))}"`
  }
  return out
}

export function h(tag: string | Component, props: Props | null, ...children: Child[]): Html {
  if (typeof tag === 'function') return tag({ ...props, children })
  if (VOID.has(tag)) return new Html(`<${tag}${attributes(props)}>`)
  return new Html(`<${tag}${attributes(props)}>${render(children)}</${tag}>`)
}

export function Fragment(props: { children?: Child }): Html {
  return new Html(render(props.children ?? []))
}

/** A whole document. */
export const documentOf = (html: Html) => `<!doctype html>\n${html.value}`

declare global {
  namespace JSX {
    type Element = Html
    interface IntrinsicElements {
      [tag: string]: Record<string, unknown>
    }
    interface ElementChildrenAttribute {
      children: {}
    }
  }
}
