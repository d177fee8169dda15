// The compiled binary for the outer ring's process tests (tests/binary.outer.test.ts, the container image
// test), compiled as `bun run build` does. Compiling takes tens of seconds of both cores, so it happens
// once: `.ci/run` compiles it before its lanes and names it in MESSAGING_API_BINARY; without that
// variable it is compiled once per test process, on first use.

import { copyFileSync, chmodSync, existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

const ROOT = resolve(import.meta.dir, '../..')
let compiling: Promise<string> | undefined

/** The path of a compiled binary of this checkout (not to be changed: copy it with `copyBinary`). */
export function compiledBinary(): Promise<string> {
  const given = process.env.MESSAGING_API_BINARY
  if (given) {
    if (!existsSync(given)) return Promise.reject(new Error(`MESSAGING_API_BINARY names ${given}, which does not exist`))
    return Promise.resolve(given)
  }
  compiling ??= compile()
  return compiling
}

/** Copies the compiled binary to `target`, executable. */
export async function copyBinary(target: string): Promise<void> {
  copyFileSync(await compiledBinary(), target)
  chmodSync(target, 0o755)
}

async function compile(): Promise<string> {
  const outfile = join(mkdtempSync(join(tmpdir(), 'messaging-build-')), 'messaging-api')
  const built = Bun.spawn([process.execPath, 'build', '--compile', '--minify', 'src/main.ts', '--outfile', outfile], {
    cwd: ROOT,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [code, out, err] = await Promise.all([built.exited, new Response(built.stdout).text(), new Response(built.stderr).text()])
  if (code !== 0) throw new Error(`bun build --compile failed (${code}):\n${out}\n${err}`)
  return outfile
}
