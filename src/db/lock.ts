// The embedded database belongs to one process. PGlite keeps the database in its own memory and
// writes it back to DATA_DIR, so a second process on the same directory would silently overwrite
// the first one's writes. DATA_DIR/lock names the process that holds it:
// - It appears complete or not at all: written under a private name, then hard-linked into place.
//   A link fails when the name exists, so of any number of processes starting at once exactly one wins.
// - It is removed on close (and on exit). One left by a kill -9 is stale once its process is gone:
//   the pid no longer runs, is a zombie, or (Linux) now belongs to a process that started at another
//   moment or in another boot. Elsewhere (macOS) a reused pid makes the lock look held, and the
//   refusal names the pid so the operator can see it is not ours.
// - A lock written on another host (a shared volume, another container) cannot be checked from here:
//   it is treated as held, and the refusal says which file to delete if that host no longer runs.

import { randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, join, resolve } from 'node:path'

const LOCK_FILE = 'lock'

type Holder = {
  pid: number
  host: string
  since: string
  /** Linux: the kernel's boot id and the process start time in clock ticks since boot. */
  boot: string | null
  start: string | null
  /** Unique per acquisition: what a stale-lock breaker compares. */
  token: string
}

/** The embedded database of DATA_DIR is held by another process (or cannot be taken safely). */
export class DataDirLockedError extends Error {}

type DataDirLock = { release(): void }

const held = new Map<string, string>() // lock file → our token

/** Takes DATA_DIR's lock or throws DataDirLockedError with one line saying who holds it and what to do. */
export function lockDataDir(dataDir: string): DataDirLock {
  const dir = resolve(dataDir)
  const file = join(dir, LOCK_FILE)
  if (held.has(file)) throw new DataDirLockedError(`DATA_DIR ${dir} is already open in this process`)
  mkdirSync(dir, { recursive: true })
  const me: Holder = {
    pid: process.pid,
    host: hostname(),
    since: new Date().toISOString(),
    boot: bootId(),
    start: processStat(process.pid)?.start ?? null,
    token: randomBytes(12).toString('hex'),
  }
  const aside = `${file}.${me.token}`
  writeFileSync(aside, `${JSON.stringify(me)}\n`, { flag: 'wx' })
  try {
    // Each pass takes the lock, refuses, or removes a stale one; the deadline only guards against a livelock.
    const deadline = Date.now() + 5_000
    for (;;) {
      try {
        linkSync(aside, file)
        break
      } catch (error) {
        if (errorCode(error) !== 'EEXIST') throw error
      }
      const holder = readHolder(file)
      if (holder === undefined) continue // released in between: try again
      if (!isStale(holder)) throw new DataDirLockedError(heldMessage(dir, file, holder))
      if (Date.now() > deadline) throw new DataDirLockedError(`DATA_DIR ${dir}: could not take its lock ${file}; try again`)
      breakStale(dir, file, holder)
    }
  } finally {
    unlinkSync(aside)
  }
  held.set(file, me.token)
  ensureReleaseOnExit()
  return { release: () => release(file) }
}

function release(file: string): void {
  const token = held.get(file)
  if (token === undefined) return
  held.delete(file)
  try {
    if (readHolder(file)?.token === token) unlinkSync(file)
  } catch {
    // an unreadable lock file is left alone: it is not ours to remove
  }
}

let exitHook = false
function ensureReleaseOnExit(): void {
  if (exitHook) return
  exitHook = true
  process.on('exit', () => {
    for (const file of [...held.keys()]) release(file)
  })
}

/**
 * Removes the stale lock `holder` and nothing else. Only the process that creates the marker
 * `lock.break-<token>` may remove the lock carrying that token, and it checks the token again first;
 * without this, two processes finding the same stale lock could remove each other's new one.
 */
function breakStale(dir: string, file: string, holder: Holder): void {
  const marker = `${file}.break-${holder.token}`
  try {
    writeFileSync(marker, `${process.pid}\n`, { flag: 'wx' })
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error
    // Another process is removing it right now (a matter of microseconds), unless that one died
    // in the middle: then only a person can tell that nothing else is about to use the lock.
    if (Date.now() - markerTime(marker) > 10_000) {
      throw new DataDirLockedError(
        `DATA_DIR ${dir}: a start was interrupted while clearing a stale lock; if no other process uses this DATA_DIR, delete ${file} and ${marker}`,
      )
    }
    Bun.sleepSync(10)
    return
  }
  try {
    if (readHolder(file)?.token === holder.token) unlinkSync(file)
  } finally {
    unlinkSync(marker)
  }
}

/** When the marker was made; now if it is already gone (its breaker finished in between). */
function markerTime(marker: string): number {
  try {
    return statSync(marker).mtimeMs
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return Date.now()
    throw error
  }
}

function readHolder(file: string): Holder | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined
    throw error
  }
  try {
    const holder = JSON.parse(text) as Holder
    if (Number.isSafeInteger(holder.pid) && holder.pid > 0 && typeof holder.token === 'string') return holder
  } catch {
    // not JSON: reported below
  }
  throw new DataDirLockedError(
    `DATA_DIR ${dirname(file)}: its lock file ${file} is not one this service wrote; if no other process uses this DATA_DIR, delete it`,
  )
}

function isStale(holder: Holder): boolean {
  if (holder.host !== hostname()) return false
  const boot = bootId()
  if (boot !== null && holder.boot !== null && boot !== holder.boot) return true // written before a reboot
  // Not in `held`, so a process before us had our pid: a container restarted as pid 1, for example.
  if (holder.pid === process.pid) return true
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    if (errorCode(error) === 'ESRCH') return true
    // EPERM: the pid runs under another user, so it exists
  }
  const stat = processStat(holder.pid)
  if (stat === undefined) return false // not Linux, or /proc hides other users' processes: it runs
  if (stat.state === 'Z' || stat.state === 'X') return true // dead, waiting for its parent
  return holder.start !== null && stat.start !== holder.start
}

function heldMessage(dir: string, file: string, holder: Holder): string {
  const where = holder.host === hostname() ? '' : ` on host ${holder.host}`
  const gone = where ? `; if that host no longer runs it, delete ${file}` : ''
  return (
    `DATA_DIR ${dir} is in use by process ${holder.pid}${where} (started ${holder.since}): stop that process, ` +
    `or give this one another DATA_DIR, or set DATABASE_URL to share a PostgreSQL database${gone}`
  )
}

function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return null
  }
}

/** Linux: a process's state letter and start time, from /proc/<pid>/stat; undefined elsewhere or if gone. */
function processStat(pid: number): { state: string; start: string } | undefined {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return undefined
  }
  // "pid (command) state ppid ...": the command may hold spaces and parentheses, so split after the last ")".
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ')
  const [state, start] = [fields[0], fields[19]]
  return state && start ? { state, start } : undefined
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code
}
