// Outer ring (real time): it drives a real Chromium (playwright-core) against a real server on loopback.
// The browser harness works end to end against a real Bun server on loopback: a form filled by its
// label and sent with Enter, answered by a redirect to a page showing the value escaped; a failed
// step leaves a screenshot named in its error; two openBrowser() calls are independent people; and
// Chromium keeps a `__Host-` cookie (Secure; HttpOnly; SameSite=Strict; Path=/) over plain http on
// 127.0.0.1 and on localhost, which browsers treat as secure contexts, and sends it back.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, rmdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { openBrowser, screenshot, skipBrowserTests, step, type TestBrowser } from './browser'

const HOST_COOKIE = '__Host-sid=s3cr3t; Secure; HttpOnly; SameSite=Strict; Path=/'
// Breaks the __Host- rules (no Secure): Chromium must refuse it, so the acceptance above means something.
const BAD_HOST_COOKIE = '__Host-bad=1; HttpOnly; SameSite=Strict; Path=/'

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function html(body: string): Response {
  return new Response(`<!doctype html><html><head><meta charset="utf-8"><title>harness</title></head><body>${body}</body></html>`, {
    headers: { 'content-type': 'text/html; charset=utf-8' },
  })
}

const PAGE_TIMEOUT = 30_000
const HOOK_TIMEOUT = 60_000

describe.skipIf(skipBrowserTests())('browser harness', () => {
  let server: ReturnType<typeof Bun.serve>
  let base: string
  const browsers: TestBrowser[] = []
  const open = async () => {
    const browser = await openBrowser()
    browsers.push(browser)
    return browser
  }

  beforeAll(() => {
    server = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const url = new URL(request.url)
        if (request.method === 'GET' && url.pathname === '/') {
          return html(
            `<form method="post" action="/submit"><label for="name">Your name</label> <input id="name" name="name" autocomplete="off"> <button type="submit">Send</button></form>`,
          )
        }
        if (request.method === 'POST' && url.pathname === '/submit') {
          const name = String((await request.formData()).get('name') ?? '')
          return new Response(null, { status: 303, headers: { location: `/result?name=${encodeURIComponent(name)}` } })
        }
        if (request.method === 'GET' && url.pathname === '/result') {
          return html(`<p id="result">Hello, ${escapeHtml(url.searchParams.get('name') ?? '')}!</p>`)
        }
        if (url.pathname === '/login') {
          const headers = new Headers({ 'content-type': 'text/plain' })
          headers.append('set-cookie', HOST_COOKIE)
          headers.append('set-cookie', BAD_HOST_COOKIE)
          return new Response('signed in', { headers })
        }
        if (url.pathname === '/whoami') return new Response(`cookie: ${request.headers.get('cookie') ?? '(none)'}`)
        return new Response('not found', { status: 404 })
      },
    })
    base = `http://127.0.0.1:${server.port}`
  })

  afterAll(async () => {
    await Promise.allSettled(browsers.map((b) => b.close()))
    server?.stop(true)
  }, HOOK_TIMEOUT)

  test(
    'a form filled by its label and sent with Enter shows the submitted value, escaped',
    async () => {
      const { page } = await open()
      const value = `<b>Ann</b> & "Bob" 'O'`
      await step(page, 'open the form', () => page.goto(`${base}/`))
      await step(page, 'fill the name', () => page.getByLabel('Your name').fill(value))
      await step(page, 'press Enter', async () => {
        await Promise.all([page.waitForURL(/\/result\?/), page.keyboard.press('Enter')])
      })
      const text = await step(page, 'read the result', () => page.locator('#result').textContent())
      expect(text).toBe(`Hello, ${value}!`)
      expect(await page.locator('#result b').count()).toBe(0)
    },
    PAGE_TIMEOUT,
  )

  test(
    'a failed step saves a full-page screenshot and names it in the error',
    async () => {
      const { page } = await open()
      await page.goto(`${base}/`)
      const error = await step(page, 'find a missing button', () =>
        page.getByRole('button', { name: 'Nope' }).click({ timeout: 500 }),
      ).then(
        () => null,
        (e: unknown) => e as Error,
      )
      expect(error).toBeInstanceOf(Error)
      expect(error!.message).toContain('step "find a missing button" failed at http://127.0.0.1:')
      const file = error!.message.match(/screenshot: (\S+\.png)$/m)?.[1]
      expect(file).toBeString()
      expect(existsSync(file!)).toBe(true)
      expect(readFileSync(file!).subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
      rmSync(file!)

      // screenshot() for the docs writes where it is told, creating the folder.
      const docFile = join(`${file!}.d`, 'docs', 'form.png')
      expect(await screenshot(page, docFile)).toBe(docFile)
      expect(readFileSync(docFile).subarray(1, 4).toString()).toBe('PNG')
      rmSync(`${file!}.d`, { recursive: true })
      // The failures folder is shared by the test process: removed only if nothing else failed into it.
      try {
        rmdirSync(dirname(file!))
      } catch {}
    },
    PAGE_TIMEOUT,
  )

  for (const host of ['127.0.0.1', 'localhost']) {
    test(
      `over plain http on ${host}, Chromium keeps a __Host- Secure HttpOnly SameSite=Strict cookie and sends it back`,
      async () => {
        const { page, context } = await open()
        const origin = `http://${host}:${server.port}`
        await step(page, 'sign in', () => page.goto(`${origin}/login`))
        const cookies = await context.cookies(origin)
        expect(cookies.map((c) => c.name)).toEqual(['__Host-sid'])
        expect(cookies[0]).toMatchObject({
          value: 's3cr3t',
          domain: host,
          path: '/',
          secure: true,
          httpOnly: true,
          sameSite: 'Strict',
          expires: -1,
        })
        await step(page, 'come back', () => page.goto(`${origin}/whoami`))
        expect(await page.locator('body').textContent()).toBe('cookie: __Host-sid=s3cr3t')
        // Not readable by the page's scripts (HttpOnly).
        expect(await page.evaluate<string>('document.cookie')).toBe('')
      },
      PAGE_TIMEOUT,
    )
  }

  test(
    'two openBrowser() calls are two independent people: a cookie of one is unknown to the other',
    async () => {
      const [a, b] = await Promise.all([open(), open()])
      expect(a.profileDir).not.toBe(b.profileDir)
      await a.page.goto(`${base}/login`)
      await b.page.goto(`${base}/whoami`)
      expect(await b.page.locator('body').textContent()).toBe('cookie: (none)')
      expect(await b.context.cookies()).toEqual([])
      expect((await a.context.cookies()).map((c) => c.name)).toEqual(['__Host-sid'])

      await a.close()
      expect(existsSync(a.profileDir)).toBe(false)
      await a.close() // a second close is harmless
    },
    PAGE_TIMEOUT,
  )
})
