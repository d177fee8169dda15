// The systemd units (packaging/systemd): the service, the backup and its timer pass `systemd-analyze verify`
// without a word (a misspelled option is a warning there: the test sees it), the service's hardening scores
// "OK" in `systemd-analyze security`, and the backup's command lines, unescaped as systemd does, write a
// dated file into the backups' directory and delete only the backups older than 14 days. Skipped with a line
// saying why where systemd-analyze is missing, except in CI (CI=true), where it fails instead.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const UNITS = join(import.meta.dir, '..', '..', 'packaging', 'systemd')
const NAMES = ['messaging-api.service', 'messaging-api-backup.service', 'messaging-api-backup.timer']
const BINARY = '/usr/local/bin/messaging-api'

const analyze = Bun.which('systemd-analyze')
const skip = !analyze && process.env.CI !== 'true'
if (skip) console.log('systemd unit tests skipped: systemd-analyze not found (apt-get install systemd)')

/** A unit file's `Key=value` lines of one section, in order. */
function settings(text: string, section: string): [string, string][] {
  const body = text.split(/^\[/m).find((part) => part.startsWith(`${section}]`)) ?? ''
  return body
    .split('\n')
    .slice(1)
    .filter((line) => /^\w+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])
}
const setting = (text: string, section: string, key: string) =>
  settings(text, section)
    .filter(([k]) => k === key)
    .map(([, v]) => v)
/** What systemd makes of a command line's specifiers and dollars: `%%` is `%`, `$$` is `$`. */
const unescape = (line: string) => line.replaceAll('%%', '%').replaceAll('$$', '$')

