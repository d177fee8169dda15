// Outer ring (real time): the container image is built by podman and its entrypoint runs as a child process under chroot.
// The container image (packaging/container): built by Debian's podman from the compiled binary, FROM scratch,
// into a storage of this test's own. Containers cannot start on these machines, so the image's root filesystem
// is exported (podman create + export) and its entrypoint run under chroot as the image's user, with the
// image's environment (and, with PostgreSQL, the compose file's environment for the api service): ready,
// the admin command line inside it finding the service and its token, one send through the simulator, the
// image's health check, a clean SIGTERM. Each database mode runs in its own CI lane (this file runs in
// both). Needs root (chroot, mounting /proc) and podman: skipped with a line saying why when either is
// missing, except in CI (CI=true), where it fails instead.

import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { copyBinary } from '../helpers/binary'
import { collectOutput, freePort } from '../helpers/child'
import { createPostgresDatabase, usingPostgres } from '../helpers/db'
import { IMAGE_USER } from '../../packaging/container/build-image'

const ROOT = join(import.meta.dir, '..', '..')
const TAG = `localhost/messaging-api-test-${process.pid}:latest`
const DATA_DIR = '/var/lib/messaging-api'

/** Why these tests cannot run here, or undefined. In CI nothing is a reason: they run, and fail if they cannot. */
function skipReason(): string | undefined {
  if (process.env.CI === 'true') return undefined
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return 'not root: chroot and mounting /proc need root'
  if (!Bun.which('podman')) return 'podman not found (apt-get install podman)'
  return undefined
}
const reason = skipReason()
if (reason) console.log(`container image tests skipped: ${reason}`)

/** Runs a command to its end: exit code and output; throws with the output when `check` and it failed. */
async function run(cmd: string[], env: Record<string, string | undefined> = process.env, check = true) {
  const proc = Bun.spawn(cmd, { env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if (check && code !== 0) throw new Error(`${cmd.join(' ')} exited ${code}:\n${stdout}\n${stderr}`)
  return { code, stdout, stderr }
}

/** `${NAME}`, `${NAME:-default}` and `${NAME:?message}` as compose interpolates them. */
function interpolate(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind?: string, rest?: string) => {
    const value = values[name]
    if (value) return value
    if (kind === '-') return rest!
    throw new Error(`compose.yaml needs ${name}: ${rest ?? 'unset'}`)
  })
}

