// The per-address cap of sign-in failures: many e-mails tried from one address lock that address,
// even for a right password, while each e-mail stays under its own limit. (Its own database: the
// lock covers every request of this test process's address.)

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { testApp, type TestApp } from '../helpers/app'
import { dashboardUser, webClient } from '../helpers/web'
import { ADDRESS_FAILURES } from '../../src/modules/users/service'

let t: TestApp
beforeAll(async () => {
  t = await testApp()
})
afterAll(() => t.close())

test(`${ADDRESS_FAILURES} failures from one address over many e-mails lock the address`, async () => {
  await dashboardUser(t, 'real@example.com', 'the right password')
  const browser = webClient(t)
  for (let i = 0; i < ADDRESS_FAILURES - 1; i++) expect((await browser.signIn(`guess${i}@example.com`, 'wrong password')).status).toBe(401)
  expect((await browser.signIn('real@example.com', 'the right password')).status).toBe(303) // still under the cap
  expect((await webClient(t).signIn('last-guess@example.com', 'wrong password')).status).toBe(429)
  const locked = await webClient(t).signIn('real@example.com', 'the right password')
  expect(locked.status).toBe(429)
  expect(locked.text).toContain('Too many failed sign-ins')
}, 180_000) // 51 password checks: a minute was not enough with both CI runs on a slow 2-core machine
