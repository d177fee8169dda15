// A browser-like client of the dashboard over app.handle (or, given its URL, a running service): keeps
// cookies, posts forms the way a same-origin page does (Sec-Fetch-Site: same-origin), and reads the
// CSRF token out of each page. Like a person filling a form in, a post carries the single-use token
// (`_once`) of the last page that showed the form, and a form sent already is first loaded again from
// the page it was on; a test that replays a form passes `_once` itself.

import type { TestApp } from './app'

export type Page = { status: number; text: string; headers: Headers; csrf: string | undefined; location: string | null }

export function webClient(target: TestApp | string) {
  const handle = (path: string, init: RequestInit) =>
    typeof target === 'string'
      ? fetch(`${target}${path}`, { ...init, redirect: 'manual' })
      : target.app.handle(new Request(`http://localhost${path}`, init))
  const jar = new Map<string, string>()
  // Per form action: its unused single-use token, and the page (GET) that showed it last.
  const tokens = new Map<string, string>()
  const formPages = new Map<string, string>()
  function rememberForms(method: string, path: string, text: string) {
    for (const [, action, inner] of text.matchAll(/<form\b[^>]*\baction="([^"]*)"[^>]*>([\s\S]*?)<\/form>/g)) {
      const token = /name="_once" value="([^"]+)"/.exec(inner!)?.[1]
      if (!token) continue
      const target = action!.replace(/&amp;/g, '&')
      tokens.set(target, token)
      if (method === 'GET') formPages.set(target, path)
    }
  }
  /** The single-use token for a form posting to `action` (loading its page again when its token was used). */
  async function formToken(action: string): Promise<string | undefined> {
    const page = formPages.get(action)
    if (!tokens.has(action) && page) await go('GET', page)
    const token = tokens.get(action)
    tokens.delete(action)
    return token
  }
  async function go(method: string, path: string, form?: Record<string, string>, headers: Record<string, string> = {}): Promise<Page> {
    const h = new Headers(headers)
    if (jar.size > 0) h.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '))
    let body: string | undefined
    if (form) {
      h.set('content-type', 'application/x-www-form-urlencoded')
      if (!h.has('sec-fetch-site') && !h.has('origin')) h.set('sec-fetch-site', 'same-origin')
      body = new URLSearchParams(form).toString()
    }
    const response = await handle(path, { method, headers: h, body })
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';')
      const [name, ...value] = pair!.split('=')
      if (/Max-Age=0/i.test(cookie)) jar.delete(name!)
      else jar.set(name!, value.join('='))
    }
    const text = await response.text()
    rememberForms(method, path, text)
    return {
      status: response.status,
      text,
      headers: response.headers,
      csrf: /name="_csrf" value="([^"]+)"/.exec(text)?.[1],
      location: response.headers.get('location'),
    }
  }
  return {
    jar,
    get: (path: string, headers?: Record<string, string>) => go('GET', path, undefined, headers),
    async post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Page> {
      const token = '_once' in form ? undefined : await formToken(path)
      return go('POST', path, token ? { ...form, _once: token } : form, headers)
    },
    formToken,
    /** The page a redirect answer leads to (the answer itself when it is not a redirect). */
    follow: <T extends { location: string | null }>(page: T): Promise<Page | T> =>
      page.location ? go('GET', page.location) : Promise.resolve(page),
    async signIn(email: string, password: string): Promise<Page> {
      const page = await go('GET', '/dashboard/sign-in')
      return go('POST', '/dashboard/sign-in', { _csrf: page.csrf!, email, password })
    },
    /** Sets the password through a one-time link (its path) and is signed in by it. */
    async useLink(link: string, password: string): Promise<Page> {
      const path = new URL(link).pathname
      return go('POST', path, { password })
    },
  }
}

/** A dashboard user made through the admin API, with its password set through the link. */
export async function dashboardUser(t: TestApp, email: string, password: string, accountId?: number) {
  const made = accountId
    ? await t.admin('POST', `/accounts/${accountId}/members`, { email })
    : await t.admin('POST', '/operators', { email })
  if (made.status !== 201) throw new Error(`user not made: ${JSON.stringify(made.body)}`)
  const client = webClient(t)
  const set = await client.useLink(made.body.data.link, password)
  if (set.status !== 303) throw new Error(`password not set: ${set.status} ${set.text.slice(0, 300)}`)
  return { client, id: made.body.data.id as number, link: made.body.data.link as string }
}