describe.skipIf(Boolean(reason))('container image', () => {
  let dir = ''
  let rootfs = ''
  let podmanEnv: Record<string, string | undefined> = {}
  let image: { Config: Record<string, any>; Healthcheck?: { Test: string[] } }
  const mounted: string[] = []
  const children: Subprocess[] = []
  let dropDatabase = async () => {}

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'messaging-image-'))
    // A storage of its own: nothing of this test mixes with other images on the machine, and the CI lanes
    // (one per database mode) build at the same time without meeting.
    writeFileSync(join(dir, 'storage.conf'), `[storage]\ndriver = "overlay"\ngraphroot = "${dir}/storage"\nrunroot = "${dir}/run"\n`)
    podmanEnv = { ...process.env, CONTAINERS_STORAGE_CONF: join(dir, 'storage.conf') }

    // The binary, compiled as `bun run build` does; the image is built from it, not compiled again inside.
    const binary = join(dir, 'messaging-api')
    await copyBinary(binary)
    const build = await run(
      [
        process.execPath,
        join(ROOT, 'packaging/container/build-image.ts'),
        '--binary',
        binary,
        '--context',
        join(dir, 'context'),
        '--tag',
        TAG,
        '--builder',
        'podman',
      ],
      podmanEnv,
    )
    expect(build.stdout).toContain('podman build --format docker')
    image = JSON.parse((await run(['podman', 'image', 'inspect', TAG], podmanEnv)).stdout)[0]

    // Its root filesystem, as a container would get it, unpacked; /proc and /dev as a runtime mounts them.
    const container = (await run(['podman', 'create', '--no-healthcheck', TAG], podmanEnv)).stdout.trim()
    await run(['podman', 'export', '--output', join(dir, 'rootfs.tar'), container], podmanEnv)
    await run(['podman', 'rm', container], podmanEnv)
    rootfs = join(dir, 'rootfs')
    mkdirSync(rootfs)
    await run(['tar', '-xf', join(dir, 'rootfs.tar'), '-C', rootfs, '--same-owner', '--same-permissions'])
    rmSync(join(dir, 'rootfs.tar'))
    for (const [path, how] of [
      ['proc', ['-t', 'proc', 'proc']],
      ['dev', ['--bind', '/dev']],
    ] as const) {
      mkdirSync(join(rootfs, path), { recursive: true })
      await run(['mount', ...how, join(rootfs, path)])
      mounted.push(join(rootfs, path))
    }
  }, 240_000)

  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await Promise.all(children.map((child) => child.exited))
    await dropDatabase()
    // Unmounted before anything is removed; rm never crosses into a mount that is left (--one-file-system).
    for (const path of mounted.reverse()) {
      const done = await run(['umount', path], process.env, false)
      if (done.code !== 0) await run(['umount', '--lazy', path], process.env, false)
    }
    if (dir) {
      // Not `podman system reset`: it would also remove the machine's network configuration, shared by all.
      await run(['podman', 'rmi', '--all', '--force'], podmanEnv, false)
      await run(['rm', '-rf', '--one-file-system', dir], process.env, false)
    }
  }, 60_000)

  /** The image's environment (`KEY=value` lines), as a container starts with it. */
  const imageEnv = () =>
    Object.fromEntries((image.Config.Env as string[]).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]))
  /** A command inside the image's root filesystem, as the image's user, with `env` only. */
  const inImage = (cmd: string[]) => [Bun.which('chroot')!, `--userspec=${image.Config.User}`, rootfs, ...cmd]

  test("the image: FROM scratch with the binary alone, not root, DATA_DIR a volume of its user's, a health check asking /readyz", () => {
    expect(image.Config.User).toBe(`${IMAGE_USER.uid}:${IMAGE_USER.uid}`)
    expect(image.Config.Entrypoint).toEqual(['/usr/local/bin/messaging-api'])
    expect(Object.keys(image.Config.Volumes)).toEqual([DATA_DIR])
    expect(Object.keys(image.Config.ExposedPorts)).toEqual(['8080/tcp'])
    expect(imageEnv()).toMatchObject({ DATA_DIR, HOST: '0.0.0.0', PORT: '8080' })
    expect(image.Healthcheck?.Test).toEqual(['CMD', '/usr/local/bin/messaging-api', 'admin', 'ready', '--timeout', '5'])

    // No shell, no package manager: the binary, glibc and the few files it needs.
    expect(existsSync(join(rootfs, 'bin/sh'))).toBe(false)
    expect(readdirSync(rootfs).sort()).toEqual(['dev', 'etc', 'lib', 'lib64', 'proc', 'tmp', 'usr', 'var'])
    expect(readFileSync(join(rootfs, 'etc/passwd'), 'utf8')).toContain(`messaging-api:x:${IMAGE_USER.uid}:${IMAGE_USER.uid}:`)
    // DATA_DIR belongs to the service's user alone; what holds it stays root's.
    const data = statSync(join(rootfs, DATA_DIR))
    expect({ uid: data.uid, gid: data.gid, mode: data.mode & 0o777 }).toEqual({ uid: IMAGE_USER.uid, gid: IMAGE_USER.uid, mode: 0o700 })
    expect(statSync(join(rootfs, 'var/lib')).uid).toBe(0)
    expect(statSync(join(rootfs, 'usr/local/bin/messaging-api')).uid).toBe(0)
    expect(statSync(join(rootfs, 'tmp')).mode & 0o7777).toBe(0o1777)
  })

  test(`its entrypoint, run from the exported root filesystem on ${usingPostgres() ? "PostgreSQL with the compose file's environment" : 'the embedded database in its volume'}: ready, the admin command line inside, a send, the health check, SIGTERM`, async () => {
    const port = freePort()
    // As `podman run -e PORT=... -e HOST=...` would: loopback only, a port free here.
    const env: Record<string, string> = { ...imageEnv(), PORT: String(port), HOST: '127.0.0.1' }
    if (usingPostgres()) {
      // The compose file's api service, with a .env's values; its database host (db) becomes this machine's.
      const compose = Bun.YAML.parse(readFileSync(join(ROOT, 'packaging/container/compose.yaml'), 'utf8')) as any
      expect(compose.services.api.image).toBe('messaging-api:latest')
      expect(compose.services.api.volumes).toEqual([`data:${DATA_DIR}`])
      const values = {
        POSTGRES_PASSWORD: 'compose-password',
        ADMIN_TOKEN: 'container-test-admin-token-0123456789',
        SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
      }
      const api = Object.fromEntries(
        Object.entries(compose.services.api.environment as Record<string, string>).map(([name, value]) => [
          name,
          interpolate(String(value), values),
        ]),
      )
      expect(api.DATABASE_URL).toBe('postgres://messaging:compose-password@db:5432/messaging')
      const database = await createPostgresDatabase()
      dropDatabase = database.drop
      Object.assign(env, api, { DATABASE_URL: database.url })
    }

    const service = Bun.spawn(inImage(image.Config.Entrypoint), { env, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
    children.push(service)
    const output = collectOutput(service as any)
    try {
      // Ready within the health check's start period (a first start: initdb and every migration).
      const deadline = Date.now() + 90_000
      for (;;) {
        if (service.exitCode !== null) throw new Error(`exited ${service.exitCode} before ready`)
        const status = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(2_000) }).then(
          (response) => response.status,
          () => 0,
        )
        if (status === 200) break
        if (Date.now() > deadline) throw new Error('not ready within 90 s')
        await Bun.sleep(250)
      }

      // The image's health check, as the runtime runs it: inside, with the image's environment.
      const health = await run(inImage(image.Healthcheck!.Test.slice(1)), env, false)
      expect(health).toEqual({ code: 0, stdout: `ready: http://127.0.0.1:${port}/readyz answered 200\n`, stderr: '' })

      // `podman exec <container> messaging-api admin ...`: the command line inside finds the service and the
      // admin token (ADMIN_TOKEN with compose; embedded without it, the one generated into the volume).
      const admin = async (...args: string[]) => {
        const done = await run(inImage(['/usr/local/bin/messaging-api', 'admin', ...args, '--json']), env, false)
        expect({ args, code: done.code, stderr: done.stderr }).toEqual({ args, code: 0, stderr: '' })
        return JSON.parse(done.stdout)
      }
      const account = await admin('account', 'create', 'container', '--balance', '1000')
      const key = await admin('key', 'create', String(account.id), 'container')
      const sent = await fetch(`http://127.0.0.1:${port}/api/v1/messages/send`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ to: '081234567890', body: 'from the image' }),
      })
      expect(sent.status).toBe(200)
      expect(((await sent.json()) as any).data).toMatchObject({ to: '+6281234567890', status: 'sent' })

      service.kill('SIGTERM')
      expect(await service.exited).toBe(0)
      const unhealthy = await run(inImage(image.Healthcheck!.Test.slice(1)), env, false)
      expect(unhealthy.code).toBe(1)
      expect(unhealthy.stderr).toContain('connection refused')
    } catch (error) {
      console.error(`the image's service printed:\n${output()}`)
      throw error
    }

    // What the service left in its volume, all its user's; secrets private to it.
    const volume = join(rootfs, DATA_DIR)
    const left = readdirSync(volume).sort()
    if (usingPostgres()) {
      expect(left).toEqual([]) // ADMIN_TOKEN and SECRETS_KEY set: nothing to keep
    } else {
      expect(left).toEqual(['admin-token', 'pgdata', 'secrets-key'])
      for (const name of ['admin-token', 'secrets-key']) {
        const file = statSync(join(volume, name))
        expect({ name, uid: file.uid, mode: file.mode & 0o777 }).toEqual({ name, uid: IMAGE_USER.uid, mode: 0o600 })
      }
      expect(statSync(join(volume, 'pgdata')).uid).toBe(IMAGE_USER.uid)
    }
  }, 180_000)
})
