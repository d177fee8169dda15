// Builds the container image from the compiled binary (`bun run image`): assembles the build context of
// packaging/container/Containerfile (FROM scratch) and runs the builder on it. The context:
//   Containerfile
//   rootfs/usr/local/bin/messaging-api   the binary (default dist/messaging-api: `bun run build` first)
//   rootfs/<lib paths>                   the C libraries `ldd` names for it (glibc's), at the same paths
//   rootfs/etc/passwd, rootfs/etc/group  root and messaging-api (10001), so tools show names, not numbers
//   rootfs/tmp                           empty, 1777
//   data/messaging-api/                  empty, 0700: DATA_DIR, copied with the service's user as its owner
// Usage: bun packaging/container/build-image.ts [--binary FILE] [--context DIR] [--tag NAME]... [--builder
// podman|buildah|docker] [--context-only]. Tags default to messaging-api:<version> and messaging-api:latest.

import { chmodSync, copyFileSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { version } from '../../package.json'

const ROOT = resolve(import.meta.dir, '..', '..')
export const IMAGE_USER = { uid: 10001, name: 'messaging-api' }

/** The shared libraries the dynamic loader needs for `binary` (its interpreter included), as absolute paths. */
export function sharedLibraries(binary: string): string[] {
  const ldd = Bun.spawnSync(['ldd', binary], { stdout: 'pipe', stderr: 'pipe' })
  const out = ldd.stdout.toString()
  if (ldd.exitCode !== 0) {
    if (/not a dynamic executable/.test(out + ldd.stderr.toString())) return [] // a static binary needs none
    throw new Error(`ldd ${binary} failed: ${ldd.stderr.toString().trim()}`)
  }
  // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)";
  // linux-vdso has no file.
  const paths = [...out.matchAll(/(?:=>\s+)?(\/\S+)\s+\(0x[0-9a-f]+\)/g)].map((m) => m[1]!)
  const missing = out.split('\n').filter((line) => line.includes('not found'))
  if (missing.length) throw new Error(`ldd ${binary}: libraries not found:\n${missing.join('\n')}`)
  return [...new Set(paths)]
}

/** Writes the build context into `context` (emptied first): the Containerfile, rootfs/ and data/. */
export function assembleContext(binary: string, context: string): void {
  rmSync(context, { recursive: true, force: true })
  const rootfs = join(context, 'rootfs')
  const place = (from: string, path: string, mode: number) => {
    const to = join(rootfs, path)
    mkdirSync(dirname(to), { recursive: true })
    copyFileSync(realpathSync(from), to) // a library's symlink becomes the file it names, at the link's path
    chmodSync(to, mode)
  }
  place(binary, 'usr/local/bin/messaging-api', 0o755)
  for (const library of sharedLibraries(binary)) place(library, library, 0o755)
  mkdirSync(join(rootfs, 'etc'), { recursive: true })
  const { uid, name } = IMAGE_USER
  writeFileSync(
    join(rootfs, 'etc/passwd'),
    `root:x:0:0:root:/root:/sbin/nologin\n${name}:x:${uid}:${uid}:${name}:/var/lib/${name}:/sbin/nologin\n`,
  )
  writeFileSync(join(rootfs, 'etc/group'), `root:x:0:\n${name}:x:${uid}:\n`)
  mkdirSync(join(rootfs, 'tmp'))
  chmodSync(join(rootfs, 'tmp'), 0o1777)
  mkdirSync(join(rootfs, 'var/lib'), { recursive: true }) // root's, so that only DATA_DIR below is the user's
  // Copied into /var/lib with the user as owner: the directory itself, so its mode (0700) is kept too.
  mkdirSync(join(context, 'data/messaging-api'), { recursive: true })
  chmodSync(join(context, 'data/messaging-api'), 0o700)
  copyFileSync(join(import.meta.dir, 'Containerfile'), join(context, 'Containerfile'))
}

/** The build command of a builder for the context, with the tags. */
export function buildCommand(builder: string, context: string, tags: string[]): string[] {
  const common = [...tags.flatMap((tag) => ['--tag', tag]), '--build-arg', `VERSION=${version}`, '--file', join(context, 'Containerfile')]
  // podman and buildah write OCI images by default, which drop HEALTHCHECK: the Docker format keeps it.
  if (builder === 'docker') return ['docker', 'build', ...common, context]
  if (builder === 'buildah') return ['buildah', 'bud', '--format', 'docker', ...common, context]
  return ['podman', 'build', '--format', 'docker', ...common, context]
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      binary: { type: 'string', default: join(ROOT, 'dist/messaging-api') },
      context: { type: 'string', default: join(ROOT, 'dist/image') },
      tag: { type: 'string', multiple: true },
      builder: { type: 'string' },
      'context-only': { type: 'boolean', default: false },
    },
  })
  if (!(await Bun.file(values.binary).exists())) {
    console.error(`build-image: ${values.binary} not found: compile the binary first (bun run build), or name it with --binary`)
    process.exit(1)
  }
  assembleContext(values.binary, values.context)
  console.log(`build context in ${values.context}`)
  if (values['context-only']) process.exit(0)
  const builder = values.builder ?? ['podman', 'buildah', 'docker'].find((name) => Bun.which(name))
  if (!builder) {
    console.error('build-image: no podman, buildah or docker found (Debian: apt-get install podman); the context is ready for one')
    process.exit(1)
  }
  const command = buildCommand(builder, values.context, values.tag ?? [`messaging-api:${version}`, 'messaging-api:latest'])
  console.log(`$ ${command.join(' ')}`)
  const build = Bun.spawn(command, { stdin: 'ignore', stdout: 'inherit', stderr: 'inherit' })
  process.exit(await build.exited)
}