describe.skipIf(skip)('systemd units', () => {
  let dir = ''
  const text = (name: string) => readFileSync(join(UNITS, name), 'utf8')

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'messaging-units-'))
    // verify checks that ExecStart's program exists: the binary's path points at a stand-in here, the
    // rest of each unit as written.
    writeFileSync(join(dir, 'messaging-api'), '#!/bin/sh\n')
    chmodSync(join(dir, 'messaging-api'), 0o755)
    mkdirSync(join(dir, 'units'))
    for (const name of NAMES) writeFileSync(join(dir, 'units', name), text(name).replaceAll(BINARY, join(dir, 'messaging-api')))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const verify = (names: string[]) => {
    const done = Bun.spawnSync([analyze!, 'verify', ...names.map((name) => join(dir, 'units', name))], { cwd: join(dir, 'units') })
    return { code: done.exitCode, output: done.stdout.toString() + done.stderr.toString() }
  }

  test('systemd-analyze verify: the three units, without a warning', () => {
    expect(verify(NAMES)).toEqual({ code: 0, output: '' })
    // The check sees a mistake: a misspelled option is a warning, a missing program an error.
    const misspelled = join(dir, 'units', 'messaging-api.service')
    writeFileSync(
      misspelled,
      text('messaging-api.service').replaceAll(BINARY, join(dir, 'messaging-api')).replace('PrivateTmp=yes', 'PrivateTemp=yes'),
    )
    expect(verify(['messaging-api.service']).output).toContain("Unknown key 'PrivateTemp' in section [Service]")
    writeFileSync(misspelled, text('messaging-api.service').replaceAll(BINARY, join(dir, 'nowhere')))
    expect(verify(['messaging-api.service'])).toMatchObject({ code: 1, output: expect.stringContaining('is not executable') })
    writeFileSync(misspelled, text('messaging-api.service').replaceAll(BINARY, join(dir, 'messaging-api')))
  })

  test('the service: its own user, DATA_DIR under /var/lib (0700), files 0600, the hardening options, scored OK', () => {
    const unit = text('messaging-api.service')
    expect(setting(unit, 'Service', 'User')).toEqual(['messaging-api'])
    expect(setting(unit, 'Service', 'ExecStart')).toEqual([BINARY])
    expect(setting(unit, 'Service', 'Environment')).toEqual(['DATA_DIR=/var/lib/messaging-api'])
    expect(setting(unit, 'Service', 'EnvironmentFile')).toEqual(['/etc/messaging-api/messaging-api.env'])
    expect(setting(unit, 'Service', 'StateDirectory')).toEqual(['messaging-api'])
    expect(setting(unit, 'Service', 'StateDirectoryMode')).toEqual(['0700'])
    expect(setting(unit, 'Service', 'UMask')).toEqual(['0077'])
    for (const [key, value] of [
      ['NoNewPrivileges', 'yes'],
      ['ProtectSystem', 'strict'],
      ['ProtectHome', 'yes'],
      ['PrivateTmp', 'yes'],
      ['PrivateDevices', 'yes'],
      ['CapabilityBoundingSet', ''],
    ] as const)
      expect({ key, value: setting(unit, 'Service', key) }).toEqual({ key, value: [value] })

    const security = Bun.spawnSync([analyze!, 'security', '--offline=yes', join(dir, 'units', 'messaging-api.service')])
    const overall = /Overall exposure level for messaging-api\.service: ([\d.]+) (\w+)/.exec(security.stdout.toString())
    expect(overall).not.toBeNull()
    expect({ level: overall![2], low: Number(overall![1]) <= 2 }).toEqual({ level: 'OK', low: true })
  })

  test('the backup: the timer starts it daily; its command lines as systemd runs them write a dated backup and delete those older than 14 days', () => {
    const timer = text('messaging-api-backup.timer')
    expect(setting(timer, 'Timer', 'OnCalendar')).toEqual(['daily'])
    expect(setting(timer, 'Timer', 'Persistent')).toEqual(['true'])
    const unit = text('messaging-api-backup.service')
    expect(setting(unit, 'Unit', 'Requisite')).toEqual(['messaging-api.service'])
    expect(setting(unit, 'Service', 'User')).toEqual(['messaging-api'])
    expect(setting(unit, 'Service', 'StateDirectory')).toEqual(['messaging-api-backups'])

    // The binary a stand-in that writes down its arguments, the backups' directory a temporary one.
    const backups = join(dir, 'backups')
    mkdirSync(backups)
    const args = join(dir, 'args')
    writeFileSync(join(dir, 'recorder'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${args}\n`)
    chmodSync(join(dir, 'recorder'), 0o755)
    const local = (line: string) =>
      unescape(line).replaceAll(BINARY, join(dir, 'recorder')).replaceAll('/var/lib/messaging-api-backups', backups)
    const [start] = setting(unit, 'Service', 'ExecStart')
    const shell = /^\/bin\/sh -c '(.*)'$/.exec(start!)
    expect(shell).not.toBeNull()
    const ran = Bun.spawnSync(['/bin/sh', '-c', local(shell![1]!)])
    expect(ran.exitCode).toBe(0)
    const [command, sub, file, ...more] = readFileSync(args, 'utf8').trimEnd().split('\n')
    expect({ command, sub, more }).toEqual({ command: 'admin', sub: 'backup', more: [] })
    expect(file).toMatch(new RegExp(`^${backups}/messaging-\\d{8}T\\d{6}Z\\.backup$`))

    // Retention: a backup of 20 days ago goes, one of 10 days ago and other files stay.
    const day = 86_400
    const now = Date.now() / 1000
    for (const [name, age] of [
      ['messaging-old.backup', 20 * day],
      ['messaging-recent.backup', 10 * day],
      ['notes.txt', 20 * day],
    ] as const) {
      copyFileSync(args, join(backups, name))
      utimesSync(join(backups, name), now - age, now - age)
    }
    const [post] = setting(unit, 'Service', 'ExecStartPost')
    const cleaned = Bun.spawnSync(local(post!).split(' '))
    expect(cleaned.exitCode).toBe(0)
    expect(readdirSync(backups).sort()).toEqual(['messaging-recent.backup', 'notes.txt'])
  })
})
